#include "tools/mount_graft.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>

namespace rdmasim::tools {

namespace {

// The error of a failed call: "CALL PATH: errno text", with errno as its code.
Error failed(std::string_view call, const std::string& path) {
    const int err = errno;
    return make_error(err, fmt::format("{} {}: {}", call, path, std::strerror(err)));
}

Result<void> mount_tmpfs(const std::string& dir, mode_t mode, MountUndo& undo) {
    const std::string options = fmt::format("mode={:o}", mode & 07777);
    if (::mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0)
        return failed("mount(tmpfs)", dir);
    undo.add(dir);
    return {};
}

Result<void> bind_tree(const std::string& source, const std::string& target) {
    if (::mount(source.c_str(), target.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
        return failed("mount(MS_BIND|MS_REC) " + source, target);
    return {};
}

// `name` of `stage` (the original tree) made again in `dir`.
Result<void> copy_entry(const std::string& stage, const std::string& dir, const std::string& name) {
    const std::string from = stage + "/" + name, to = dir + "/" + name;
    struct stat st {};
    if (::lstat(from.c_str(), &st) != 0) // gone since readdir (udev): nothing to copy
        return errno == ENOENT ? Result<void>{} : failed("lstat", from);
    if (S_ISLNK(st.st_mode)) {
        std::string target(PATH_MAX, '\0');
        const ssize_t n = ::readlink(from.c_str(), target.data(), target.size());
        if (n < 0) return failed("readlink", from);
        target.resize(static_cast<std::size_t>(n));
        if (::symlink(target.c_str(), to.c_str()) != 0) return failed("symlink", to);
        return {};
    }
    if (S_ISDIR(st.st_mode)) {
        if (::mkdir(to.c_str(), st.st_mode & 07777) != 0) return failed("mkdir", to);
        return bind_tree(from, to);
    }
    const int fd = ::open(to.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0) return failed("open(O_CREAT)", to);
    ::close(fd);
    return bind_tree(from, to);
}

// Every entry of `stage` made again in `dir`.
Result<void> copy_entries(const std::string& stage, const std::string& dir) {
    DIR* d = ::opendir(stage.c_str());
    if (d == nullptr) return failed("opendir", stage);
    std::vector<std::string> names;
    while (const dirent* e = ::readdir(d))
        if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
            names.emplace_back(e->d_name);
    ::closedir(d);
    std::sort(names.begin(), names.end());
    for (const std::string& name : names)
        if (auto r = copy_entry(stage, dir, name); !r) return r;
    return {};
}

// The stage: the original tree, attached (move_mount) below the new tmpfs so
// that ordinary bind mounts can take its entries; detached once they have.
constexpr char kStage[] = ".rdmasim-graft";

Result<void> graft_from(int tree, const std::string& dir) {
    const std::string stage = dir + "/" + kStage;
    if (::mkdir(stage.c_str(), 0700) != 0) return failed("mkdir", stage);
    if (::move_mount(tree, "", AT_FDCWD, stage.c_str(), MOVE_MOUNT_F_EMPTY_PATH) != 0)
        return failed("move_mount", stage);
    auto copied = copy_entries(stage, dir);
    if (::umount2(stage.c_str(), MNT_DETACH) != 0 && copied)
        copied = failed("umount2(MNT_DETACH)", stage);
    if (::rmdir(stage.c_str()) != 0 && copied) copied = failed("rmdir", stage);
    return copied;
}

} // namespace

void MountUndo::undo() noexcept {
    for (auto it = mounts_.rbegin(); it != mounts_.rend(); ++it)
        (void)::umount2(it->c_str(), MNT_DETACH);
    mounts_.clear();
}

Result<void> graft_directory(const std::string& dir, MountUndo& undo) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) return failed("stat", dir);
    const int tree =
        ::open_tree(AT_FDCWD, dir.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
    if (tree < 0) return failed("open_tree(OPEN_TREE_CLONE|AT_RECURSIVE)", dir);
    auto r = mount_tmpfs(dir, st.st_mode, undo);
    if (r) r = graft_from(tree, dir);
    ::close(tree);
    return r;
}

Result<void> make_tmpfs_dirs(const std::string& dir, const std::vector<std::string>& names,
                             MountUndo& undo) {
    bool grafted = false;
    for (const std::string& name : names) {
        const std::string path = dir + "/" + name;
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0) {
            if (errno != ENOENT) return failed("stat", path);
            if (!grafted)
                if (auto r = graft_directory(dir, undo); !r) return r;
            grafted = true;
            if (::mkdir(path.c_str(), 0755) != 0) return failed("mkdir", path);
        } else if (!S_ISDIR(st.st_mode)) {
            errno = ENOTDIR;
            return failed("stat", path);
        }
        if (auto r = mount_tmpfs(path, 0755, undo); !r) return r;
    }
    return {};
}

Result<void> bind_file(const std::string& source, const std::string& target) {
    const int fd = ::open(target.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0) return failed("open(O_CREAT)", target);
    ::close(fd);
    if (::mount(source.c_str(), target.c_str(), nullptr, MS_BIND, nullptr) != 0)
        return failed("mount(MS_BIND) " + source, target);
    return {};
}

Result<void> remount_read_only(const std::string& dir) {
    if (::mount(nullptr, dir.c_str(), nullptr,
                MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr) != 0)
        return failed("mount(MS_REMOUNT|MS_RDONLY)", dir);
    return {};
}

} // namespace rdmasim::tools
