// What a program reads from a CQ, for tests that compare it with what they
// expect: every completion there now (drain), and the (wr_id, status) pairs
// in order (seen), printable for a failure's message (show).
#pragma once

#include <infiniband/verbs.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace rdmasim::test {

// Every completion currently in `cq` (polling pumps the inline engine).
inline std::vector<ibv_wc> drain(ibv_cq* cq) {
    std::vector<ibv_wc> out;
    ibv_wc wc[16];
    for (;;) {
        const int n = ibv_poll_cq(cq, 16, wc);
        REQUIRE(n >= 0);
        if (n == 0) break;
        out.insert(out.end(), wc, wc + n);
    }
    return out;
}

// One completion as a program reads it from a CQ: (wr_id, status).
struct Seen {
    std::uint64_t wr_id;
    int status;
    bool operator==(const Seen&) const = default;
};

// The completions in `cq` now, in order.
inline std::vector<Seen> seen(ibv_cq* cq) {
    std::vector<Seen> out;
    for (const ibv_wc& wc : drain(cq))
        out.push_back({wc.wr_id, wc.status});
    return out;
}

// "(1, local protection error) (2, Work Request Flushed Error) ..."
inline std::string show(const std::vector<Seen>& v) {
    std::string s;
    for (const Seen& e : v)
        s += "(" + std::to_string(e.wr_id) + ", " +
             ibv_wc_status_str(static_cast<ibv_wc_status>(e.status)) + ") ";
    return s;
}

} // namespace rdmasim::test
