#include "net/socket_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace rdmasim::net {

std::string socket_directory(const std::string& socket_path) {
    const auto slash = socket_path.find_last_of('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return socket_path.substr(0, slash);
}

Result<void> check_socket_directory(const std::string& dir) {
    struct stat st{};
    if (::stat(dir.c_str(), &st) != 0) {
        const int err = errno;
        return make_error(err, fmt::format("socket directory {}: {}", dir, std::strerror(err)));
    }
    if (!S_ISDIR(st.st_mode)) return make_error(ENOTDIR, fmt::format("socket directory {}: not a directory", dir));
    const uid_t me = ::geteuid();
    if (st.st_uid != me && st.st_uid != 0)
        return make_error(EPERM, fmt::format("socket directory {} is owned by uid {}, not by you (uid {}): "
                                             "refused, its owner could plug into the wire; use a directory "
                                             "of your own (mktemp -d)", dir, st.st_uid, me));
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
        return make_error(EPERM, fmt::format("socket directory {} is writable by {} (mode {:04o}): refused, "
                                             "they could plug into the wire; use a directory only you can "
                                             "write (mktemp -d)", dir,
                                             (st.st_mode & S_IWOTH) != 0 ? "others" : "its group",
                                             st.st_mode & 07777));
    return {};
}

} // namespace rdmasim::net
