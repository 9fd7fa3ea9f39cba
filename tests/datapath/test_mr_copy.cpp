// mr_copy.hpp: ordinary MRs copy with memcpy, ODP MRs through the fault-safe
// calls, which answer false for unmapped or (writing) read-only pages
// instead of a SIGSEGV (datapath/README.md, "On-demand paging").
#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "datapath/mr_copy.hpp"

using namespace rdmasim::datapath;

TEST_CASE("ODP copies: mapped pages copy, unmapped and read-only ones fail, never fault",
          "[mr][odp]") {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    auto* area = static_cast<std::uint8_t*>(
        mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    REQUIRE(area != MAP_FAILED);
    std::memset(area, 0x11, 3 * page);
    std::uint8_t buf[64];
    std::memset(buf, 0x22, sizeof buf);
    CHECK(odp_write(area + 10, buf, sizeof buf));
    CHECK(area[10] == 0x22);
    CHECK(odp_read(buf, area, 8));
    CHECK(buf[0] == 0x11);
    REQUIRE(mprotect(area + page, page, PROT_READ) == 0);
    CHECK(odp_read(buf, area + page, 8));
    CHECK_FALSE(odp_write(area + page, buf, 8)); // read-only
    REQUIRE(munmap(area + 2 * page, page) == 0);
    CHECK_FALSE(odp_read(buf, area + 2 * page, 8)); // unmapped
    CHECK_FALSE(odp_write(area + 2 * page, buf, 8));
    CHECK(odp_readable(area, 2 * page));
    CHECK_FALSE(odp_readable(area, 2 * page + 1));
    // Through MrRef: ODP goes the safe way, an ordinary MR the memcpy way.
    CHECK_FALSE(mr_write(MrRef{area + 2 * page, true}, buf, 8));
    CHECK(mr_write(MrRef{area, false}, buf, 8));
    CHECK(munmap(area, 2 * page) == 0);
}

TEST_CASE("MrTable: an ODP entry is refused by the memcpy translations, marked by the others",
          "[mr][odp]") {
    MrTable t(4);
    std::uint8_t bytes[64];
    MrEntry e;
    e.addr = 0x1000;
    e.length = sizeof bytes;
    e.host = reinterpret_cast<std::uint64_t>(bytes);
    e.pd = &t;
    e.local_write = e.remote_write = true;
    const std::uint32_t plain = t.add(e);
    e.odp = true;
    const std::uint32_t odp = t.add(e);
    CHECK(t.translate(plain, &t, 0x1000, 8, true) == bytes);
    CHECK_FALSE(t.translate_ref(plain, &t, 0x1000, 8, true).odp);
    CHECK(t.translate(odp, &t, 0x1000, 8, true) == nullptr);
    CHECK(t.translate_ref(odp, &t, 0x1000, 8, true).host == bytes);
    CHECK(t.translate_ref(odp, &t, 0x1000, 8, true).odp);
    CHECK(t.translate_remote(odp, &t, 0x1000, 8, kRemoteWrite) == nullptr);
    CHECK(t.translate_remote_ref(odp, &t, 0x1000, 8, kRemoteWrite).odp);
    CHECK(t.translate_remote(plain, &t, 0x1000, 8, kRemoteWrite) == bytes);
}
