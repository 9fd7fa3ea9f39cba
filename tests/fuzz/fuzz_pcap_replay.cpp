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
#include <infiniband/verbs.h>
#include <endian.h>
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

namespace {

using namespace rdmasim;

void check(bool ok) {
    if (!ok) __builtin_trap();
}

template <class T> T* need(T* p) {
    check(p != nullptr);
    return p;
}

const std::string& temp_path() {
    static const std::string path = [] {
        const char* dir = std::getenv("TMPDIR");
        return std::string(dir && *dir ? dir : "/tmp") + "/rdmasim_fuzz_replay." +
               std::to_string(::getpid()) + ".pcap";
    }();
    return path;
}

// The temporary file goes when the fuzzer exits normally.
void remove_temp_file() {
    std::remove(temp_path().c_str());
}

bool write_file(const std::string& path, const std::uint8_t* data, std::size_t size) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) return false;
    const bool ok = std::fwrite(data, 1, size, f) == size;
    return std::fclose(f) == 0 && ok;
}

constexpr std::size_t kWqs = 4;
constexpr std::size_t kDepth = 8;       // WQEs per WQ
constexpr std::uint32_t kSlot = 2048;   // bytes per WQE (two SGEs of 1 KiB on WQ 3)
constexpr std::array<std::uint32_t, kWqs> kWqFlags = {
    IBV_WQ_FLAGS_CVLAN_STRIPPING | IBV_WQ_FLAGS_SCATTER_FCS | IBV_WQ_FLAGS_DELAY_DROP |
        IBV_WQ_FLAGS_PCI_WRITE_END_PADDING,
    IBV_WQ_FLAGS_CVLAN_STRIPPING | IBV_WQ_FLAGS_SCATTER_FCS,
    IBV_WQ_FLAGS_DELAY_DROP | IBV_WQ_FLAGS_PCI_WRITE_END_PADDING,
    0,
};

constexpr std::array<std::uint8_t, 40> kKey = {
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
    0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
    0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa};

struct EthFlow {
    ibv_flow_attr attr;
    ibv_flow_spec_eth eth;
};

EthFlow eth_flow(std::uint16_t ether_type, std::uint16_t priority) {
    EthFlow f;
    std::memset(&f, 0, sizeof f);
    f.attr.type = IBV_FLOW_ATTR_NORMAL;
    f.attr.size = sizeof f;
    f.attr.priority = priority;
    f.attr.num_of_specs = 1;
    f.attr.port = 1;
    f.eth.type = IBV_FLOW_SPEC_ETH;
    f.eth.size = sizeof f.eth;
    if (ether_type != 0) {
        f.eth.val.ether_type = htobe16(ether_type);
        f.eth.mask.ether_type = 0xffff;
    }
    return f;
}

bool balanced(device::Device& dev) {
    std::lock_guard lock(dev.port.lock);
    const auto& c = dev.port.counters;
    return c.frames.get() == c.delivered.get() + c.drops_total() + device::port_held_frames(dev);
}

class Replay {
public:
    Replay(sim::Simulator& sim, std::uint8_t* mem) : sim_(sim), mem_(mem) {
        int n = 0;
        ibv_device** list = need(ibv_get_device_list(&n));
        check(n >= 1);
        ctx_ = need(ibv_open_device(list[0]));
        ibv_free_device_list(list);

        ibv_cq_init_attr_ex ca{};
        ca.cqe = 256;
        ca.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_CVLAN;
        cq_ = need(ibv_create_cq_ex(ctx_, &ca));
        pd_ = need(ibv_alloc_pd(ctx_));
        const int access = IBV_ACCESS_LOCAL_WRITE;
        mr_ = need(ibv_reg_mr(pd_, mem_, kWqs * kDepth * kSlot, access));

        for (std::size_t i = 0; i < kWqs; ++i) {
            ibv_wq_init_attr a{};
            a.wq_type = IBV_WQT_RQ;
            a.max_wr = kDepth;
            a.max_sge = i == 3 ? 2 : 1;
            a.pd = pd_;
            a.cq = ibv_cq_ex_to_cq(cq_);
            a.comp_mask = IBV_WQ_INIT_ATTR_FLAGS;
            a.create_flags = kWqFlags[i];
            wqs_[i] = need(ibv_create_wq(ctx_, &a));
            ibv_wq_attr m{};
            m.attr_mask = IBV_WQ_ATTR_STATE;
            m.wq_state = IBV_WQS_RDY;
            check(ibv_modify_wq(wqs_[i], &m) == 0);
            for (std::size_t s = 0; s < kDepth; ++s)
                post(i, s);
        }

        ibv_rwq_ind_table_init_attr ta{};
        ta.log_ind_tbl_size = 2;
        ta.ind_tbl = wqs_.data();
        table_ = need(ibv_create_rwq_ind_table(ctx_, &ta));
        const std::array<std::uint64_t, 2> fields = {
            IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_SRC_PORT_TCP |
                IBV_RX_HASH_DST_PORT_TCP,
            IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6 | IBV_RX_HASH_SRC_PORT_UDP |
                IBV_RX_HASH_DST_PORT_UDP};
        for (std::size_t q = 0; q < 2; ++q) {
            ibv_qp_init_attr_ex a{};
            a.qp_type = IBV_QPT_RAW_PACKET;
            a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH;
            a.pd = pd_;
            a.rwq_ind_tbl = table_;
            a.rx_hash_conf.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
            a.rx_hash_conf.rx_hash_key_len = kKey.size();
            a.rx_hash_conf.rx_hash_key = const_cast<std::uint8_t*>(kKey.data());
            a.rx_hash_conf.rx_hash_fields_mask = fields[q];
            qps_[q] = need(ibv_create_qp_ex(ctx_, &a));
        }
        EthFlow ipv4 = eth_flow(0x0800, 0);
        EthFlow all = eth_flow(0, 1);
        flows_[0] = need(ibv_create_flow(qps_[0], &ipv4.attr));
        flows_[1] = need(ibv_create_flow(qps_[1], &all.attr));
    }

    ~Replay() {
        // Reverse order of set-up; every destroy must succeed.
        for (ibv_flow* f : flows_)
            check(ibv_destroy_flow(f) == 0);
        for (ibv_qp* q : qps_)
            check(ibv_destroy_qp(q) == 0);
        check(ibv_destroy_rwq_ind_table(table_) == 0);
        for (ibv_wq* w : wqs_)
            check(ibv_destroy_wq(w) == 0);
        check(ibv_dereg_mr(mr_) == 0);
        check(ibv_dealloc_pd(pd_) == 0);
        check(ibv_destroy_cq(ibv_cq_ex_to_cq(cq_)) == 0);
        check(ibv_close_device(ctx_) == 0);
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
    void post(std::size_t wq, std::size_t slot) {
        std::uint8_t* base = mem_ + (wq * kDepth + slot) * kSlot;
        std::array<ibv_sge, 2> sge{};
        ibv_recv_wr wr{};
        wr.wr_id = wq * kDepth + slot;
        wr.sg_list = sge.data();
        if (wq == 3) {
            sge[0] = {reinterpret_cast<std::uint64_t>(base), kSlot / 2, mr_->lkey};
            sge[1] = {reinterpret_cast<std::uint64_t>(base + kSlot / 2), kSlot / 2, mr_->lkey};
            wr.num_sge = 2;
        } else {
            sge[0] = {reinterpret_cast<std::uint64_t>(base), kSlot, mr_->lkey};
            wr.num_sge = 1;
        }
        ibv_recv_wr* bad = nullptr;
        check(ibv_post_wq_recv(wqs_[wq], &wr, &bad) == 0);
    }

    void drain() {
        ibv_poll_cq_attr pa{};
        std::vector<std::uint64_t> done;
        int rc = ibv_start_poll(cq_, &pa);
        if (rc == ENOENT) return;
        check(rc == 0);
        do {
            check(cq_->wr_id < kWqs * kDepth);
            if (cq_->status == IBV_WC_SUCCESS) {
                const std::uint32_t len = ibv_wc_read_byte_len(cq_);
                check(len <= kSlot);
                (void)ibv_wc_read_cvlan(cq_);
            }
            done.push_back(cq_->wr_id);
            rc = ibv_next_poll(cq_);
        } while (rc == 0);
        check(rc == ENOENT);
        ibv_end_poll(cq_);
        for (const std::uint64_t id : done)
            post(id / kDepth, id % kDepth);
    }

    sim::Simulator& sim_;
    std::uint8_t* mem_;
    ibv_context* ctx_ = nullptr;
    ibv_cq_ex* cq_ = nullptr;
    ibv_pd* pd_ = nullptr;
    ibv_mr* mr_ = nullptr;
    std::array<ibv_wq*, kWqs> wqs_{};
    ibv_rwq_ind_table* table_ = nullptr;
    std::array<ibv_qp*, 2> qps_{};
    std::array<ibv_flow*, 2> flows_{};
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static std::vector<std::uint8_t> mem(kWqs * kDepth * kSlot);
    static const int registered = std::atexit(remove_temp_file);
    (void)registered;
    if (!write_file(temp_path(), data, size)) return 0;
    auto src = net::PcapFileSource::open(temp_path());
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
        Replay replay(*sim, mem.data());
        replay.run();
    }
    // Everything still held went away with its WQ: counted as discarded.
    device::Device& dev = sim->device(0);
    check(balanced(dev));
    check(device::port_held_frames(dev) == 0);
    return 0;
}
