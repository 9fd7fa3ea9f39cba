// A unique path under the system temp directory, removed when the test ends.
#pragma once

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace rdmasim::net::test {

class TempPath {
public:
    explicit TempPath(const std::string& suffix) {
        static std::atomic<unsigned> counter{0};
        path_ =
            std::filesystem::temp_directory_path() / ("rdmasim-net-" + std::to_string(::getpid()) +
                                                      "-" + std::to_string(counter++) + suffix);
    }
    ~TempPath() {
        std::error_code ec;
        std::filesystem::remove(path_, ec);
    }
    TempPath(const TempPath&) = delete;
    TempPath& operator=(const TempPath&) = delete;

    [[nodiscard]] std::string str() const { return path_.string(); }

    void write(const std::vector<std::uint8_t>& bytes) const {
        std::ofstream out(path_, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(bytes.data()),
                  static_cast<std::streamsize>(bytes.size()));
    }
    [[nodiscard]] std::vector<std::uint8_t> read() const {
        std::ifstream in(path_, std::ios::binary);
        return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    }

private:
    std::filesystem::path path_;
};

} // namespace rdmasim::net::test
