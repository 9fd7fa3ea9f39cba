// libFuzzer target: replay of an arbitrary capture file through a real
// device. The input is written to a per-process temporary file and opened
// with net::PcapFileSource::open; a file it accepts becomes the source of a
// fresh sim::Simulator (inline engine, so the run is deterministic), and a
// program-like set-up receives it through the verbs API: four WQs covering
// every WQ flag, one indirection table, two RSS QPs (IPv4/TCP and IPv6/UDP)
// with an IPv4 rule and a catch-all rule, one extended CQ. Completions are
// polled and their WQEs re-posted until the engine is idle. After every poll
// round and after teardown the port must balance: frames == delivered +
// drops + held, else __builtin_trap().
#include <endian.h>
#include <infiniband/verbs.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device/device.hpp"
#include "net/pcap_file_source.hpp"
#include "sim/config.hpp"
#include "sim/simulator.hpp"
#include "tests/fuzz/scratch_file.hpp"

// The receive rig's assertions end the run as check() does.
#define RECEIVE_RIG_REQUIRE(cond)                                                                  \
    do {                                                                                           \
        if (!(cond)) __builtin_trap();                                                             \
    } while (0)
#define RECEIVE_RIG_CHECK(cond) RECEIVE_RIG_REQUIRE(cond)
#include "tests/support/receive_rig.hpp"

namespace {

using namespace rdmasim;

void check(bool ok) {
    if (!ok) __builtin_trap();
}

template <class T> T* need(T* p) {
    check(p != nullptr);
    return p;
}

constexpr std::uint32_t kWqs = 4;
constexpr std::uint32_t kDepth = 8;   // WQEs per WQ
constexpr std::uint32_t kSlot = 2048; // bytes per WQE (two SGEs of 1 KiB on WQ 3)
constexpr std::array<std::uint32_t, kWqs> kWqFlags = {
    IBV_WQ_FLAGS_CVLAN_STRIPPING | IBV_WQ_FLAGS_SCATTER_FCS | IBV_WQ_FLAGS_DELAY_DROP |
        IBV_WQ_FLAGS_PCI_WRITE_END_PADDING,
    IBV_WQ_FLAGS_CVLAN_STRIPPING | IBV_WQ_FLAGS_SCATTER_FCS,
    IBV_WQ_FLAGS_DELAY_DROP | IBV_WQ_FLAGS_PCI_WRITE_END_PADDING,
    0,
};

// The rig's catch-all flow, narrowed to `ether_type` when it is not 0.
test::EthFlowAttr eth_flow(std::uint16_t ether_type, std::uint16_t priority) {
    test::EthFlowAttr f = test::catch_all_flow(priority);
    if (ether_type != 0) {
        f.eth.val.ether_type = htobe16(ether_type);
        f.eth.mask.ether_type = 0xffff;
    }
    return f;
}

bool balanced(device::Device& dev) {
    std::lock_guard lock(dev.port.mutex());
    return dev.port.balanced();
}

// Four WQs (every WQ flag covered, filled; two SGEs per WQE on WQ 3), one
// indirection table and one CQ-ex from the rig; no RSS QP of its own.
test::RigOptions rig_options() {
    return {.wqs = kWqs,
            .depth = kDepth,
            .slot_bytes = kSlot,
            .sges = {1, 1, 1, 2},
            .wq_flags = {kWqFlags.begin(), kWqFlags.end()},
            .wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_CVLAN,
            .cqe = 256,
            .rss_qp = false};
}

// The rig's set-up, and over its table two RSS QPs (IPv4/TCP and IPv6/UDP)
// with an IPv4 rule and a catch-all rule.
class Replay {
public:
    explicit Replay(sim::Simulator& sim)
        : sim_(sim), dev_(false), rig_(dev_.ctx, dev_.pd, rig_options()) {
        const std::array<std::uint64_t, 2> fields = {
            IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_SRC_PORT_TCP |
                IBV_RX_HASH_DST_PORT_TCP,
            IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6 | IBV_RX_HASH_SRC_PORT_UDP |
                IBV_RX_HASH_DST_PORT_UDP};
        for (std::size_t q = 0; q < 2; ++q) {
            ibv_qp_init_attr_ex a = test::rss_qp_attr(dev_.pd, rig_.table(), fields[q]);
            qps_[q] = need(ibv_create_qp_ex(dev_.ctx, &a));
        }
        test::EthFlowAttr ipv4 = eth_flow(0x0800, 0);
        test::EthFlowAttr all = eth_flow(0, 1);
        flows_[0] = need(ibv_create_flow(qps_[0], &ipv4.attr));
        flows_[1] = need(ibv_create_flow(qps_[1], &all.attr));
    }

    ~Replay() {
        // Reverse order of set-up; every destroy must succeed (the rig's and
        // the device's after these).
        for (ibv_flow* f : flows_)
            check(ibv_destroy_flow(f) == 0);
        for (ibv_qp* q : qps_)
            check(ibv_destroy_qp(q) == 0);
    }
    Replay(const Replay&) = delete;
    Replay& operator=(const Replay&) = delete;

    // Polls (which pumps the inline engine) and re-posts until the engine is idle.
    void run() {
        device::Device& dev = sim_.device(0);
        for (int round = 0; round < 100'000 && !sim_.engine(0).idle(); ++round) {
            drain();
            check(balanced(dev));
        }
        check(sim_.engine(0).idle());
        drain();
        check(balanced(dev));
    }

private:
    void drain() {
        const auto done = rig_.poll();
        for (const auto& c : done) {
            check(c.wr_id < kWqs * kDepth);
            if (c.status == IBV_WC_SUCCESS) check(c.byte_len <= kSlot);
        }
        for (const auto& c : done)
            rig_.repost(c.wr_id);
    }

    sim::Simulator& sim_;
    test::VerbsDevice dev_;
    test::ReceiveRig rig_;
    std::array<ibv_qp*, 2> qps_{};
    std::array<ibv_flow*, 2> flows_{};
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const fuzz::ScratchFile file("rdmasim_fuzz_replay", ".pcap"); // removed at exit
    if (!file.write(data, size)) return 0;
    auto src = net::PcapFileSource::open(file.path());
    if (!src) {
        check(src.error().code != 0 && !src.error().message.empty());
        return 0;
    }

    sim::Config config;
    config.engine = sim::EngineKind::inline_;
    config.start = sim::StartTrigger::first_flow;
    config.burst = 8;
    config.log_level = "off";
    config.caps.delay_drop_timeout_ns = 100'000;
    std::vector<std::unique_ptr<net::FrameSource>> sources;
    sources.push_back(std::move(src.value()));
    auto created = sim::Simulator::create(config, std::move(sources));
    check(created.ok());
    std::unique_ptr<sim::Simulator> sim = std::move(created.value());
    {
        Replay replay(*sim);
        replay.run();
    }
    // Everything still held went away with its WQ: counted as discarded.
    device::Device& dev = sim->device(0);
    check(balanced(dev));
    check(dev.port.held_frames() == 0);
    return 0;
}
