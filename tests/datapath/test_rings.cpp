// RecvRing and CqRing against a std::deque model, after every operation.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include "datapath/cq_ring.hpp"
#include "datapath/recv_ring.hpp"

using namespace rdmasim;
using datapath::Cqe;
using datapath::CqRing;
using datapath::RecvRing;
using datapath::Sge;
using datapath::Wqe;

namespace {

struct ModelWqe {
    std::uint64_t wr_id;
    std::vector<Sge> sges;
};

void check_recv(const RecvRing& ring, const std::deque<ModelWqe>& model) {
    REQUIRE(ring.size() == model.size());
    REQUIRE(ring.empty() == model.empty());
    REQUIRE(ring.full() == (model.size() == ring.capacity()));
    if (!model.empty()) {
        const Wqe& w = ring.front();
        REQUIRE(w.wr_id == model.front().wr_id);
        REQUIRE(w.num_sge == model.front().sges.size());
        std::uint32_t total = 0;
        for (std::uint32_t i = 0; i < w.num_sge; ++i) {
            const Sge& s = ring.front_sges()[i];
            const Sge& m = model.front().sges[i];
            REQUIRE(s.addr == m.addr);
            REQUIRE(s.length == m.length);
            REQUIRE(s.lkey == m.lkey);
            total += m.length;
        }
        REQUIRE(w.total_len == total);
    }
}

// `model`: what the consumer sees; `staged`: entries a batching producer
// wrote after them (they count against the room, not as entries).
void check_cq(CqRing& ring, const std::deque<Cqe>& model, std::size_t staged = 0) {
    REQUIRE(ring.size() == model.size());
    REQUIRE(ring.empty() == model.empty());
    REQUIRE(ring.room() == (model.size() + staged < ring.capacity()));
    if (!model.empty()) {
        const Cqe& c = ring.front();
        const Cqe& m = model.front();
        REQUIRE(c.wr_id == m.wr_id);
        REQUIRE(c.byte_len == m.byte_len);
        REQUIRE(c.qp_num == m.qp_num);
        REQUIRE(c.wc_flags == m.wc_flags);
        REQUIRE(c.cvlan == m.cvlan);
        REQUIRE(c.status == m.status);
        REQUIRE(c.opcode == m.opcode);
        REQUIRE(c.timestamp_ns == m.timestamp_ns);
    }
}

} // namespace

TEST_CASE("rings: capacity is the request rounded up to a power of two", "[datapath][ring]") {
    const std::vector<std::pair<std::uint32_t, std::uint32_t>> cases = {
        {0, 1}, {1, 1},     {2, 2},     {3, 4},       {4, 4},
        {5, 8}, {255, 256}, {256, 256}, {1000, 1024}, {32768, 32768}};
    for (auto [req, cap] : cases) {
        INFO("request " << req);
        RecvRing r;
        r.init(req, 3);
        CHECK(r.capacity() == cap);
        CHECK(r.max_sge() == 3);
        CqRing c;
        c.init(req);
        CHECK(c.capacity() == cap);
    }
    RecvRing r;
    r.init(4, 0);
    CHECK(r.max_sge() == 1); // max_sge 0 counts as 1
}

TEST_CASE("recv ring: full and empty at the exact boundaries", "[datapath][ring]") {
    RecvRing r;
    r.init(5, 2); // 8 entries
    REQUIRE(r.empty());
    REQUIRE_FALSE(r.full());
    for (std::uint64_t i = 0; i < 8; ++i) {
        REQUIRE_FALSE(r.full());
        r.next_wqe() = Wqe{i, 1, 10};
        r.next_sges()[0] = Sge{0x1000 + i, 10, 7};
        r.publish();
        REQUIRE(r.size() == i + 1);
    }
    REQUIRE(r.full());
    REQUIRE_FALSE(r.empty());
    r.pop();
    REQUIRE_FALSE(r.full());
    REQUIRE(r.front().wr_id == 1);
    r.reset();
    REQUIRE(r.empty());
    REQUIRE(r.size() == 0);
    REQUIRE_FALSE(r.full());
}

TEST_CASE("recv ring: random operations match a deque model", "[datapath][ring]") {
    for (std::uint32_t request : {1u, 3u, 8u, 13u}) {
        for (std::uint32_t max_sge : {1u, 4u}) {
            INFO("request " << request << " max_sge " << max_sge);
            RecvRing ring;
            ring.init(request, max_sge);
            std::deque<ModelWqe> model;
            std::mt19937 rng(request * 31 + max_sge);
            std::uint64_t next_id = 1;
            for (int step = 0; step < 20000; ++step) {
                const auto op = rng() % 100;
                if (op < 50) { // post, if there is room (the producer's contract)
                    if (ring.full()) {
                        REQUIRE(model.size() == ring.capacity());
                    } else {
                        ModelWqe m{next_id++, {}};
                        const std::uint32_t n = 1 + rng() % max_sge;
                        Wqe& w = ring.next_wqe();
                        Sge* s = ring.next_sges();
                        w = Wqe{m.wr_id, n, 0};
                        for (std::uint32_t i = 0; i < n; ++i) {
                            const Sge sge{rng() * 64ull,
                                          1 + static_cast<std::uint32_t>(rng() % 9000),
                                          static_cast<std::uint32_t>(rng())};
                            s[i] = sge;
                            w.total_len += sge.length;
                            m.sges.push_back(sge);
                        }
                        ring.publish();
                        model.push_back(m);
                    }
                } else if (op < 98) { // consume
                    if (!ring.empty()) {
                        ring.pop();
                        model.pop_front();
                    }
                } else { // RESET -> RDY forgets everything
                    ring.reset();
                    model.clear();
                }
                check_recv(ring, model);
            }
        }
    }
}

TEST_CASE("cq ring: full means full, overflow is reported once", "[datapath][ring]") {
    CqRing cq;
    cq.init(3); // 4 entries
    REQUIRE(cq.empty());
    REQUIRE_FALSE(cq.take_overflow());
    for (std::uint64_t i = 0; i < 4; ++i)
        REQUIRE(cq.push(Cqe{.wr_id = i}));
    REQUIRE_FALSE(cq.room());
    REQUIRE_FALSE(cq.push(Cqe{.wr_id = 99}));
    REQUIRE(cq.size() == 4);
    REQUIRE(cq.take_overflow());
    REQUIRE_FALSE(cq.take_overflow());
    // Nothing already in the CQ is lost, and the refused entry never appears.
    for (std::uint64_t i = 0; i < 4; ++i) {
        REQUIRE(cq.front().wr_id == i);
        cq.pop();
    }
    REQUIRE(cq.empty());
    cq.mark_overflow();
    REQUIRE(cq.take_overflow());
    REQUIRE_FALSE(cq.take_overflow());
}

TEST_CASE("cq ring: random operations match a deque model", "[datapath][ring]") {
    for (std::uint32_t request : {1u, 2u, 7u, 64u}) {
        INFO("request " << request);
        CqRing cq;
        cq.init(request);
        std::deque<Cqe> model;
        std::deque<Cqe> staged; // written while batching, not yet flushed
        bool batching = false;
        std::uint32_t written = 0;
        const auto flush = [&] {
            written += static_cast<std::uint32_t>(staged.size());
            model.insert(model.end(), staged.begin(), staged.end());
            staged.clear();
        };
        std::mt19937 rng(request);
        std::uint64_t next_id = 1;
        bool overflow_expected = false;
        for (int step = 0; step < 20000; ++step) {
            if (rng() % 32 == 0) { // a burst starts or ends (ending flushes)
                batching = !batching;
                cq.set_batching(batching);
                if (!batching) flush();
            } else if (batching && rng() % 16 == 0) {
                cq.flush();
                flush();
            }
            if (rng() % 2 == 0) {
                Cqe c;
                c.wr_id = next_id++;
                c.timestamp_ns = rng();
                c.byte_len = rng() % 10000;
                c.qp_num = rng() % 4; // few QPs: a purge removes some
                c.wc_flags = rng() % 64;
                c.cvlan = static_cast<std::uint16_t>(rng());
                c.status = static_cast<std::uint8_t>(rng() % 22);
                c.opcode = static_cast<std::uint8_t>(rng() % 2 ? 128 : 0);
                const bool fits = model.size() + staged.size() < cq.capacity();
                // Half through the two-step producer side the datapath uses.
                const bool in_place = rng() % 2 == 0;
                if (in_place) {
                    REQUIRE(cq.room() == fits);
                    if (fits) {
                        cq.next_entry() = c;
                        cq.publish();
                    }
                } else {
                    REQUIRE(cq.push(c) == fits);
                }
                if (fits) {
                    staged.push_back(c);
                    if (!batching) flush();
                } else if (!in_place) {
                    overflow_expected = true;
                }
            } else {
                // Both tests of emptiness, mixed, a few pops at a time: the
                // consumer's copy of the producer's index must stay right
                // whichever one it pops after, and however far the pops go.
                const bool poll = rng() % 2 == 0;
                for (std::uint32_t k = 1 + rng() % 3; k > 0 && (poll ? !cq.poll_empty() : !cq.empty()); --k) {
                    cq.pop();
                    model.pop_front();
                }
            }
            if (rng() % 64 == 0) { // moves both indices: the copies must follow
                flush();              // and publishes what was staged first
                const std::uint32_t qp = rng() % 4;
                const std::uint32_t keep = std::min<std::uint32_t>(rng() % 3, static_cast<std::uint32_t>(model.size()));
                std::deque<Cqe> kept(model.begin(), model.begin() + keep);
                for (auto it = model.begin() + keep; it != model.end(); ++it)
                    if (it->qp_num != qp) kept.push_back(*it);
                const auto gone = static_cast<std::uint32_t>(model.size() - kept.size());
                REQUIRE(cq.purge(qp, keep) == gone);
                model = std::move(kept);
            }
            if (rng() % 97 == 0) {
                const std::uint32_t want = 1 + rng() % 80;
                flush();
                const bool fits = model.size() <= std::bit_ceil(want);
                REQUIRE(cq.resize(want) == fits);
            }
            if (rng() % 8 == 0) REQUIRE(cq.poll_empty() == model.empty());
            if (rng() % 16 == 0) {
                REQUIRE(cq.take_overflow() == overflow_expected);
                overflow_expected = false;
            }
            check_cq(cq, model, staged.size());
            REQUIRE(cq.written() == written);
        }
    }
}
