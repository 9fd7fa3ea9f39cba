// Mounts for `rdmasim run`'s private mount namespace (tools/README.md,
// "Device nodes"): fresh directories in places the host must not change.
// Call only inside a private mount namespace whose propagation is private.
// Every error names the call, the path and errno's text; its code is errno.
#pragma once

#include <string>
#include <vector>

#include "net/result.hpp"

namespace rdmasim::tools {

// The top-level mounts made so far, detached in reverse order by undo():
// every mount below them goes along, and the directories they covered show
// again as they were.
class MountUndo {
public:
    void add(std::string path) { mounts_.push_back(std::move(path)); }
    void undo() noexcept;

private:
    std::vector<std::string> mounts_;
};

// Makes `dir`/NAME, for each of `names`, an empty directory on a tmpfs of its
// own, writable by the caller, and leaves everything else under `dir` as it
// was. A NAME that is a directory gets a tmpfs over it. When one is missing,
// `dir` is grafted (graft_directory) so that the new directory goes on a
// tmpfs, never into the host's `dir`.
Result<void> make_tmpfs_dirs(const std::string& dir, const std::vector<std::string>& names,
                             MountUndo& undo);

// Puts a tmpfs over `dir` that holds what `dir` held: each entry made again,
// directories and files bound from the originals (recursively: mounts below
// them, such as /dev/pts, keep working), symbolic links copied. `dir` looks
// the same but new entries can be made in it.
Result<void> graft_directory(const std::string& dir, MountUndo& undo);

// A new empty file `target` (in a writable directory) with `source` bound onto it.
Result<void> bind_file(const std::string& source, const std::string& target);

// Makes the tmpfs mounted at `dir` read-only (the mounts below it unchanged).
Result<void> remount_read_only(const std::string& dir);

} // namespace rdmasim::tools
