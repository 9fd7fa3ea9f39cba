// The receive path end to end, as a program sees it through verbs
// (datapath/README.md, "Per-frame order"): CQ-ex, WQ with creation flags, MR, RDY, post, an indirection
// table, an RSS QP and a catch-all flow; golden frames offered on the port of
// the inline (virtual-time) engine. Every check is on exact bytes, a status,
// an errno or a counter, and every test keeps the port balance.
#include <infiniband/verbs.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "datapath/counters.hpp"
#include "device/device.hpp"
#include "support/golden_frames.hpp"
#include "support/receive_rig.hpp"
#include "support/sim_fixture.hpp"

using namespace rdmasim;
using datapath::Drop;
using test::SimFixture;
namespace golden = rdmasim::test::golden;

namespace {

// SimFixture({{"k", "v"}}) is ambiguous with the deleted copy constructor.
using Settings = std::vector<std::pair<std::string, std::string>>;
using Bytes = std::vector<std::uint8_t>;

constexpr std::uint8_t kGuard = 0xa5;
constexpr std::uint64_t kMs = 1'000'000;
constexpr std::uint64_t kT0 = 1'700'000'000'000'000'000ull; // a capture time, ns since the epoch

std::uint64_t drops(SimFixture& fx, Drop d) {
    return fx.port().drops[static_cast<std::size_t>(d)].get();
}

std::uint64_t held(SimFixture& fx) {
    std::lock_guard lock(fx.device().port.mutex());
    return fx.device().port.held_frames();
}

// Page-aligned memory full of guard bytes, registered on a PD.
class Buffer {
public:
    static constexpr std::size_t kSize = 16384;
    explicit Buffer(ibv_pd* pd, int access = IBV_ACCESS_LOCAL_WRITE) : mem_(new Page) {
        std::memset(mem_->b, kGuard, kSize);
        mr_ = ibv_reg_mr(pd, mem_->b, kSize, access);
        REQUIRE(mr_ != nullptr);
    }
    ~Buffer() { ibv_dereg_mr(mr_); }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;

    [[nodiscard]] ibv_sge sge(std::size_t off, std::uint32_t len) const {
        return {reinterpret_cast<std::uint64_t>(mem_->b + off), len, mr_->lkey};
    }
    [[nodiscard]] Bytes at(std::size_t off, std::size_t n) const {
        return {mem_->b + off, mem_->b + off + n};
    }
    [[nodiscard]] bool untouched(std::size_t from, std::size_t to) const {
        return std::all_of(mem_->b + from, mem_->b + to,
                           [](std::uint8_t b) { return b == kGuard; });
    }
    [[nodiscard]] bool untouched_from(std::size_t from) const { return untouched(from, kSize); }
    [[nodiscard]] bool touched(std::size_t from, std::size_t to) const {
        return std::none_of(mem_->b + from, mem_->b + to,
                            [](std::uint8_t b) { return b == kGuard; });
    }
    [[nodiscard]] ibv_mr* mr() const { return mr_; }

private:
    struct alignas(4096) Page {
        std::uint8_t b[kSize];
    };
    std::unique_ptr<Page> mem_;
    ibv_mr* mr_ = nullptr;
};

// One completion, everything a CQ-ex reader can tell.
struct Wc {
    std::uint64_t wr_id = 0;
    int status = -1;
    int opcode = -1;
    std::uint32_t byte_len = 0;
    std::uint32_t qp_num = 0;
    unsigned wc_flags = 0;
    std::uint16_t cvlan = 0;
    std::uint64_t ts = 0;
    bool operator==(const Wc&) const = default;
};

// A WQ reachable from the port: CQ-ex -> WQ -> indirection table -> RSS QP
// -> catch-all flow (an ETH spec with all-zero masks). The test posts its own
// WQEs, from a Buffer.
class Rx {
public:
    Rx(SimFixture& fx, std::uint32_t create_flags, bool ready = true, std::uint32_t max_wr = 16,
       std::uint64_t extra_wc_flags = 0)
        : fx_(fx), rig_(fx.ctx, fx.pd,
                        {.depth = max_wr,
                         .slot_bytes = 0,
                         .sges = {4},
                         .wq_flags = {create_flags},
                         .wc_flags = IBV_WC_EX_WITH_CVLAN | IBV_WC_EX_WITH_BYTE_LEN |
                                     IBV_WC_EX_WITH_QP_NUM | extra_wc_flags,
                         .cqe = 64,
                         .ready = ready,
                         .fill = false}) {}

    int set_state(ibv_wq_state s) { return test::set_wq_state(wq(), s); }
    int post(std::uint64_t wr_id, std::vector<ibv_sge> sges) {
        ibv_recv_wr wr{};
        wr.wr_id = wr_id;
        wr.sg_list = sges.data();
        wr.num_sge = static_cast<int>(sges.size());
        ibv_recv_wr* bad = nullptr;
        return ibv_post_wq_recv(wq(), &wr, &bad);
    }
    // Drains the CQ (one engine pump: start_poll pumps).
    std::vector<Wc> poll() {
        std::vector<Wc> out;
        for (const auto& c : rig_.poll())
            out.push_back(
                {c.wr_id, c.status, c.opcode, c.byte_len, c.qp_num, c.flags, c.cvlan, c.ts});
        return out;
    }
    // Offers one frame, pumps it through and returns the completions.
    std::vector<Wc> receive(const Bytes& frame, std::uint64_t ts = kT0, std::uint8_t fcs_len = 0) {
        fx_.offer(frame, ts, fcs_len);
        fx_.pump();
        return poll();
    }

    [[nodiscard]] ibv_wq* wq() const { return rig_.wq(); }

private:
    SimFixture& fx_;
    test::ReceiveRig rig_;
};

void check_success(const Wc& w, const Rx& rx, std::uint64_t wr_id, std::uint32_t byte_len) {
    CHECK(w.wr_id == wr_id);
    CHECK(w.status == IBV_WC_SUCCESS);
    CHECK(w.opcode == IBV_WC_RECV);
    CHECK(w.byte_len == byte_len);
    CHECK(w.qp_num == rx.wq()->wq_num);
}

} // namespace

TEST_CASE("receive: CVLAN stripping delivers the frame without its tag and the full TCI",
          "[device][receive]") {
    SimFixture fx;
    Buffer buf(fx.pd);
    Rx rx(fx, IBV_WQ_FLAGS_CVLAN_STRIPPING);
    REQUIRE(rx.post(7, {buf.sge(0, 1024)}) == 0);
    const auto wc = rx.receive(golden::concat(golden::kTagged));
    REQUIRE(wc.size() == 1);
    check_success(wc[0], rx, 7, 58);
    CHECK(wc[0].cvlan == golden::kTaggedTci); // PCP 5, DEI 1, VID 123, host order
    CHECK(buf.at(0, 58) == golden::concat(golden::kUntagged));
    CHECK(buf.untouched_from(58));

    // An untagged frame on the same WQ is delivered as it is.
    REQUIRE(rx.post(8, {buf.sge(2048, 1024)}) == 0);
    const auto wc2 = rx.receive(golden::concat(golden::kTcpGood));
    REQUIRE(wc2.size() == 1);
    check_success(wc2[0], rx, 8, 72);
    CHECK(buf.at(2048, 72) == golden::concat(golden::kTcpGood));
    CHECK(buf.untouched_from(2048 + 72));
    CHECK(fx.port().delivered.get() == 2);
    REQUIRE(fx.balanced());
}

TEST_CASE("receive: without CVLAN stripping the tag stays in the data", "[device][receive]") {
    SimFixture fx;
    Buffer buf(fx.pd);
    Rx rx(fx, 0);
    REQUIRE(rx.post(1, {buf.sge(0, 1024)}) == 0);
    const auto wc = rx.receive(golden::concat(golden::kTagged));
    REQUIRE(wc.size() == 1);
    check_success(wc[0], rx, 1, 62);
    CHECK(buf.at(0, 62) == golden::concat(golden::kTagged));
    CHECK(buf.untouched_from(62));
    REQUIRE(fx.balanced());
}

TEST_CASE("receive: scatter FCS writes the CRC-32 after the frame and counts it",
          "[device][receive]") {
    SimFixture fx;
    Buffer buf(fx.pd);
    Rx rx(fx, IBV_WQ_FLAGS_SCATTER_FCS);
    REQUIRE(rx.post(1, {buf.sge(0, 1024)}) == 0);
    const auto wc = rx.receive(golden::concat(golden::kUntagged));
    REQUIRE(wc.size() == 1);
    check_success(wc[0], rx, 1, 62);
    CHECK(buf.at(0, 62) == golden::concat(golden::kUntagged, golden::kUntaggedFcs));
    CHECK(buf.untouched_from(62));

    // A tagged frame, tag kept: the FCS covers the tag.
    REQUIRE(rx.post(2, {buf.sge(2048, 1024)}) == 0);
    const auto wc2 = rx.receive(golden::concat(golden::kTagged));
    REQUIRE(wc2.size() == 1);
    check_success(wc2[0], rx, 2, 66);
    CHECK(buf.at(2048, 66) == golden::concat(golden::kTagged, golden::kTaggedFcs));
    CHECK(buf.untouched_from(2048 + 66));
    REQUIRE(fx.balanced());
}

TEST_CASE("receive: strip and FCS together: the FCS is the wire's, over the tag",
          "[device][receive]") {
    SimFixture fx;
    Buffer buf(fx.pd);
    Rx rx(fx, IBV_WQ_FLAGS_CVLAN_STRIPPING | IBV_WQ_FLAGS_SCATTER_FCS);
    REQUIRE(rx.post(1, {buf.sge(0, 1024)}) == 0);
    const auto wc = rx.receive(golden::concat(golden::kTagged));
    REQUIRE(wc.size() == 1);
    check_success(wc[0], rx, 1, 62);
    CHECK(wc[0].cvlan == golden::kTaggedTci);
    CHECK(buf.at(0, 62) == golden::concat(golden::kUntagged, golden::kTaggedFcs));
    CHECK(buf.untouched_from(62));
    REQUIRE(fx.balanced());
}

TEST_CASE("receive: with caps.deliver_bad_fcs a source-carried FCS is kept as is, even when bad",
          "[device][receive]") {
    SimFixture fx(Settings{{"caps.deliver_bad_fcs", "on"}}); // default: dropped (test_fcs.cpp)
    Buffer buf(fx.pd);
    Rx rx(fx, IBV_WQ_FLAGS_CVLAN_STRIPPING | IBV_WQ_FLAGS_SCATTER_FCS);
    const std::array<std::uint8_t, 4> bad = {0xde, 0xad, 0xbe, 0xef};

    REQUIRE(rx.post(1, {buf.sge(0, 1024)}) == 0);
    const auto good = rx.receive(golden::concat(golden::kTagged, golden::kTaggedFcs), kT0, 4);
    REQUIRE(good.size() == 1);
    check_success(good[0], rx, 1, 62);
    CHECK(buf.at(0, 62) == golden::concat(golden::kUntagged, golden::kTaggedFcs));
    CHECK(buf.untouched_from(62));
    CHECK(fx.port().fcs_bad.get() == 0);

    REQUIRE(rx.post(2, {buf.sge(2048, 1024)}) == 0);
    const auto wc = rx.receive(golden::concat(golden::kTagged, bad), kT0, 4);
    REQUIRE(wc.size() == 1);
    check_success(wc[0], rx, 2, 62);
    CHECK(buf.at(2048, 62) == golden::concat(golden::kUntagged, bad));
    CHECK(buf.untouched_from(2048 + 62));
    CHECK(fx.port().fcs_bad.get() == 1);
    REQUIRE(fx.balanced());
}

TEST_CASE("receive: without SCATTER_FCS a carried FCS never reaches the buffer",
          "[device][receive]") {
    SimFixture fx;
    Buffer buf(fx.pd);
    Rx rx(fx, 0);
    REQUIRE(rx.post(1, {buf.sge(0, 1024)}) == 0);
    const auto wc = rx.receive(golden::concat(golden::kUntagged, golden::kUntaggedFcs), kT0, 4);
    REQUIRE(wc.size() == 1);
    check_success(wc[0], rx, 1, 58);
    CHECK(buf.at(0, 58) == golden::concat(golden::kUntagged));
    CHECK(buf.untouched_from(58));
    REQUIRE(fx.balanced());
}

TEST_CASE("receive: PCI write end padding reaches the next cache line inside the SGE",
          "[device][receive]") {
    SECTION("64 bytes (default)") {
        SimFixture fx;
        Buffer buf(fx.pd);
        Rx rx(fx, IBV_WQ_FLAGS_PCI_WRITE_END_PADDING);
        // Aligned SGE: 58 bytes -> padded to 64.
        REQUIRE(rx.post(1, {buf.sge(0, 1024)}) == 0);
        auto wc = rx.receive(golden::concat(golden::kUntagged));
        REQUIRE(wc.size() == 1);
        check_success(wc[0], rx, 1, 58); // byte_len is not changed by padding
        CHECK(buf.at(0, 58) == golden::concat(golden::kUntagged));
        CHECK(buf.touched(58, 64));
        CHECK(buf.untouched(64, 2048));
        // SGE at +8: the frame ends at 66 -> padded to 128.
        REQUIRE(rx.post(2, {buf.sge(2048 + 8, 1024)}) == 0);
        wc = rx.receive(golden::concat(golden::kUntagged));
        REQUIRE(wc.size() == 1);
        check_success(wc[0], rx, 2, 58);
        CHECK(buf.untouched(2048, 2048 + 8));
        CHECK(buf.at(2048 + 8, 58) == golden::concat(golden::kUntagged));
        CHECK(buf.touched(2048 + 66, 2048 + 128));
        CHECK(buf.untouched(2048 + 128, 4096));
        // The SGE ends before the cache line: padding stays inside it.
        REQUIRE(rx.post(3, {buf.sge(4096, 60)}) == 0);
        wc = rx.receive(golden::concat(golden::kUntagged));
        REQUIRE(wc.size() == 1);
        check_success(wc[0], rx, 3, 58);
        CHECK(buf.at(4096, 58) == golden::concat(golden::kUntagged));
        CHECK(buf.touched(4096 + 58, 4096 + 60));
        CHECK(buf.untouched_from(4096 + 60));
        REQUIRE(fx.balanced());
    }
    SECTION("128 bytes (caps.pad_align)") {
        SimFixture fx(Settings{{"caps.pad_align", "128"}});
        Buffer buf(fx.pd);
        Rx rx(fx, IBV_WQ_FLAGS_PCI_WRITE_END_PADDING);
        REQUIRE(rx.post(1, {buf.sge(0, 1024)}) == 0);
        auto wc = rx.receive(golden::concat(golden::kUntagged));
        REQUIRE(wc.size() == 1);
        check_success(wc[0], rx, 1, 58);
        CHECK(buf.at(0, 58) == golden::concat(golden::kUntagged));
        CHECK(buf.touched(58, 128));
        CHECK(buf.untouched(128, 2048));
        // 72 + 4 FCS = 76 bytes from +64: ends at 140 -> padded to 256.
        REQUIRE(rx.post(2, {buf.sge(2048 + 64, 1024)}) == 0);
        wc = rx.receive(golden::concat(golden::kTcpGood));
        REQUIRE(wc.size() == 1);
        check_success(wc[0], rx, 2, 72);
        CHECK(buf.at(2048 + 64, 72) == golden::concat(golden::kTcpGood));
        CHECK(buf.touched(2048 + 136, 2048 + 256));
        CHECK(buf.untouched(2048 + 256, Buffer::kSize));
        REQUIRE(fx.balanced());
    }
}

TEST_CASE("receive: without end padding no byte after byte_len is touched", "[device][receive]") {
    SimFixture fx(Settings{{"caps.pad_align", "128"}});
    Buffer buf(fx.pd);
    Rx rx(fx, IBV_WQ_FLAGS_SCATTER_FCS);
    REQUIRE(rx.post(1, {buf.sge(8, 1024)}) == 0);
    const auto wc = rx.receive(golden::concat(golden::kTcpGood));
    REQUIRE(wc.size() == 1);
    check_success(wc[0], rx, 1, 76);
    CHECK(buf.untouched(0, 8));
    CHECK(buf.at(8, 76) == golden::concat(golden::kTcpGood, golden::kTcpGoodFcs));
    CHECK(buf.untouched_from(8 + 76));
    REQUIRE(fx.balanced());
}

TEST_CASE("receive: a frame is scattered across three SGEs in order", "[device][receive]") {
    SimFixture fx;
    Buffer buf(fx.pd);
    Rx rx(fx, IBV_WQ_FLAGS_CVLAN_STRIPPING | IBV_WQ_FLAGS_SCATTER_FCS);
    // 62 bytes (stripped frame + FCS) over 10 + 40 + 100: the tag boundary and
    // the FCS both fall inside SGE boundaries' neighbourhoods.
    REQUIRE(rx.post(1, {buf.sge(1000, 10), buf.sge(3000, 40), buf.sge(5000, 100)}) == 0);
    const auto wc = rx.receive(golden::concat(golden::kTagged));
    REQUIRE(wc.size() == 1);
    check_success(wc[0], rx, 1, 62);
    const Bytes expect = golden::concat(golden::kUntagged, golden::kTaggedFcs);
    CHECK(buf.at(1000, 10) == Bytes(expect.begin(), expect.begin() + 10));
    CHECK(buf.at(3000, 40) == Bytes(expect.begin() + 10, expect.begin() + 50));
    CHECK(buf.at(5000, 12) == Bytes(expect.begin() + 50, expect.end()));
    CHECK(buf.untouched(0, 1000));
    CHECK(buf.untouched(1010, 3000));
    CHECK(buf.untouched(3040, 5000));
    CHECK(buf.untouched_from(5012));
    REQUIRE(fx.balanced());
}

TEST_CASE("receive: a frame longer than the WQE completes with LOC_LEN_ERR", "[device][receive]") {
    SimFixture fx;
    Buffer buf(fx.pd);
    Rx rx(fx, IBV_WQ_FLAGS_PCI_WRITE_END_PADDING);
    REQUIRE(rx.post(1, {buf.sge(0, 20), buf.sge(64, 37)}) == 0); // 57 < 58
    REQUIRE(rx.post(2, {buf.sge(2048, 58)}) == 0);
    const auto wc = rx.receive(golden::concat(golden::kUntagged));
    REQUIRE(wc.size() == 1);
    CHECK(wc[0].wr_id == 1);
    CHECK(wc[0].status == IBV_WC_LOC_LEN_ERR);
    CHECK(buf.untouched(0, 2048)); // nothing written, not even padding
    CHECK(drops(fx, Drop::length_error) == 1);
    // The WQE was consumed: the next frame goes to the next one, and fits exactly.
    const auto wc2 = rx.receive(golden::concat(golden::kUntagged));
    REQUIRE(wc2.size() == 1);
    check_success(wc2[0], rx, 2, 58);
    CHECK(buf.at(2048, 58) == golden::concat(golden::kUntagged));
    CHECK(buf.untouched_from(2048 + 58));
    REQUIRE(fx.balanced());
}

TEST_CASE("receive: an SGE failing the MR check completes with LOC_PROT_ERR, writes nothing and "
          "stops the WQ",
          "[device][receive]") {
    SimFixture fx;
    Buffer buf(fx.pd);
    Buffer read_only(fx.pd, 0);
    ibv_pd* other_pd = ibv_alloc_pd(fx.ctx);
    REQUIRE(other_pd != nullptr);
    {
        Buffer foreign(other_pd);
        ibv_sge bad_key = buf.sge(0, 1024);
        bad_key.lkey = buf.mr()->lkey + 1;
        ibv_sge beyond = buf.sge(Buffer::kSize - 16, 1024); // runs past the MR
        const std::vector<std::vector<ibv_sge>> bad = {
            {bad_key}, {read_only.sge(0, 1024)}, {foreign.sge(0, 1024)}, {buf.sge(0, 20), beyond}};
        for (std::uint64_t id = 1; id <= bad.size(); ++id) {
            INFO("wr " << id);
            Rx rx(fx, 0); // a fresh WQ: the error stops the one it happens on
            REQUIRE(rx.post(id, bad[id - 1]) == 0);
            REQUIRE(rx.post(5, {buf.sge(0, 1024)}) == 0);
            const auto wc = rx.receive(golden::concat(golden::kUntagged));
            REQUIRE(wc.size() == 2);
            CHECK(wc[0].wr_id == id);
            CHECK(wc[0].status == IBV_WC_LOC_PROT_ERR);
            CHECK(wc[0].byte_len == 0);
            CHECK(wc[1].wr_id == 5); // flushed: the WQ is in ERR (flush_in_error_en)
            CHECK(wc[1].status == IBV_WC_WR_FLUSH_ERR);
            CHECK(rx.wq()->state == IBV_WQS_ERR);
        }
        CHECK(buf.untouched(0, Buffer::kSize));
        CHECK(read_only.untouched(0, Buffer::kSize));
        CHECK(foreign.untouched(0, Buffer::kSize));
        CHECK(drops(fx, Drop::protection_error) == 4);
        CHECK(fx.port().flushed_wqes.get() == 4);
        REQUIRE(fx.balanced());
    }
    CHECK(ibv_dealloc_pd(other_pd) == 0);
}

TEST_CASE("receive: delay drop holds frames until WQEs are posted, then delivers in order",
          "[device][receive]") {
    SimFixture fx;
    Buffer buf(fx.pd);
    Rx rx(fx, IBV_WQ_FLAGS_DELAY_DROP);
    fx.offer(golden::concat(golden::kUntagged), kT0);
    fx.offer(golden::concat(golden::kTcpGood), kT0 + 1 * kMs);
    fx.pump();
    CHECK(rx.poll().empty());
    CHECK(fx.port().delay_drop_waits.get() == 2);
    CHECK(drops(fx, Drop::out_of_buffer) == 0);
    CHECK(held(fx) == 2);
    REQUIRE(fx.balanced());

    // Two WRs in one post: the held frames go to them in arrival order.
    std::array<ibv_sge, 2> s = {buf.sge(0, 1024), buf.sge(2048, 1024)};
    std::array<ibv_recv_wr, 2> wr{};
    wr[0].wr_id = 11;
    wr[0].sg_list = &s[0];
    wr[0].num_sge = 1;
    wr[0].next = &wr[1];
    wr[1].wr_id = 12;
    wr[1].sg_list = &s[1];
    wr[1].num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    REQUIRE(ibv_post_wq_recv(rx.wq(), wr.data(), &bad) == 0);
    CHECK(held(fx) == 0); // delivered at the post, before any poll
    const auto wc = rx.poll();
    REQUIRE(wc.size() == 2);
    check_success(wc[0], rx, 11, 58);
    check_success(wc[1], rx, 12, 72);
    CHECK(buf.at(0, 58) == golden::concat(golden::kUntagged));
    CHECK(buf.at(2048, 72) == golden::concat(golden::kTcpGood));
    CHECK(buf.untouched(58, 2048));
    CHECK(buf.untouched_from(2048 + 72));
    CHECK(fx.port().delivered.get() == 2);
    CHECK(drops(fx, Drop::delay_drop_timeout) == 0);
    REQUIRE(fx.balanced());

    // One WQE for three held frames: one delivered, two keep waiting, in order.
    fx.offer(golden::concat(golden::kTagged), kT0 + 2 * kMs);
    fx.offer(golden::concat(golden::kUntagged), kT0 + 3 * kMs);
    fx.offer(golden::concat(golden::kTcpGood), kT0 + 4 * kMs);
    fx.pump();
    CHECK(held(fx) == 3);
    REQUIRE(rx.post(13, {buf.sge(4096, 1024)}) == 0);
    CHECK(held(fx) == 2);
    auto more = rx.poll();
    REQUIRE(more.size() == 1);
    check_success(more[0], rx, 13, 62);
    REQUIRE(rx.post(14, {buf.sge(6144, 1024)}) == 0);
    REQUIRE(rx.post(15, {buf.sge(8192, 1024)}) == 0);
    more = rx.poll();
    REQUIRE(more.size() == 2);
    check_success(more[0], rx, 14, 58);
    check_success(more[1], rx, 15, 72);
    CHECK(buf.at(4096, 62) == golden::concat(golden::kTagged));
    CHECK(buf.at(6144, 58) == golden::concat(golden::kUntagged));
    CHECK(buf.at(8192, 72) == golden::concat(golden::kTcpGood));
    CHECK(fx.port().delay_drop_waits.get() == 5);
    REQUIRE(fx.balanced());
}

TEST_CASE("receive: held frames time out after 100 ms of virtual time", "[device][receive]") {
    SimFixture fx;
    Buffer buf(fx.pd);
    Rx rx(fx, IBV_WQ_FLAGS_DELAY_DROP);
    fx.offer(golden::concat(golden::kUntagged), kT0);
    fx.pump();
    fx.offer(golden::concat(golden::kUntagged), kT0 + 100 * kMs - 1); // 1 ns before the timeout
    fx.pump();
    CHECK(drops(fx, Drop::delay_drop_timeout) == 0);
    CHECK(held(fx) == 2);
    REQUIRE(fx.balanced());

    // A frame at exactly T0 + 100 ms: the timeout fires first and drops every
    // waiting frame; the new frame then waits on its own (delay drop re-armed).
    fx.offer(golden::concat(golden::kTcpGood), kT0 + 100 * kMs);
    fx.pump();
    CHECK(drops(fx, Drop::delay_drop_timeout) == 2);
    CHECK(held(fx) == 1);
    CHECK(fx.port().delay_drop_waits.get() == 3);
    REQUIRE(fx.balanced());

    // With no more frames, idle pumps move the clock by idle_tick (10 us): the
    // last frame times out on exactly the 10000th.
    int pumps = 0;
    while (drops(fx, Drop::delay_drop_timeout) == 2 && pumps < 20000) {
        fx.pump();
        ++pumps;
    }
    CHECK(pumps == 10000);
    CHECK(drops(fx, Drop::delay_drop_timeout) == 3);
    CHECK(held(fx) == 0);

    // Nothing is left to deliver to a WQE posted now.
    REQUIRE(rx.post(1, {buf.sge(0, 1024)}) == 0);
    CHECK(rx.poll().empty());
    CHECK(buf.untouched_from(0));
    CHECK(fx.port().delivered.get() == 0);
    REQUIRE(fx.balanced());
}

TEST_CASE("receive: caps.delay_drop_timeout_us sets the timeout", "[device][receive]") {
    SimFixture fx(Settings{{"caps.delay_drop_timeout_us", "1000"}});
    Rx rx(fx, IBV_WQ_FLAGS_DELAY_DROP);
    fx.offer(golden::concat(golden::kUntagged), kT0);
    fx.pump();
    fx.offer(golden::concat(golden::kUntagged), kT0 + 999'000);
    fx.pump();
    CHECK(drops(fx, Drop::delay_drop_timeout) == 0);
    CHECK(held(fx) == 2);
    fx.pump(); // idle: T0 + 1009 us
    CHECK(drops(fx, Drop::delay_drop_timeout) == 2);
    CHECK(held(fx) == 0);
    REQUIRE(fx.balanced());
}

TEST_CASE("receive: after a timeout delay drop is re-armed by default, or left off",
          "[device][receive]") {
    SECTION("re-armed (the driver's behaviour)") {
        SimFixture fx;
        Rx rx(fx, IBV_WQ_FLAGS_DELAY_DROP);
        fx.offer(golden::concat(golden::kUntagged), kT0);
        fx.pump();
        fx.offer(golden::concat(golden::kUntagged), kT0 + 150 * kMs);
        fx.pump();
        CHECK(drops(fx, Drop::delay_drop_timeout) == 1);
        CHECK(drops(fx, Drop::out_of_buffer) == 0);
        CHECK(held(fx) == 1);
        CHECK(fx.port().delay_drop_waits.get() == 2);
        REQUIRE(fx.balanced());
    }
    SECTION("caps.delay_drop_rearm=off: the next frame is out of buffer") {
        SimFixture fx(Settings{{"caps.delay_drop_rearm", "off"}});
        Buffer buf(fx.pd);
        Rx rx(fx, IBV_WQ_FLAGS_DELAY_DROP);
        fx.offer(golden::concat(golden::kUntagged), kT0);
        fx.pump();
        fx.offer(golden::concat(golden::kUntagged), kT0 + 150 * kMs);
        fx.pump();
        CHECK(drops(fx, Drop::delay_drop_timeout) == 1);
        CHECK(drops(fx, Drop::out_of_buffer) == 1);
        CHECK(held(fx) == 0);
        CHECK(fx.port().delay_drop_waits.get() == 1);
        // With a WQE the frame is delivered as usual; without, dropped at once.
        REQUIRE(rx.post(1, {buf.sge(0, 1024)}) == 0);
        const auto wc = rx.receive(golden::concat(golden::kTcpGood), kT0 + 151 * kMs);
        REQUIRE(wc.size() == 1);
        check_success(wc[0], rx, 1, 72);
        CHECK(rx.receive(golden::concat(golden::kTcpGood), kT0 + 152 * kMs).empty());
        CHECK(drops(fx, Drop::out_of_buffer) == 2);
        CHECK(held(fx) == 0);
        REQUIRE(fx.balanced());
    }
}

TEST_CASE("receive: without DELAY_DROP no WQE means rx_out_of_buffer at once",
          "[device][receive]") {
    SimFixture fx;
    Buffer buf(fx.pd);
    Rx rx(fx, 0);
    CHECK(rx.receive(golden::concat(golden::kUntagged)).empty());
    CHECK(drops(fx, Drop::out_of_buffer) == 1);
    CHECK(fx.port().delay_drop_waits.get() == 0);
    CHECK(held(fx) == 0);
    // A WQE posted afterwards gets nothing: the frame is gone.
    REQUIRE(rx.post(1, {buf.sge(0, 1024)}) == 0);
    CHECK(rx.poll().empty());
    CHECK(buf.untouched_from(0));
    REQUIRE(fx.balanced());
}

TEST_CASE("receive: modify_wq turns CVLAN stripping off and on for the next frame",
          "[device][receive]") {
    SimFixture fx;
    Buffer buf(fx.pd);
    Rx rx(fx, IBV_WQ_FLAGS_CVLAN_STRIPPING);
    for (std::uint64_t i = 0; i < 3; ++i)
        REQUIRE(rx.post(i, {buf.sge(i * 2048, 1024)}) == 0);
    auto wc = rx.receive(golden::concat(golden::kTagged));
    REQUIRE(wc.size() == 1);
    check_success(wc[0], rx, 0, 58);
    CHECK(wc[0].cvlan == golden::kTaggedTci);

    ibv_wq_attr a{};
    a.attr_mask = IBV_WQ_ATTR_FLAGS;
    a.flags = 0;
    a.flags_mask = IBV_WQ_FLAGS_CVLAN_STRIPPING;
    REQUIRE(ibv_modify_wq(rx.wq(), &a) == 0);
    CHECK(rx.wq()->state == IBV_WQS_RDY);
    wc = rx.receive(golden::concat(golden::kTagged));
    REQUIRE(wc.size() == 1);
    check_success(wc[0], rx, 1, 62);
    CHECK(buf.at(2048, 62) == golden::concat(golden::kTagged));

    a.flags = IBV_WQ_FLAGS_CVLAN_STRIPPING;
    REQUIRE(ibv_modify_wq(rx.wq(), &a) == 0);
    wc = rx.receive(golden::concat(golden::kTagged));
    REQUIRE(wc.size() == 1);
    check_success(wc[0], rx, 2, 58);
    CHECK(wc[0].cvlan == golden::kTaggedTci);
    CHECK(buf.at(4096, 58) == golden::concat(golden::kUntagged));
    REQUIRE(fx.balanced());
}

TEST_CASE("receive: IBV_WC_IP_CSUM_OK is never set on a WQ's completions, good checksums or not",
          "[device][receive]") {
    // mlx5 reports it only for a raw QP's own receive queue (handle_responder,
    // providers/mlx5/cq.c); the raw QP's verdicts are in test_ip_csum.cpp.
    SimFixture fx;
    Buffer buf(fx.pd);
    Rx rx(fx, 0);
    struct Case {
        Bytes frame;
        bool ok;
    };
    const std::vector<Case> cases = {
        {golden::concat(golden::kTcpGood), false},
        {golden::concat(golden::kTcpBadL4), false},
        {golden::concat(golden::kUntagged), false}, // UDP
        {golden::concat(golden::kTagged), false},   // through the tag
    };
    for (std::size_t i = 0; i < cases.size(); ++i) {
        INFO("case " << i);
        REQUIRE(rx.post(i, {buf.sge(i * 2048, 1024)}) == 0);
        const auto wc = rx.receive(cases[i].frame);
        REQUIRE(wc.size() == 1);
        check_success(wc[0], rx, i, static_cast<std::uint32_t>(cases[i].frame.size()));
        CHECK(((wc[0].wc_flags & IBV_WC_IP_CSUM_OK) != 0) == cases[i].ok);
        CHECK(buf.at(i * 2048, cases[i].frame.size()) == cases[i].frame);
    }
    REQUIRE(fx.balanced());
}

TEST_CASE("receive: with caps.ip_csum=off IP_CSUM_OK is never set", "[device][receive]") {
    SimFixture fx(Settings{{"caps.ip_csum", "off"}});
    Buffer buf(fx.pd);
    Rx rx(fx, 0);
    REQUIRE(rx.post(1, {buf.sge(0, 1024)}) == 0);
    const auto wc = rx.receive(golden::concat(golden::kTcpGood));
    REQUIRE(wc.size() == 1);
    check_success(wc[0], rx, 1, 72);
    CHECK((wc[0].wc_flags & IBV_WC_IP_CSUM_OK) == 0);
    REQUIRE(fx.balanced());
}

TEST_CASE("receive: frames to a WQ in RESET are dropped as wq_not_ready", "[device][receive]") {
    SimFixture fx;
    Buffer buf(fx.pd);
    Rx rx(fx, IBV_WQ_FLAGS_DELAY_DROP, false);
    REQUIRE(rx.wq()->state == IBV_WQS_RESET);
    REQUIRE(rx.post(1, {buf.sge(0, 1024)}) == 0);
    CHECK(rx.receive(golden::concat(golden::kUntagged)).empty());
    CHECK(drops(fx, Drop::wq_not_ready) == 1);
    CHECK(held(fx) == 0); // not held, even with DELAY_DROP
    CHECK(buf.untouched_from(0));
    REQUIRE(fx.balanced());

    // RDY empties the ring: what was posted in RESET is gone.
    REQUIRE(rx.set_state(IBV_WQS_RDY) == 0);
    CHECK(rx.receive(golden::concat(golden::kUntagged), kT0 + kMs).empty());
    CHECK(held(fx) == 1);
    REQUIRE(rx.post(2, {buf.sge(0, 1024)}) == 0);
    const auto wc = rx.poll();
    REQUIRE(wc.size() == 1);
    check_success(wc[0], rx, 2, 58);
    REQUIRE(fx.balanced());
}

namespace {

// A run that touches every stage; returns the completion stream serialised
// field by field, followed by the receive buffer and the counters.
Bytes scripted_run() {
    SimFixture fx;
    Bytes out;
    auto put = [&out](std::uint64_t v, int n) {
        for (int i = 0; i < n; ++i)
            out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    };
    {
        Buffer buf(fx.pd);
        Rx rx(fx,
              IBV_WQ_FLAGS_CVLAN_STRIPPING | IBV_WQ_FLAGS_SCATTER_FCS | IBV_WQ_FLAGS_DELAY_DROP |
                  IBV_WQ_FLAGS_PCI_WRITE_END_PADDING,
              true, 64, IBV_WC_EX_WITH_COMPLETION_TIMESTAMP);
        const std::vector<Bytes> frames = {
            golden::concat(golden::kTagged), golden::concat(golden::kUntagged),
            golden::concat(golden::kTcpGood), golden::concat(golden::kTcpBadL4)};
        std::vector<Wc> all;
        std::uint64_t id = 100;
        for (int round = 0; round < 40; ++round) {
            const std::uint64_t ts = kT0 + static_cast<std::uint64_t>(round) * 7 * kMs;
            fx.offer(frames[round % 4], ts);
            if (round % 5 == 0) fx.offer(frames[(round + 1) % 4], ts + 3);
            if (round % 3 != 0) {
                const auto off = static_cast<std::size_t>(id % 7) * 2048;
                const std::uint32_t len = round % 11 == 0 ? 40 : 1024; // some too short
                REQUIRE(rx.post(id++, {buf.sge(off, len)}) == 0);
            }
            for (const Wc& w : rx.poll())
                all.push_back(w);
        }
        for (int i = 0; i < 20000; ++i)
            fx.pump(); // let the held frames time out
        for (const Wc& w : rx.poll())
            all.push_back(w);
        REQUIRE(fx.balanced());
        REQUIRE(all.size() > 10);
        for (const Wc& w : all) {
            put(w.wr_id, 8);
            put(static_cast<std::uint64_t>(w.status), 4);
            put(static_cast<std::uint64_t>(w.opcode), 4);
            put(w.byte_len, 4);
            put(w.qp_num, 4);
            put(w.wc_flags, 4);
            put(w.cvlan, 2);
            put(w.ts, 8);
        }
        const Bytes mem = buf.at(0, Buffer::kSize);
        out.insert(out.end(), mem.begin(), mem.end());
    }
    const auto& c = fx.port();
    put(c.frames.get(), 8);
    put(c.delivered.get(), 8);
    put(c.delivered_bytes.get(), 8);
    put(c.delay_drop_waits.get(), 8);
    for (const auto& d : c.drops)
        put(d.get(), 8);
    return out;
}

} // namespace

TEST_CASE("receive: two identical runs give bit-identical completion streams",
          "[device][receive]") {
    const Bytes a = scripted_run();
    const Bytes b = scripted_run();
    REQUIRE(a.size() > Buffer::kSize);
    CHECK(a == b);
}
