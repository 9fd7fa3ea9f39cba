#include "tools/replay.hpp"

#include <infiniband/verbs.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "net/pcap_writer.hpp"
#include "sim/simulator.hpp"
#include "sim/stats.hpp"

namespace rdmasim::tools {

namespace {

// Microsoft's RSS verification key: a well-known, documented default.
constexpr std::uint8_t kRssKey[40] = {
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
    0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
    0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa};

struct Fail {
    std::string message;
};

[[noreturn]] void fail(std::string message) { throw Fail{std::move(message)}; }

template <class T> T* check(T* p, std::string_view what) {
    if (p == nullptr) fail(fmt::format("{}: {}", what, std::strerror(errno)));
    return p;
}
void check(int err, std::string_view what) {
    if (err != 0) fail(fmt::format("{}: {}", what, std::strerror(err)));
}

std::uint32_t parse_flags(const std::vector<std::string>& names) {
    std::uint32_t f = 0;
    for (const auto& n : names) {
        if (n == "cvlan") f |= IBV_WQ_FLAGS_CVLAN_STRIPPING;
        else if (n == "fcs") f |= IBV_WQ_FLAGS_SCATTER_FCS;
        else if (n == "pad") f |= IBV_WQ_FLAGS_PCI_WRITE_END_PADDING;
        else if (n == "delay-drop") f |= IBV_WQ_FLAGS_DELAY_DROP;
        else fail(fmt::format("--flags: unknown flag '{}' (cvlan, fcs, pad, delay-drop)", n));
    }
    return f;
}

// One steering class: a flow of specs and the RSS hash it uses.
enum class L3 { any, ipv4, ipv6 };
enum class L4 { any, tcp, udp };

// An ibv_flow_attr with its specs packed right after it, as verbs lays them out.
struct FlowBuf {
    alignas(8) std::uint8_t bytes[sizeof(ibv_flow_attr) + sizeof(ibv_flow_spec_eth) +
                                  sizeof(ibv_flow_spec_ipv6) + sizeof(ibv_flow_spec_tcp_udp)];
    ibv_flow_attr* attr() { return reinterpret_cast<ibv_flow_attr*>(bytes); }
};

// A flow with zero masks (match on protocol presence only), as DPDK's mlx5
// driver installs one per RSS hash class.
FlowBuf make_flow(L3 l3, L4 l4, std::uint16_t priority) {
    FlowBuf f;
    std::memset(&f, 0, sizeof f);
    ibv_flow_attr& attr = *f.attr();
    attr.type = IBV_FLOW_ATTR_NORMAL;
    attr.priority = priority;
    attr.port = 1;
    std::uint8_t* p = f.bytes + sizeof(ibv_flow_attr);
    auto* eth = reinterpret_cast<ibv_flow_spec_eth*>(p);
    eth->type = IBV_FLOW_SPEC_ETH;
    eth->size = sizeof *eth;
    p += sizeof *eth;
    attr.num_of_specs = 1;
    if (l3 == L3::ipv4) {
        auto* ip = reinterpret_cast<ibv_flow_spec_ipv4*>(p);
        ip->type = IBV_FLOW_SPEC_IPV4;
        ip->size = sizeof *ip;
        p += sizeof *ip;
        ++attr.num_of_specs;
    } else if (l3 == L3::ipv6) {
        auto* ip = reinterpret_cast<ibv_flow_spec_ipv6*>(p);
        ip->type = IBV_FLOW_SPEC_IPV6;
        ip->size = sizeof *ip;
        p += sizeof *ip;
        ++attr.num_of_specs;
    }
    if (l4 != L4::any) {
        auto* t = reinterpret_cast<ibv_flow_spec_tcp_udp*>(p);
        t->type = l4 == L4::tcp ? IBV_FLOW_SPEC_TCP : IBV_FLOW_SPEC_UDP;
        t->size = sizeof *t;
        p += sizeof *t;
        ++attr.num_of_specs;
    }
    attr.size = static_cast<std::uint16_t>(p - f.bytes);
    return f;
}

std::uint64_t hash_fields(L3 l3, L4 l4, const std::vector<std::string>& sel) {
    auto has = [&](std::string_view s) { return std::find(sel.begin(), sel.end(), s) != sel.end(); };
    std::uint64_t f = 0;
    if (l3 == L3::ipv4) {
        if (has("src-ip")) f |= IBV_RX_HASH_SRC_IPV4;
        if (has("dst-ip")) f |= IBV_RX_HASH_DST_IPV4;
    } else if (l3 == L3::ipv6) {
        if (has("src-ip")) f |= IBV_RX_HASH_SRC_IPV6;
        if (has("dst-ip")) f |= IBV_RX_HASH_DST_IPV6;
    }
    if (l4 == L4::tcp) {
        if (has("src-port")) f |= IBV_RX_HASH_SRC_PORT_TCP;
        if (has("dst-port")) f |= IBV_RX_HASH_DST_PORT_TCP;
    } else if (l4 == L4::udp) {
        if (has("src-port")) f |= IBV_RX_HASH_SRC_PORT_UDP;
        if (has("dst-port")) f |= IBV_RX_HASH_DST_PORT_UDP;
    }
    return f;
}

std::string hex_head(const std::uint8_t* p, std::uint32_t len, std::uint32_t max) {
    std::string s;
    for (std::uint32_t i = 0; i < len && i < max; ++i) s += fmt::format("{:02x}", p[i]);
    if (len > max) s += "..";
    return s;
}

class ProgressBar {
public:
    explicit ProgressBar(bool on) : on_(on) {}
    void update(double fraction, std::uint64_t frames) {
        if (!on_) return;
        const auto now = std::chrono::steady_clock::now();
        if (now - last_ < std::chrono::milliseconds(100)) return;
        last_ = now;
        shown_ = true;
        const int width = 40;
        const int filled = fraction < 0 ? 0 : static_cast<int>(fraction * width);
        std::fprintf(stderr, "\r[%s%s] %3d%%  %llu frames", std::string(filled, '#').c_str(),
                     std::string(width - filled, ' ').c_str(),
                     fraction < 0 ? 0 : static_cast<int>(fraction * 100),
                     static_cast<unsigned long long>(frames));
    }
    void done() {
        if (shown_) std::fprintf(stderr, "\r%*s\r", 70, "");
    }

private:
    bool on_;
    bool shown_ = false;
    std::chrono::steady_clock::time_point last_{};
};

int replay(const ReplayOptions& o) {
    if (o.wqs == 0 || o.wqs > 1024) fail("--wqs: expected 1..1024");
    if (o.ring == 0) fail("--ring: expected at least 1");
    if (o.buf == 0 || o.buf > (1u << 20)) fail("--buf: expected 1..1048576 bytes");
    const std::uint32_t flags = parse_flags(o.flags);
    for (const auto& f : o.rss_fields)
        if (f != "src-ip" && f != "dst-ip" && f != "src-port" && f != "dst-port")
            fail(fmt::format("--rss-fields: unknown field '{}' (src-ip, dst-ip, src-port, dst-port)", f));

    sim::Config cfg;
    if (auto r = cfg.apply_environment(); !r) fail(r.error().message);
    for (auto [k, v] : {std::pair<std::string, std::string>{"engine", o.engine},
                        {"speed", o.speed}, {"pcap", o.file}, {"start", "manual"}}) {
        if (auto r = cfg.set(k, v); !r) fail(r.error().message);
    }
    cfg.devices = 1;
    auto created = sim::Simulator::create(cfg);
    if (!created) fail(created.error().message);
    auto& sim = *created.value();

    std::unique_ptr<net::PcapWriter> writer;
    if (!o.capture.empty()) {
        auto w = net::PcapWriter::open(o.capture);
        if (!w) fail(w.error().message);
        writer = std::move(w.value());
    }

    // --- the verbs program ---
    int n = 0;
    ibv_device** list = check(ibv_get_device_list(&n), "ibv_get_device_list");
    if (n < 1) fail("no rdmasim device");
    ibv_context* ctx = check(ibv_open_device(list[0]), "ibv_open_device");
    ibv_free_device_list(list);

    ibv_device_attr_ex dattr{};
    check(ibv_query_device_ex(ctx, nullptr, &dattr), "ibv_query_device_ex");
    const std::uint32_t total = o.wqs * o.ring;
    if (o.ring > static_cast<std::uint32_t>(dattr.orig_attr.max_qp_wr))
        fail(fmt::format("--ring {}: the device allows at most {}", o.ring, dattr.orig_attr.max_qp_wr));

    ibv_cq_init_attr_ex cq_attr{};
    cq_attr.cqe = total;
    cq_attr.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM |
                       IBV_WC_EX_WITH_CVLAN | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
    ibv_cq_ex* cq = check(ibv_create_cq_ex(ctx, &cq_attr), "ibv_create_cq_ex");
    ibv_pd* pd = check(ibv_alloc_pd(ctx), "ibv_alloc_pd");
    const std::size_t bytes = static_cast<std::size_t>(total) * o.buf;
    auto* mem = static_cast<std::uint8_t*>(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096));
    if (mem == nullptr) fail("out of memory for receive buffers");
    std::unique_ptr<std::uint8_t, decltype(&std::free)> mem_owner(mem, &std::free);
    ibv_mr* mr = check(ibv_reg_mr(pd, mem, bytes, int{IBV_ACCESS_LOCAL_WRITE}),
                       "ibv_reg_mr");

    std::vector<ibv_wq*> wqs;
    std::map<std::uint32_t, std::uint32_t> index_of; // wq_num -> WQ index
    auto post = [&](std::uint32_t w, std::uint32_t slot) {
        const std::uint64_t id = static_cast<std::uint64_t>(w) * o.ring + slot;
        ibv_sge sge{reinterpret_cast<std::uintptr_t>(mem + id * o.buf), o.buf, mr->lkey};
        ibv_recv_wr wr{};
        wr.wr_id = id;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        ibv_recv_wr* bad = nullptr;
        check(ibv_post_wq_recv(wqs[w], &wr, &bad), "ibv_post_wq_recv");
    };
    for (std::uint32_t w = 0; w < o.wqs; ++w) {
        ibv_wq_init_attr wa{};
        wa.wq_type = IBV_WQT_RQ;
        wa.max_wr = o.ring;
        wa.max_sge = 1;
        wa.pd = pd;
        wa.cq = ibv_cq_ex_to_cq(cq);
        wa.comp_mask = IBV_WQ_INIT_ATTR_FLAGS;
        wa.create_flags = flags;
        ibv_wq* wq = check(ibv_create_wq(ctx, &wa), "ibv_create_wq");
        ibv_wq_attr ma{};
        ma.attr_mask = IBV_WQ_ATTR_STATE;
        ma.wq_state = IBV_WQS_RDY;
        check(ibv_modify_wq(wq, &ma), "ibv_modify_wq(RDY)");
        wqs.push_back(wq);
        index_of[wq->wq_num] = w;
        for (std::uint32_t s = 0; s < o.ring; ++s) post(w, s);
    }

    // RSS: one table over all WQs; a one-entry table for frames with no hash class.
    const std::uint32_t log_size = std::bit_width(std::bit_ceil(o.wqs)) - 1;
    std::vector<ibv_wq*> entries(1u << log_size);
    for (std::size_t i = 0; i < entries.size(); ++i) entries[i] = wqs[i % o.wqs];
    ibv_rwq_ind_table_init_attr ta{};
    ta.log_ind_tbl_size = log_size;
    ta.ind_tbl = entries.data();
    ibv_rwq_ind_table* table = check(ibv_create_rwq_ind_table(ctx, &ta), "ibv_create_rwq_ind_table");
    ibv_wq* first = wqs[0];
    ibv_rwq_ind_table_init_attr ta1{};
    ta1.log_ind_tbl_size = 0;
    ta1.ind_tbl = &first;
    ibv_rwq_ind_table* table1 = check(ibv_create_rwq_ind_table(ctx, &ta1), "ibv_create_rwq_ind_table");

    struct Class {
        L3 l3;
        L4 l4;
        std::uint16_t priority;
    };
    const Class classes[] = {{L3::ipv4, L4::tcp, 0}, {L3::ipv4, L4::udp, 0}, {L3::ipv6, L4::tcp, 0},
                             {L3::ipv6, L4::udp, 0}, {L3::ipv4, L4::any, 1}, {L3::ipv6, L4::any, 1},
                             {L3::any, L4::any, 2}};
    std::vector<ibv_qp*> qps;
    std::vector<ibv_flow*> flows;
    std::uint8_t key[40];
    std::memcpy(key, kRssKey, sizeof key);
    for (const Class& c : classes) {
        const std::uint64_t fields = hash_fields(c.l3, c.l4, o.rss_fields);
        ibv_qp_init_attr_ex qa{};
        qa.qp_type = IBV_QPT_RAW_PACKET;
        qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH;
        qa.pd = pd;
        qa.rwq_ind_tbl = fields ? table : table1;
        qa.rx_hash_conf.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
        qa.rx_hash_conf.rx_hash_key_len = sizeof key;
        qa.rx_hash_conf.rx_hash_key = key;
        qa.rx_hash_conf.rx_hash_fields_mask = fields;
        ibv_qp* qp = check(ibv_create_qp_ex(ctx, &qa), "ibv_create_qp_ex(RSS)");
        qps.push_back(qp);
        FlowBuf fb = make_flow(c.l3, c.l4, c.priority);
        flows.push_back(check(ibv_create_flow(qp, fb.attr()), "ibv_create_flow"));
    }

    // The receive set-up is complete: only now does the capture start to flow
    // (a program under `rdmasim run` gets the same from start=first-flow).
    sim.engine(0).begin();

    // --- receive until the capture is done ---
    const bool tty = isatty(STDERR_FILENO) && !o.json;
    ProgressBar bar(tty);
    std::uint64_t completions = 0, shown = 0, errors = 0;
    struct Done {
        std::uint32_t wq, slot;
    };
    std::vector<Done> repost;
    repost.reserve(64);
    const auto& port = sim.port_counters(0);
    for (int quiet = 0; quiet < 2;) {
        repost.clear();
        ibv_poll_cq_attr pa{};
        if (ibv_start_poll(cq, &pa) == 0) {
            do {
                const std::uint64_t id = cq->wr_id;
                const std::uint32_t w = static_cast<std::uint32_t>(id / o.ring);
                ++completions;
                if (cq->status == IBV_WC_SUCCESS) {
                    const std::uint32_t len = ibv_wc_read_byte_len(cq);
                    const std::uint8_t* data = mem + id * o.buf;
                    if (writer) writer->write({data, len}, ibv_wc_read_completion_ts(cq));
                    if (shown < o.show) {
                        ++shown;
                        const std::uint16_t tci = ibv_wc_read_cvlan(cq);
                        std::printf("frame %llu: wq %u len %u%s %s\n",
                                    static_cast<unsigned long long>(completions), w, len,
                                    tci ? fmt::format(" vlan {} pcp {}", tci & 0xfff, tci >> 13).c_str() : "",
                                    hex_head(data, len, 32).c_str());
                    }
                } else {
                    ++errors;
                }
                repost.push_back({w, static_cast<std::uint32_t>(id % o.ring)});
            } while (repost.size() < 64 && ibv_next_poll(cq) == 0);
            ibv_end_poll(cq);
        }
        for (const Done& d : repost) post(d.wq, d.slot);
        bar.update(sim.engine(0).source().progress(), port.frames.get());
        if (repost.empty()) {
            // Done when the source is drained, nothing is held, and the CQ stayed empty twice.
            if (sim.idle()) ++quiet;
            else if (o.engine == "thread") std::this_thread::yield();
        } else {
            quiet = 0;
        }
    }
    bar.done();

    // --- report ---
    nlohmann::json out;
    out["file"] = o.file;
    out["engine"] = o.engine;
    out["frames_offered"] = port.frames.get();
    out["delivered"] = port.delivered.get();
    out["delivered_bytes"] = port.delivered_bytes.get();
    out["drops"] = sim::drops_json(port);
    std::uint64_t drops_total = port.drops_total();
    out["completions"] = completions;
    out["error_completions"] = errors;
    nlohmann::json wq_list = nlohmann::json::array();
    for (std::uint32_t w = 0; w < o.wqs; ++w) {
        const auto& c = *sim.queue_counters(0, wqs[w]->wq_num);
        wq_list.push_back({{"index", w},
                           {"wq_num", wqs[w]->wq_num},
                           {"delivered", c.delivered.get()},
                           {"bytes", c.delivered_bytes.get()},
                           {"drops", c.drops_total()}});
    }
    out["wqs"] = wq_list;
    out["port"] = sim::counters_json(port);

    if (o.json) {
        std::printf("%s\n", out.dump(2).c_str());
    } else {
        std::printf("replay %s: %u WQs x %u WQEs of %u bytes, flags %s, %s engine\n",
                    o.file.c_str(), o.wqs, o.ring, o.buf,
                    o.flags.empty() ? "none" : fmt::format("{}", fmt::join(o.flags, ",")).c_str(),
                    o.engine.c_str());
        std::printf("\n  %-4s %-8s %10s %12s %8s\n", "WQ", "wq_num", "delivered", "bytes", "drops");
        for (const auto& w : wq_list)
            std::printf("  %-4u 0x%-6x %10llu %12llu %8llu\n", w["index"].get<unsigned>(),
                        w["wq_num"].get<unsigned>(), w["delivered"].get<unsigned long long>(),
                        w["bytes"].get<unsigned long long>(), w["drops"].get<unsigned long long>());
        std::printf("\n  frames offered %llu = delivered %llu + dropped %llu\n",
                    static_cast<unsigned long long>(port.frames.get()),
                    static_cast<unsigned long long>(port.delivered.get()),
                    static_cast<unsigned long long>(drops_total));
        for (std::size_t i = 0; i < datapath::kDropKinds; ++i)
            if (port.drops[i].get() != 0)
                std::printf("    %-20s %llu\n",
                            std::string(datapath::drop_name(static_cast<datapath::Drop>(i))).c_str(),
                            static_cast<unsigned long long>(port.drops[i].get()));
        if (writer) std::printf("  capture: %s\n", o.capture.c_str());
    }

    // --- tear down in reverse order ---
    for (ibv_flow* f : flows) check(ibv_destroy_flow(f), "ibv_destroy_flow");
    for (ibv_qp* q : qps) check(ibv_destroy_qp(q), "ibv_destroy_qp");
    check(ibv_destroy_rwq_ind_table(table1), "ibv_destroy_rwq_ind_table");
    check(ibv_destroy_rwq_ind_table(table), "ibv_destroy_rwq_ind_table");
    for (ibv_wq* w : wqs) check(ibv_destroy_wq(w), "ibv_destroy_wq");
    check(ibv_dereg_mr(mr), "ibv_dereg_mr");
    check(ibv_dealloc_pd(pd), "ibv_dealloc_pd");
    check(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), "ibv_destroy_cq");
    check(ibv_close_device(ctx), "ibv_close_device");
    if (writer)
        if (auto r = writer->close(); !r) fail(r.error().message);
    const bool balanced = port.frames.get() == port.delivered.get() + drops_total;
    if (!balanced) {
        std::fprintf(stderr, "rdmasim replay: accounting does not balance\n");
        return 2;
    }
    if (const auto why = sim.engine(0).source().failure(); !why.empty()) {
        std::fprintf(stderr, "rdmasim replay: %s: read error after %llu frames: %.*s\n",
                     o.file.c_str(), static_cast<unsigned long long>(port.frames.get()),
                     static_cast<int>(why.size()), why.data());
        return 1;
    }
    return 0;
}

} // namespace

int run_replay(const ReplayOptions& options) {
    try {
        return replay(options);
    } catch (const Fail& f) {
        std::fprintf(stderr, "rdmasim replay: %s\n", f.message.c_str());
        return 1;
    }
}

} // namespace rdmasim::tools
