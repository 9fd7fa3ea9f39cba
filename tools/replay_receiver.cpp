#include "tools/replay_receiver.hpp"

#include <array>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>

#include "datapath/toeplitz.hpp"

namespace rdmasim::tools {

namespace {

Error verb_error(std::string_view verb, int err) {
    return make_error(err, fmt::format("{}: {}", verb, std::strerror(err)));
}

// One steering class: a flow of specs and the RSS hash it uses.
enum class L3 { any, ipv4, ipv6 };
enum class L4 { any, tcp, udp };

struct ClassSpec {
    L3 l3;
    L4 l4;
    std::uint16_t priority;
};
// Most specific first: L4 classes, then L3 only, then everything else.
constexpr ClassSpec kClasses[] = {
    {L3::ipv4, L4::tcp, 0}, {L3::ipv4, L4::udp, 0}, {L3::ipv6, L4::tcp, 0}, {L3::ipv6, L4::udp, 0},
    {L3::ipv4, L4::any, 1}, {L3::ipv6, L4::any, 1}, {L3::any, L4::any, 2}};

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

std::uint64_t hash_fields(L3 l3, L4 l4, const HashInputs& in) {
    std::uint64_t f = 0;
    if (l3 == L3::ipv4) {
        if (in.src_ip) f |= IBV_RX_HASH_SRC_IPV4;
        if (in.dst_ip) f |= IBV_RX_HASH_DST_IPV4;
    } else if (l3 == L3::ipv6) {
        if (in.src_ip) f |= IBV_RX_HASH_SRC_IPV6;
        if (in.dst_ip) f |= IBV_RX_HASH_DST_IPV6;
    }
    if (l4 == L4::tcp) {
        if (in.src_port) f |= IBV_RX_HASH_SRC_PORT_TCP;
        if (in.dst_port) f |= IBV_RX_HASH_DST_PORT_TCP;
    } else if (l4 == L4::udp) {
        if (in.src_port) f |= IBV_RX_HASH_SRC_PORT_UDP;
        if (in.dst_port) f |= IBV_RX_HASH_DST_PORT_UDP;
    }
    return f;
}

struct FreeDeviceList {
    void operator()(ibv_device** list) const noexcept { ibv_free_device_list(list); }
};

} // namespace

// --- teardown ---

void Receiver::Destroy::report(const char* verb, int err) const noexcept {
    if (err == 0) return;
    if (failures != nullptr) {
        try {
            failures->push_back(verb_error(verb, err));
            return;
        } catch (const std::bad_alloc&) {
        }
    }
    // Nowhere to record it: say it now.
    std::fprintf(stderr, "rdmasim replay: teardown: %s: %s\n", verb, std::strerror(err));
}

void Receiver::tear_down() noexcept {
    while (!classes_.empty())
        classes_.pop_back(); // each: its flow, then its QP
    one_entry_.reset();
    table_.reset();
    while (!wqs_.empty())
        wqs_.pop_back();
    mr_.reset();
    mem_ = net::HugeBuffer();
    pd_.reset();
    cq_.reset();
    ctx_.reset();
}

Result<void> Receiver::close() {
    if (!closed_) {
        closed_ = true;
        tear_down();
    }
    if (failures_.empty()) return {};
    std::string text = "teardown: " + failures_.front().message;
    for (std::size_t i = 1; i < failures_.size(); ++i)
        text += "; " + failures_[i].message;
    return make_error(failures_.front().code, std::move(text));
}

Receiver::~Receiver() {
    if (closed_) return;
    // Only reached when close() was not (an exception unwound past us).
    closed_ = true;
    tear_down();
    for (const Error& e : failures_)
        std::fprintf(stderr, "rdmasim replay: teardown: %s\n", e.message.c_str());
}

// --- set-up ---

// Takes what a create verb returned; nullptr (errno set) is an error naming the verb.
template <class T> Result<void> Receiver::own(Owned<T>& owner, T* object, const char* verb) {
    if (object == nullptr) return verb_error(verb, errno);
    owner = Owned<T>(object, Destroy{&failures_});
    return {};
}

Result<std::unique_ptr<Receiver>> Receiver::open(const ReceiverSettings& settings) {
    std::unique_ptr<Receiver> r(new Receiver(settings));
    if (auto up = r->set_up(); !up) {
        Error error = up.error();
        if (auto down = r->close(); !down) error.message += " (" + down.error().message + ")";
        return error;
    }
    return Result<std::unique_ptr<Receiver>>(std::move(r));
}

Result<void> Receiver::set_up() {
    if (settings_.wqs == 0 || settings_.ring == 0 || settings_.buf == 0)
        return make_error(EINVAL, "a receiver needs at least one WQ, one WQE and one byte");
    {
        int n = 0;
        std::unique_ptr<ibv_device*, FreeDeviceList> list(ibv_get_device_list(&n));
        if (!list) return verb_error("ibv_get_device_list", errno);
        if (n < 1) return make_error(ENODEV, "no rdmasim device");
        if (auto r = own(ctx_, ibv_open_device(list.get()[0]), "ibv_open_device"); !r) return r;
    }
    ibv_context* const ctx = ctx_.get();
    ibv_device_attr_ex dattr{};
    if (int err = ibv_query_device_ex(ctx, nullptr, &dattr); err != 0)
        return verb_error("ibv_query_device_ex", err);
    if (settings_.ring > static_cast<std::uint32_t>(dattr.orig_attr.max_qp_wr))
        return make_error(EINVAL, fmt::format("--ring {}: the device allows at most {}",
                                              settings_.ring, dattr.orig_attr.max_qp_wr));

    const std::uint32_t total = settings_.wqs * settings_.ring;
    ibv_cq_init_attr_ex cq_attr{};
    cq_attr.cqe = total;
    cq_attr.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_CVLAN |
                       IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
    if (auto r = own(cq_, ibv_create_cq_ex(ctx, &cq_attr), "ibv_create_cq_ex"); !r) return r;
    if (auto r = own(pd_, ibv_alloc_pd(ctx), "ibv_alloc_pd"); !r) return r;
    stride_ = stride_of(settings_.buf);
    const std::size_t bytes = static_cast<std::size_t>(total) * stride_;
    mem_ = net::HugeBuffer(bytes); // in huge pages where the kernel has them
    if (mem_.empty()) return make_error(ENOMEM, "out of memory for receive buffers");
    if (auto r = own(mr_, ibv_reg_mr(pd_.get(), mem_.data(), bytes, int{IBV_ACCESS_LOCAL_WRITE}),
                     "ibv_reg_mr");
        !r)
        return r;
    if (auto r = create_wqs(); !r) return r;

    // RSS: one table over all WQs; a one-entry table for frames with no hash class.
    const std::uint32_t log_size = std::bit_width(std::bit_ceil(settings_.wqs)) - 1;
    std::vector<ibv_wq*> entries(std::size_t{1} << log_size);
    for (std::size_t i = 0; i < entries.size(); ++i)
        entries[i] = wqs_[i % wqs_.size()].get();
    ibv_rwq_ind_table_init_attr ta{};
    ta.log_ind_tbl_size = log_size;
    ta.ind_tbl = entries.data();
    if (auto r = own(table_, ibv_create_rwq_ind_table(ctx, &ta), "ibv_create_rwq_ind_table"); !r)
        return r;
    ibv_wq* first = wqs_[0].get();
    ibv_rwq_ind_table_init_attr ta1{};
    ta1.log_ind_tbl_size = 0;
    ta1.ind_tbl = &first;
    if (auto r = own(one_entry_, ibv_create_rwq_ind_table(ctx, &ta1), "ibv_create_rwq_ind_table");
        !r)
        return r;
    return create_hash_classes();
}

Result<void> Receiver::create_wqs() {
    ibv_context* const ctx = ctx_.get();
    wqs_.reserve(settings_.wqs);
    for (std::uint32_t w = 0; w < settings_.wqs; ++w) {
        ibv_wq_init_attr wa{};
        wa.wq_type = IBV_WQT_RQ;
        wa.max_wr = settings_.ring;
        wa.max_sge = 1;
        wa.pd = pd_.get();
        wa.cq = ibv_cq_ex_to_cq(cq_.get());
        wa.comp_mask = IBV_WQ_INIT_ATTR_FLAGS;
        wa.create_flags = settings_.wq_flags;
        Owned<ibv_wq> wq;
        if (auto r = own(wq, ibv_create_wq(ctx, &wa), "ibv_create_wq"); !r) return r;
        wqs_.push_back(std::move(wq));
        ibv_wq_attr ma{};
        ma.attr_mask = IBV_WQ_ATTR_STATE;
        ma.wq_state = IBV_WQS_RDY;
        if (int err = ibv_modify_wq(wqs_.back().get(), &ma); err != 0)
            return verb_error("ibv_modify_wq(RDY)", err);
        for (std::uint32_t s = 0; s < settings_.ring; ++s)
            if (auto r = post(w, s); !r) return r;
    }
    return {};
}

Result<void> Receiver::create_hash_classes() {
    ibv_context* const ctx = ctx_.get();
    // Verbs takes the key through a non-const pointer (and copies it).
    std::array<std::uint8_t, datapath::Toeplitz::kKeyLen> key = datapath::kMicrosoftRssKey;
    classes_.reserve(std::size(kClasses));
    for (const ClassSpec& c : kClasses) {
        const std::uint64_t fields = hash_fields(c.l3, c.l4, settings_.hash);
        ibv_qp_init_attr_ex qa{};
        qa.qp_type = IBV_QPT_RAW_PACKET;
        qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH;
        qa.pd = pd_.get();
        qa.rwq_ind_tbl = fields ? table_.get() : one_entry_.get();
        qa.rx_hash_conf.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
        qa.rx_hash_conf.rx_hash_key_len = key.size();
        qa.rx_hash_conf.rx_hash_key = key.data();
        qa.rx_hash_conf.rx_hash_fields_mask = fields;
        HashClass hc;
        if (auto r = own(hc.qp, ibv_create_qp_ex(ctx, &qa), "ibv_create_qp_ex(RSS)"); !r) return r;
        FlowBuf fb = make_flow(c.l3, c.l4, c.priority);
        if (auto r = own(hc.flow, ibv_create_flow(hc.qp.get(), fb.attr()), "ibv_create_flow"); !r)
            return r;
        classes_.push_back(std::move(hc));
    }
    return {};
}

Result<void> Receiver::post_chain(std::uint32_t wq, std::span<const std::uint32_t> slots) {
    if (slots.empty()) return {};
    const std::size_t n = std::min(slots.size(), kMaxChain);
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t id = wr_id_of(wq, slots[i]);
        chain_sges_[i] = {reinterpret_cast<std::uintptr_t>(data(id)),
                          settings_.buf, mr_->lkey};
        ibv_recv_wr& wr = chain_wrs_[i];
        wr.wr_id = id;
        wr.sg_list = &chain_sges_[i];
        wr.num_sge = 1;
        wr.next = i + 1 < n ? &chain_wrs_[i + 1] : nullptr;
    }
    ibv_recv_wr* bad = nullptr;
    if (int err = ibv_post_wq_recv(wqs_[wq].get(), chain_wrs_.data(), &bad); err != 0)
        return verb_error("ibv_post_wq_recv", err);
    return {};
}

} // namespace rdmasim::tools
