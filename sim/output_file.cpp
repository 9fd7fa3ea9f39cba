#include "sim/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

namespace rdmasim::sim {

namespace {

// All of `text` to `fd`; 0 or the errno.
int write_all(int fd, std::string_view text) {
    for (std::size_t done = 0; done < text.size();) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return n < 0 ? errno : EIO;
        done += static_cast<std::size_t>(n);
    }
    return 0;
}

Error failed(std::string_view what, const std::string& path, std::string_view doing, int err) {
    return make_error(err, fmt::format("{} {}: {}: {}", what, path, doing, std::strerror(err)));
}

Result<void> write_in_place(std::string_view what, const std::string& path, std::string_view text) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return failed(what, path, "cannot open it", errno);
    const int err = write_all(fd, text);
    const int close_err = ::close(fd) != 0 ? errno : 0;
    if (err != 0 || close_err != 0) return failed(what, path, "cannot write", err != 0 ? err : close_err);
    return {};
}

Result<void> replace_atomically(std::string_view what, const std::string& path, std::string_view text) {
    const std::string tmp = fmt::format("{}.tmp{}", path, ::getpid());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        const int err = errno;
        return make_error(err, fmt::format("{} {}: cannot create {}: {}", what, path, tmp, std::strerror(err)));
    }
    int err = write_all(fd, text);
    if (err == 0 && ::fsync(fd) != 0) err = errno;
    if (::close(fd) != 0 && err == 0) err = errno;
    const char* doing = "cannot write";
    if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) {
        err = errno;
        doing = "cannot rename the temporary file over it";
    }
    if (err != 0) {
        ::unlink(tmp.c_str());
        return failed(what, path, doing, err);
    }
    return {};
}

} // namespace

Result<void> write_output_file(std::string_view what, const std::string& path, std::string_view text) {
    if (path == "-") {
        // Through stdio, after what the program or the tool printed there.
        const bool ok = std::fwrite(text.data(), 1, text.size(), stdout) == text.size();
        const int err = errno;
        if (std::fflush(stdout) != 0 || !ok) return failed(what, "-", "cannot write to standard output", ok ? errno : err);
        return {};
    }
    struct stat st{};
    if (::stat(path.c_str(), &st) != 0) {
        if (errno != ENOENT) return failed(what, path, "cannot examine it", errno);
        return replace_atomically(what, path, text);
    }
    if (S_ISREG(st.st_mode)) return replace_atomically(what, path, text);
    if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) return write_in_place(what, path, text);
    return make_error(EINVAL, fmt::format("{} {}: neither a regular file, a FIFO nor a character device; "
                                          "not written", what, path));
}

} // namespace rdmasim::sim
