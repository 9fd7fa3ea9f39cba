// A unique directory under the system temp directory (mode 0700), removed
// with its contents when the test ends: a home for wire sockets.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

namespace rdmasim::net::test {

class TempDir {
public:
    TempDir() {
        static std::atomic<unsigned> counter{0};
        path_ = std::filesystem::temp_directory_path() /
                ("rdmasim-dir-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        std::filesystem::create_directory(path_);
        std::filesystem::permissions(path_, std::filesystem::perms::owner_all);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    // `name` inside the directory.
    [[nodiscard]] std::string operator/(const std::string& name) const { return (path_ / name).string(); }

private:
    std::filesystem::path path_;
};

} // namespace rdmasim::net::test
