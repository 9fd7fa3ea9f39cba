// MemorySource: an in-memory FIFO of owned frames.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "net/memory_source.hpp"

using namespace rdmasim::net;

TEST_CASE("frames come out in push order with their metadata", "[net][memory_source]") {
    MemorySource src;
    CHECK(src.describe() == "memory");
    Frame f;
    CHECK_FALSE(src.next(f));
    CHECK_FALSE(src.exhausted()); // open: more may be pushed

    const std::vector<std::uint8_t> a = {1, 2, 3, 4, 5, 6, 7, 8};
    const std::vector<std::uint8_t> b = {9, 10, 11};
    src.push(a, 1000, 4);
    src.push(b, 2000);
    CHECK(src.pending() == 2);

    REQUIRE(src.next(f));
    CHECK(std::vector<std::uint8_t>(f.data, f.data + f.len) == a);
    CHECK(f.len == 8);
    CHECK(f.wire_len == 8);
    CHECK(f.fcs_len == 4);
    CHECK(f.payload().size() == 4);
    CHECK_FALSE(f.truncated());
    CHECK(f.ts_ns == 1000);
    CHECK(src.pending() == 1);

    REQUIRE(src.next(f));
    CHECK(std::vector<std::uint8_t>(f.data, f.data + f.len) == b);
    CHECK(f.fcs_len == 0);
    CHECK(f.ts_ns == 2000);
    CHECK(src.pending() == 0);
    CHECK_FALSE(src.next(f));

    CHECK(src.counters().frames == 2);
    CHECK(src.counters().bytes == 11);
    CHECK(src.counters().truncated_records == 0);
}

TEST_CASE("push copies the bytes", "[net][memory_source]") {
    MemorySource src;
    std::vector<std::uint8_t> bytes = {0xaa, 0xbb, 0xcc};
    src.push(bytes);
    bytes.assign(3, 0);
    Frame f;
    REQUIRE(src.next(f));
    REQUIRE(f.len == 3);
    CHECK(f.data[0] == 0xaa);
    CHECK(f.data[2] == 0xcc);
}

TEST_CASE("a frame's bytes stay valid until the next call", "[net][memory_source]") {
    MemorySource src;
    src.push(std::vector<std::uint8_t>(100, 0x11));
    for (int i = 0; i < 50; ++i)
        src.push(std::vector<std::uint8_t>(10, 0x22)); // may grow the deque
    Frame first;
    REQUIRE(src.next(first));
    src.push(std::vector<std::uint8_t>(10, 0x33));
    CHECK(first.len == 100);
    CHECK(first.data[99] == 0x11);
}

TEST_CASE("an FCS longer than the frame is not claimed", "[net][memory_source]") {
    MemorySource src;
    src.push(std::vector<std::uint8_t>{1, 2}, 0, 4);
    Frame f;
    REQUIRE(src.next(f));
    CHECK(f.fcs_len == 0);
    CHECK(f.payload().size() == 2);
}

TEST_CASE("close: exhausted once drained", "[net][memory_source]") {
    MemorySource src;
    src.push(std::vector<std::uint8_t>{1});
    src.close();
    CHECK_FALSE(src.exhausted());
    Frame f;
    REQUIRE(src.next(f));
    CHECK(src.exhausted());
    CHECK_FALSE(src.next(f));

    MemorySource empty;
    empty.close();
    CHECK(empty.exhausted());
}
