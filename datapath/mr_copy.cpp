#include "datapath/mr_copy.hpp"

#include <sys/uio.h>
#include <unistd.h>

namespace rdmasim::datapath {

// process_vm_readv/writev on the own pid need no ptrace permission (the
// same thread group) and pin each page for the copy, so a concurrent munmap
// cannot pull it away half-way. getpid() each time: a fork changes it.
bool odp_read(void* dst, const void* odp_src, std::size_t n) noexcept {
    if (n == 0) return true;
    const iovec local{dst, n};
    const iovec remote{const_cast<void*>(odp_src), n};
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n);
}

bool odp_write(void* odp_dst, const void* src, std::size_t n) noexcept {
    if (n == 0) return true;
    const iovec local{const_cast<void*>(src), n};
    const iovec remote{odp_dst, n};
    return process_vm_writev(getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n);
}

bool odp_readable(const void* odp_src, std::size_t n) noexcept {
    char scratch[4096];
    const auto* p = static_cast<const char*>(odp_src);
    for (std::size_t done = 0; done < n; done += sizeof scratch)
        if (!odp_read(scratch, p + done, n - done < sizeof scratch ? n - done : sizeof scratch))
            return false;
    return true;
}

} // namespace rdmasim::datapath
