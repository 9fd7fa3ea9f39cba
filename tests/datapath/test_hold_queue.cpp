// HoldQueue (delay-drop storage) against a deque model: FIFO order, frames and
// their metadata intact, full by entries and by bytes, arena wrap-around.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include "datapath/hold_queue.hpp"

using namespace rdmasim;
using datapath::HoldQueue;

namespace {

struct Held {
    std::vector<std::uint8_t> bytes;
    std::uint8_t fcs_len = 0;
    std::uint64_t ts_ns = 0;
    std::uint64_t arrival_ns = 0;
    std::uint16_t tci = 0;
};

// A frame whose every byte depends on its serial number, so that a frame
// overwritten by another (or shifted) cannot compare equal.
Held make(std::uint32_t serial, std::uint32_t len) {
    Held h;
    h.bytes.resize(len);
    for (std::uint32_t i = 0; i < len; ++i)
        h.bytes[i] = static_cast<std::uint8_t>(serial * 131 + i * 7 + (i >> 8));
    h.fcs_len = len >= 4 && serial % 3 == 0 ? 4 : 0;
    h.ts_ns = 1'000'000ull * serial + 17;
    h.arrival_ns = 5'000ull * serial;
    h.tci = static_cast<std::uint16_t>(serial * 977);
    return h;
}

bool push(HoldQueue& q, const Held& h) {
    net::Frame f;
    f.data = h.bytes.data();
    f.len = static_cast<std::uint32_t>(h.bytes.size());
    f.wire_len = f.len;
    f.fcs_len = h.fcs_len;
    f.ts_ns = h.ts_ns;
    net::ParsedFrame p;
    p.has_vlan = true;
    p.vlan_tci = h.tci;
    return q.push(f, p, h.arrival_ns);
}

void check_front(const HoldQueue& q, const Held& h) {
    const net::Frame f = q.front();
    REQUIRE(f.len == h.bytes.size());
    REQUIRE(f.wire_len == h.bytes.size());
    REQUIRE(f.fcs_len == h.fcs_len);
    REQUIRE(f.ts_ns == h.ts_ns);
    REQUIRE(std::equal(f.data, f.data + f.len, h.bytes.begin(), h.bytes.end()));
    REQUIRE(q.front_arrival_ns() == h.arrival_ns);
    REQUIRE(q.front_parsed().has_vlan);
    REQUIRE(q.front_parsed().vlan_tci == h.tci);
}

} // namespace

TEST_CASE("hold queue: FIFO, full by entries", "[datapath][hold]") {
    HoldQueue q;
    q.init(3, 4096);
    REQUIRE(q.empty());
    std::vector<Held> frames;
    for (std::uint32_t i = 0; i < 4; ++i)
        frames.push_back(make(i, 60 + i));
    REQUIRE(push(q, frames[0]));
    REQUIRE(push(q, frames[1]));
    REQUIRE(push(q, frames[2]));
    REQUIRE(q.size() == 3);
    REQUIRE_FALSE(push(q, frames[3])); // three entries: full, although bytes remain
    REQUIRE(q.size() == 3);
    check_front(q, frames[0]);
    q.pop();
    REQUIRE(push(q, frames[3])); // the entry ring wraps
    for (std::uint32_t i = 1; i < 4; ++i) {
        check_front(q, frames[i]);
        q.pop();
    }
    REQUIRE(q.empty());
}

TEST_CASE("hold queue: full by bytes, arena wrap-around, frames intact", "[datapath][hold]") {
    HoldQueue q;
    q.init(16, 100);
    const Held a = make(1, 30), b = make(2, 30), c = make(3, 30), d = make(4, 30);
    REQUIRE(push(q, a));       // [0, 30)
    REQUIRE(push(q, b));       // [30, 60)
    REQUIRE(push(q, c));       // [60, 90)
    REQUIRE_FALSE(push(q, d)); // 10 bytes at the end, nothing free at the start
    REQUIRE(q.size() == 3);
    check_front(q, a);
    q.pop();
    const Held e = make(5, 20);
    REQUIRE(push(q, e)); // wraps to [0, 20)
    const Held f = make(6, 9);
    REQUIRE(push(q, f)); // [20, 29), just before b
    const Held g = make(7, 2);
    REQUIRE_FALSE(push(q, g)); // only one byte left before b
    check_front(q, b);
    q.pop();
    check_front(q, c);
    q.pop();
    check_front(q, e);
    q.pop();
    check_front(q, f);
    q.pop();
    REQUIRE(q.empty());

    // A frame larger than the arena never fits; an empty queue takes a frame as
    // large as the arena.
    REQUIRE_FALSE(push(q, make(8, 101)));
    const Held whole = make(9, 100);
    REQUIRE(push(q, whole));
    REQUIRE_FALSE(push(q, make(10, 1)));
    check_front(q, whole);
    q.pop();
    REQUIRE(q.empty());
}

TEST_CASE("hold queue: random pushes and pops match a deque model", "[datapath][hold]") {
    struct Shape {
        std::uint32_t frames, bytes, max_len;
    };
    for (const Shape s : {Shape{4, 1000, 300}, Shape{64, 2000, 200}, Shape{256, 1u << 16, 1518},
                          Shape{7, 97, 40}}) {
        INFO("frames " << s.frames << " bytes " << s.bytes);
        HoldQueue q;
        q.init(s.frames, s.bytes);
        std::deque<Held> model;
        std::mt19937 rng(s.frames * 7 + s.bytes);
        std::uint32_t serial = 0;
        std::uint64_t live = 0;
        std::uint32_t pushes_ok = 0, refused = 0, wraps_seen = 0;
        for (int step = 0; step < 30000; ++step) {
            if (rng() % 100 < 55) {
                const std::uint32_t len = 1 + static_cast<std::uint32_t>(rng() % s.max_len);
                Held h = make(serial++, len);
                const bool ok = push(q, h);
                // Must refuse: no entry left, or not enough bytes in the whole arena.
                if (model.size() == s.frames || live + len > s.bytes) REQUIRE_FALSE(ok);
                // Must accept: an entry left and room for the frame even after the
                // worst fragmentation (a tail gap shorter than a frame) and the
                // one-byte gap that keeps "full" distinct from "empty".
                if (model.size() < s.frames && live + len + s.max_len + 1 <= s.bytes) REQUIRE(ok);
                if (ok) {
                    model.push_back(std::move(h));
                    live += len;
                    ++pushes_ok;
                } else {
                    ++refused;
                }
            } else if (!model.empty()) {
                check_front(q, model.front());
                const std::uint8_t* was = q.front().data;
                live -= model.front().bytes.size();
                q.pop();
                model.pop_front();
                // The next frame lying before the one just taken: storage wrapped.
                if (!model.empty() && q.front().data < was) ++wraps_seen;
            }
            REQUIRE(q.size() == model.size());
            REQUIRE(q.empty() == model.empty());
            if (!model.empty()) check_front(q, model.front());
        }
        CHECK(pushes_ok > 1000);
        CHECK(refused > 0);
        CHECK(wraps_seen > 10);
        while (!model.empty()) {
            check_front(q, model.front());
            q.pop();
            model.pop_front();
        }
        REQUIRE(q.empty());
    }
}
