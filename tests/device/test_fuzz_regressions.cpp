// Inputs the fuzz targets (tests/fuzz) found crashing, kept as tests: each
// case holds the exact bytes and says which target found them.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "device/flow_spec.hpp"
#include "tests/fuzz/roce_peer.hpp"

using namespace rdmasim;

namespace {

// The bytes in a heap block of exactly their size, as the fuzzer hands them
// over: a read past the end is caught by the address sanitizer.
int parse_exact(const std::vector<std::uint8_t>& bytes, datapath::FlowRule& rule) {
    std::unique_ptr<std::uint8_t[]> block(new std::uint8_t[bytes.size()]);
    if (!bytes.empty()) std::memcpy(block.get(), bytes.data(), bytes.size());
    return device::parse_flow_attr(*reinterpret_cast<const ibv_flow_attr*>(block.get()),
                                   bytes.size(), rule);
}

} // namespace

TEST_CASE("parse_flow_attr: fewer bytes than an ibv_flow_attr are EINVAL, nothing read",
          "[device][flow][fuzz]") {
    // fuzz_flow_spec: the empty input (crash-da39a3ee5e6b4b0d3255bfef95601890afd80709)
    // read attr.comp_mask before checking `available`.
    datapath::FlowRule rule;
    rule.ipv4_value.ttl = 0x5a;
    CHECK(parse_exact({}, rule) == EINVAL);
    // A valid-looking NORMAL attribute, port 1, cut one byte short of its 20.
    std::vector<std::uint8_t> cut(sizeof(ibv_flow_attr), 0);
    cut[offsetof(ibv_flow_attr, port)] = 1;
    cut.pop_back();
    CHECK(parse_exact(cut, rule) == EINVAL);
    CHECK(rule.ipv4_value.ttl == 0x5a); // left untouched
    // The same attribute whole, with no specs, is accepted.
    cut.push_back(0);
    CHECK(parse_exact(cut, rule) == 0);
}

TEST_CASE("a peer's WRITE_LAST after ibv_dereg_mr returned lands nowhere", "[device][roce][fuzz]") {
    // fuzz_roce_peer (crash-ccca54a83bb35277af5942a13a93572c6254ea39), issue
    // 29 item 1. Step 1: WRITE_FIRST (RETH: MR 0's rkey and start, 512 bytes;
    // 256 bytes of payload) to the RC QP at its expected PSN, ACKed. Step 2:
    // ibv_dereg_mr(MR 0); the program refills the buffer. Step 3: WRITE_LAST
    // (256 bytes) at the next PSN. The responder kept the host pointer it
    // resolved on the FIRST packet and copied the 256 bytes into the
    // deregistered buffer; it must NAK (remote access) and copy nothing.
    const std::vector<std::uint8_t> input = {
        0x00,                                           // configuration: every right
        0x00, 0x26, 0x00, 0x00, 0x00, 0x08, 0x80, 0x10, // frame: RC WRITE_FIRST
        0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // ibv_dereg_mr(MR 0)
        0x00, 0x28, 0x00, 0x00, 0x00, 0x00, 0x80, 0x10, // frame: RC WRITE_LAST
    };
    test::RocePeerHarness harness;
    CHECK(harness.run(input) == "");
}
