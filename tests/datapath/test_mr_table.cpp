// MrTable: the MR check of datapath/README.md, "Per-frame order" (lkey of a live MR of the WQ's PD,
// LOCAL_WRITE for writes, covering [addr, addr + length)) and key lifetime.
#include <catch2/catch.hpp>

#include <cstdint>
#include <set>
#include <vector>

#include "datapath/mr_table.hpp"

using namespace rdmasim;
using datapath::MrEntry;
using datapath::MrTable;

namespace {

const int kPdA = 0, kPdB = 0; // two distinct addresses: identities only
constexpr std::uint64_t kIova = 0x7000'0000'1000ull;
constexpr std::uint64_t kHost = 0x5555'0000'0000ull;
constexpr std::uint64_t kLen = 4096;

MrEntry entry(const void* pd, bool local_write = true) {
    MrEntry e;
    e.addr = kIova;
    e.length = kLen;
    e.host = kHost;
    e.pd = pd;
    e.local_write = local_write;
    return e;
}

std::uint8_t* host(std::uint64_t h) {
    return reinterpret_cast<std::uint8_t*>(h);
}

} // namespace

TEST_CASE("mr table: translate checks pd, access and range", "[datapath][mr]") {
    MrTable t(8);
    const std::uint32_t key = t.add(entry(&kPdA));
    REQUIRE(key != 0);

    SECTION("inside the region: the host address of addr") {
        CHECK(t.translate(key, &kPdA, kIova, kLen, true) == host(kHost));
        CHECK(t.translate(key, &kPdA, kIova + 100, 28, true) == host(kHost + 100));
        CHECK(t.translate(key, &kPdA, kIova + kLen - 1, 1, true) == host(kHost + kLen - 1));
        CHECK(t.translate(key, &kPdA, kIova + kLen, 0, true) == host(kHost + kLen));
    }
    SECTION("wrong protection domain") {
        CHECK(t.translate(key, &kPdB, kIova, 64, true) == nullptr);
        CHECK(t.translate(key, nullptr, kIova, 64, true) == nullptr);
    }
    SECTION("out of range: before, past the end, longer than the region, wrapping") {
        CHECK(t.translate(key, &kPdA, kIova - 1, 64, true) == nullptr);
        CHECK(t.translate(key, &kPdA, kIova + kLen - 63, 64, true) == nullptr);
        CHECK(t.translate(key, &kPdA, kIova + kLen, 1, true) == nullptr);
        CHECK(t.translate(key, &kPdA, kIova, kLen + 1, true) == nullptr);
        CHECK(t.translate(key, &kPdA, ~0ull - 10, 64, true) == nullptr);
        CHECK(t.translate(key, &kPdA, 0, 64, true) == nullptr);
    }
    SECTION("unknown keys") {
        CHECK(t.translate(0, &kPdA, kIova, 64, true) == nullptr);
        CHECK(t.translate(key + 1, &kPdA, kIova, 64, true) == nullptr);      // other generation
        CHECK(t.translate(key ^ 0x0100, &kPdA, kIova, 64, true) == nullptr); // other slot
        CHECK(t.translate(0xffff'ff01u, &kPdA, kIova, 64, true) == nullptr); // past the table
        CHECK(t.translate(0x0000'00ffu, &kPdA, kIova, 64, true) == nullptr); // slot 0 is "none"
    }
}

TEST_CASE("mr table: write needs LOCAL_WRITE, reads do not", "[datapath][mr]") {
    MrTable t(4);
    const std::uint32_t ro = t.add(entry(&kPdA, false));
    REQUIRE(ro != 0);
    CHECK(t.translate(ro, &kPdA, kIova, 64, true) == nullptr);
    CHECK(t.translate(ro, &kPdA, kIova, 64, false) == host(kHost));
}

TEST_CASE("mr table: translate_remote needs each access asked for, the PD and the range",
          "[datapath][mr]") {
    MrTable t(4);
    MrEntry e = entry(&kPdA);
    e.remote_read = true; // read only from the wire
    const std::uint32_t rkey = t.add(e);
    e.remote_write = e.remote_atomic = true;
    const std::uint32_t all = t.add(e);
    using datapath::kRemoteAtomic;
    using datapath::kRemoteRead;
    using datapath::kRemoteWrite;
    CHECK(t.translate_remote(rkey, &kPdA, kIova + 8, 8, kRemoteRead) == host(kHost + 8));
    CHECK(t.translate_remote(rkey, &kPdA, kIova, 8, kRemoteWrite) == nullptr);
    CHECK(t.translate_remote(rkey, &kPdA, kIova, 8, kRemoteAtomic) == nullptr);
    CHECK(t.translate_remote(rkey, &kPdA, kIova, 8, kRemoteRead | kRemoteWrite) == nullptr);
    CHECK(t.translate_remote(all, &kPdA, kIova, 8, kRemoteRead | kRemoteWrite | kRemoteAtomic) ==
          host(kHost));
    CHECK(t.translate_remote(all, &kPdB, kIova, 8, kRemoteRead) == nullptr);
    CHECK(t.translate_remote(all, &kPdA, kIova + kLen - 4, 8, kRemoteWrite) == nullptr);
    CHECK(t.translate_remote(all, &kPdA, kIova - 1, 1, kRemoteWrite) == nullptr);
    CHECK(t.translate_remote(all + 1, &kPdA, kIova, 8, kRemoteRead) == nullptr);
    // Local write access is not remote write access, nor the reverse.
    CHECK(t.translate(rkey, &kPdA, kIova, 8, true) == host(kHost));
}

TEST_CASE("mr table: keys are unique, die with their MR, and a full table says 0",
          "[datapath][mr]") {
    MrTable t(4);
    REQUIRE(t.capacity() == 4);
    std::vector<std::uint32_t> keys;
    for (int i = 0; i < 4; ++i) {
        MrEntry e = entry(&kPdA);
        e.host = kHost + 0x10000ull * static_cast<std::uint64_t>(i);
        keys.push_back(t.add(e));
        REQUIRE(keys.back() != 0);
    }
    CHECK(std::set<std::uint32_t>(keys.begin(), keys.end()).size() == 4);
    CHECK(t.add(entry(&kPdA)) == 0); // full
    for (int i = 0; i < 4; ++i)
        CHECK(t.translate(keys[i], &kPdA, kIova, 8, true) ==
              host(kHost + 0x10000ull * static_cast<std::uint64_t>(i)));

    t.remove(keys[1]);
    CHECK(t.translate(keys[1], &kPdA, kIova, 8, true) == nullptr);
    t.remove(keys[1]); // twice: harmless
    t.remove(0);       // nonsense keys: harmless
    t.remove(0xffff'ff01u);
    CHECK(t.translate(keys[0], &kPdA, kIova, 8, true) == host(kHost));

    // The slot is reused under a new key; the old key stays dead.
    const std::uint32_t again = t.add(entry(&kPdB));
    REQUIRE(again != 0);
    CHECK(again != keys[1]);
    CHECK(t.translate(keys[1], &kPdB, kIova, 8, true) == nullptr);
    CHECK(t.translate(again, &kPdB, kIova, 8, true) == host(kHost));
    // Removing with a stale key does not remove the new MR.
    t.remove(keys[1]);
    CHECK(t.translate(again, &kPdB, kIova, 8, true) == host(kHost));
}

TEST_CASE("mr table: a slot reused 300 times never hands out 0 or an old key", "[datapath][mr]") {
    MrTable t(1);
    std::set<std::uint32_t> recent;
    std::uint32_t prev = 0;
    for (int i = 0; i < 300; ++i) {
        const std::uint32_t k = t.add(entry(&kPdA));
        REQUIRE(k != 0);
        REQUIRE(k != prev);
        REQUIRE(t.translate(prev, &kPdA, kIova, 8, true) == nullptr);
        REQUIRE(t.translate(k, &kPdA, kIova, 8, true) == host(kHost));
        t.remove(k);
        prev = k;
    }
}
