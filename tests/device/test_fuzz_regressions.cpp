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
