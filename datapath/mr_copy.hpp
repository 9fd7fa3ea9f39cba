// Copies into and out of MR memory (datapath/README.md, "On-demand paging").
// An ordinary MR's pages stay mapped while it is registered (the program's
// promise, as pinning is the kernel's): memcpy. An ODP MR's pages may be
// unmapped at any time, so its bytes move through process_vm_readv /
// process_vm_writev on this process, which fail (EFAULT) where a plain load
// or store would take the engine down with SIGSEGV.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "datapath/mr_table.hpp"

namespace rdmasim::datapath {

// Fault-safe copies; `odp_src` / `odp_dst` is ODP memory. True when all n
// bytes moved; false (some may have) when a page is unmapped or, for a
// write, not writable.
[[nodiscard]] bool odp_read(void* dst, const void* odp_src, std::size_t n) noexcept;
[[nodiscard]] bool odp_write(void* odp_dst, const void* src, std::size_t n) noexcept;
// Every byte of [odp_src, odp_src + n) can be read now (read into scratch).
[[nodiscard]] bool odp_readable(const void* odp_src, std::size_t n) noexcept;

// n bytes out of the checked range `from`: memcpy unless it is ODP.
[[nodiscard]] inline bool mr_read(void* dst, MrRef from, std::size_t n) noexcept {
    if (!from.odp) [[likely]] {
        std::memcpy(dst, from.host, n);
        return true;
    }
    return odp_read(dst, from.host, n);
}

// n bytes into the checked range `to`: memcpy unless it is ODP.
[[nodiscard]] inline bool mr_write(MrRef to, const void* src, std::size_t n) noexcept {
    if (!to.odp) [[likely]] {
        std::memcpy(to.host, src, n);
        return true;
    }
    return odp_write(to.host, src, n);
}

} // namespace rdmasim::datapath
