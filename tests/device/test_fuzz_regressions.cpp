// Inputs the fuzz targets (tests/fuzz) found crashing, kept as tests: each
// case holds the exact bytes and says which target found them.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
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

// Bytes written as hex pairs, spaces ignored.
std::vector<std::uint8_t> from_hex(std::string_view hex) {
    std::vector<std::uint8_t> out;
    while (!hex.empty()) {
        if (hex[0] == ' ') {
            hex.remove_prefix(1);
            continue;
        }
        out.push_back(
            static_cast<std::uint8_t>(std::stoi(std::string(hex.substr(0, 2)), nullptr, 16)));
        hex.remove_prefix(2);
    }
    return out;
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

TEST_CASE("no WRITE packet touches memory after the verb that revoked it returned",
          "[device][roce][fuzz]") {
    // Item 1's class (issue 29), each a path fuzz_roce_peer found or that
    // its steps spell out: a message's first packet is accepted, a verb
    // revokes its target, the next packet must change nothing. Inputs in hex:
    // the configuration byte, then one 8-byte step each (the encoding:
    // tests/fuzz/roce_peer_steps.cpp).
    const std::pair<const char*, const char*> cases[] = {
        {"rereg_mr drops REMOTE_WRITE (RC WRITE_MIDDLE; crash-2e3a3a6c, minimized)",
         "00 00260000000c8010 0a00040000050000 0027000000008010"},
        {"LOCAL_INV of a type 2 window (RC; crash-91512c6c, minimized)",
         "00 0b07082007000000 0026006100088010 0c00000000000000 0028000000008010"},
        {"dealloc_mw of a type 2 window (UC; crash-474c9954, minimized)",
         "00 0b0f082001000000 0066006100088010 0d01000000000000 0068000000008010"},
        {"bind_mw moves a type 1 window (RC)",
         "00 0b02082003000000 0026006000088010 0b02482003000000 0028000000008010"},
        {"dereg_mr (XRC)", "00 00e6000000088010 0800000000000000 00e8000000008010"},
        {"dereg_mr (UC)", "00 0066000000088010 0800000000000000 0068000000008010"},
    };
    test::RocePeerHarness harness;
    for (const auto& [name, hex] : cases) {
        INFO(name);
        CHECK(harness.run(from_hex(hex)) == "");
    }
}
