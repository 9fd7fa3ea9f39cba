// HugeBuffer: zeroed, writable end to end, 2 MiB aligned from 1 MiB on and,
// where the kernel's transparent huge pages are on, in a mapping the kernel
// marks eligible for them (/proc/self/smaps' THPeligible).
#include <catch2/catch.hpp>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "net/huge_buffer.hpp"

using rdmasim::net::HugeBuffer;

namespace {

// The THP mode in brackets ("always", "madvise", "never"), "" without THP.
std::string thp_mode() {
    std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string line;
    std::getline(in, line);
    const auto open = line.find('['), close = line.find(']');
    return open == std::string::npos || close == std::string::npos
               ? std::string{}
               : line.substr(open + 1, close - open - 1);
}

// The THPeligible field of the smaps entry whose range starts at `p`: -1
// when there is none (an older kernel).
int thp_eligible(const void* p) {
    std::ifstream in("/proc/self/smaps");
    std::string line;
    bool in_entry = false;
    const auto start = reinterpret_cast<std::uintptr_t>(p);
    while (std::getline(in, line)) {
        std::uintptr_t lo = 0, hi = 0;
        char dash = 0;
        std::istringstream range(line);
        if (range >> std::hex >> lo >> dash >> hi && dash == '-') {
            in_entry = lo <= start && start < hi;
            continue;
        }
        if (in_entry && line.rfind("THPeligible:", 0) == 0) return std::stoi(line.substr(12));
    }
    return -1;
}

bool zeroed_and_writable(const HugeBuffer& b) {
    for (std::size_t i = 0; i < b.size(); i += 4096)
        if (b.data()[i] != 0) return false;
    if (b.data()[b.size() - 1] != 0) return false;
    for (std::size_t i = 0; i < b.size(); i += 4096)
        b.data()[i] = 0xa5;
    b.data()[b.size() - 1] = 0x5a;
    return b.data()[0] == 0xa5 && b.data()[b.size() - 1] == 0x5a;
}

} // namespace

TEST_CASE("a huge buffer is zeroed, writable and 2 MiB aligned", "[huge_buffer]") {
    const std::size_t bytes = 3 * HugeBuffer::kHugePage + 12345;
    HugeBuffer b(bytes);
    REQUIRE_FALSE(b.empty());
    CHECK(b.size() == bytes);
    CHECK(reinterpret_cast<std::uintptr_t>(b.data()) % HugeBuffer::kHugePage == 0);
    CHECK(zeroed_and_writable(b));

    const std::string mode = thp_mode();
    if (mode == "always" || mode == "madvise") {
        CHECK(b.advised());
        const int eligible = thp_eligible(b.data());
        INFO("THPeligible of the mapping (-1: the kernel does not say)");
        CHECK((eligible == 1 || eligible == -1));
    } else {
        WARN("transparent huge pages are '" << mode << "' here: the buffer is ordinary pages");
    }
}

TEST_CASE("a small huge buffer is ordinary pages, an empty one is nothing", "[huge_buffer]") {
    HugeBuffer small(100);
    REQUIRE_FALSE(small.empty());
    CHECK(small.size() == 100);
    CHECK_FALSE(small.advised());
    CHECK(zeroed_and_writable(small));

    // The threshold: half a huge page is rounded up to a whole aligned one.
    HugeBuffer below(HugeBuffer::kHugePage / 2 - 1), at(HugeBuffer::kHugePage / 2);
    REQUIRE_FALSE(below.empty());
    REQUIRE_FALSE(at.empty());
    CHECK_FALSE(below.advised());
    CHECK(reinterpret_cast<std::uintptr_t>(at.data()) % HugeBuffer::kHugePage == 0);
    CHECK(zeroed_and_writable(below));
    CHECK(zeroed_and_writable(at));

    HugeBuffer none(0);
    CHECK(none.empty());
    CHECK(none.size() == 0);
    CHECK(HugeBuffer().empty());
}

TEST_CASE("a huge buffer moves its memory, once", "[huge_buffer]") {
    HugeBuffer a(HugeBuffer::kHugePage);
    REQUIRE_FALSE(a.empty());
    a.data()[7] = 42;
    std::uint8_t* const where = a.data();

    HugeBuffer b(std::move(a));
    CHECK(a.empty());
    CHECK(b.data() == where);
    CHECK(b.data()[7] == 42);

    HugeBuffer c(4096);
    c = std::move(b); // c's own pages are given back, b's taken
    CHECK(b.empty());
    CHECK(c.data() == where);
    CHECK(c.size() == HugeBuffer::kHugePage);
    c = HugeBuffer();
    CHECK(c.empty());
}
