// One per-process scratch file for fuzz targets whose code under test reads
// files (a TOML configuration, a capture): rewritten for every input,
// removed at normal exit.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace rdmasim::fuzz {

class ScratchFile {
public:
    // $TMPDIR (or /tmp) / <stem>.<pid><suffix>
    ScratchFile(const char* stem, const char* suffix) {
        const char* dir = std::getenv("TMPDIR");
        path_ = std::string(dir && *dir ? dir : "/tmp") + "/" + stem + "." +
                std::to_string(::getpid()) + suffix;
    }
    ~ScratchFile() { std::remove(path_.c_str()); }
    ScratchFile(const ScratchFile&) = delete;
    ScratchFile& operator=(const ScratchFile&) = delete;

    // Replaces the file's content with the input; false if it could not.
    bool write(const std::uint8_t* data, std::size_t size) const {
        std::FILE* f = std::fopen(path_.c_str(), "wb");
        if (f == nullptr) return false;
        const bool ok = std::fwrite(data, 1, size, f) == size;
        return std::fclose(f) == 0 && ok;
    }
    [[nodiscard]] const std::string& path() const noexcept { return path_; }

private:
    std::string path_;
};

} // namespace rdmasim::fuzz
