// shm::Segment: the mapping behind a shm:// wire. Two segments on one PATH
// in one process stand for two programs, each with its own mapping.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "net/shm_segment.hpp"
#include "tests/net/temp_dir.hpp"

using namespace rdmasim::net;
using rdmasim::net::test::TempDir;

namespace {

// How many pages of [p, p + bytes) this process's page tables map now
// (/proc/self/pagemap, bit 63: present).
std::size_t pages_present(const std::uint8_t* p, std::size_t bytes) {
    const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    const long page = ::sysconf(_SC_PAGESIZE);
    std::size_t present = 0;
    for (std::size_t off = 0; off < bytes; off += static_cast<std::size_t>(page)) {
        std::uint64_t entry = 0;
        const auto at =
            static_cast<off_t>((reinterpret_cast<std::uintptr_t>(p) + off) / page * sizeof entry);
        REQUIRE(::pread(fd, &entry, sizeof entry, at) == static_cast<ssize_t>(sizeof entry));
        present += (entry >> 63) & 1;
    }
    ::close(fd);
    return present;
}

shm::Segment open_ok(const std::string& path) {
    auto s = shm::Segment::open("shm://" + path, path, 0600);
    INFO(path << ": " << (s ? std::string() : s.error().message));
    REQUIRE(s);
    return std::move(s.value());
}

} // namespace

TEST_CASE("shm::Segment: a host's own ring is in its page tables once it holds the slot, a peer's "
          "once prefaulted",
          "[net][shm]") {
    TempDir dir;
    const std::string path = dir / "shm";
    const std::size_t pages = shm::kRingBytes / static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    shm::Segment a = open_ok(path);
    shm::Segment b = open_ok(path);
    REQUIRE(a.host() != b.host());
    // Each holder's own ring: mapped before any frame comes.
    CHECK(pages_present(a.slot(a.host(), 0), shm::kRingBytes) == pages);
    CHECK(pages_present(b.slot(b.host(), 0), shm::kRingBytes) == pages);
    // The peer's ring in a's mapping: only once a prefaults it (ShmWire
    // does when it first sees the peer alive).
    CHECK(pages_present(a.slot(b.host(), 0), shm::kRingBytes) < pages);
    a.prefault_ring(b.host());
    CHECK(pages_present(a.slot(b.host(), 0), shm::kRingBytes) == pages);
}
