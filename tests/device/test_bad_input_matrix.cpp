// The bad-input matrix: one row per way of calling a verb wrongly, for every
// libibverbs entry point that takes arguments (the exported functions and the
// ops-table slots the static inline wrappers of verbs.h call). Each row sets
// up what it needs, makes the bad call and names the answer the folder READMEs (or, where
// they are silent, rdma-core and its man pages) requires. After
// every row the device must still work: a fresh WQ goes to RDY, takes a WQE
// and receives one frame through RSS, the port balance holds, and the context
// holds exactly the objects it held before the row.
//
// NULL objects are passed only where the call can check them. Where the
// inline wrapper of verbs.h itself dereferences the object (ibv_poll_cq,
// ibv_post_send, ibv_modify_wq, ...: `cq->context->ops`, `wq->context`), a
// NULL would crash inside libibverbs before the emulator is reached, as it
// does with rdma-core; those rows call the ops-table slot directly instead,
// and say so.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "device/objects.hpp"
#include "tests/device/ib_qp_helpers.hpp"
#include "tests/device/private_verbs.hpp"
#include "tests/device/verbs_helpers.hpp"

using namespace rdmasim;
using namespace rdmasim::test;

// More private libibverbs names (rdma-core's driver.h), as providers see them.
extern "C" {
struct ibv_context* verbs_open_device(struct ibv_device* device, void* private_data);
int ibv_cmd_poll_cq(struct ibv_cq* cq, int ne, struct ibv_wc* wc);
int ibv_cmd_req_notify_cq(struct ibv_cq* cq, int solicited_only);
int ibv_cmd_post_send(struct ibv_qp* qp, struct ibv_send_wr* wr, struct ibv_send_wr** bad_wr);
int ibv_cmd_post_recv(struct ibv_qp* qp, struct ibv_recv_wr* wr, struct ibv_recv_wr** bad_wr);
int ibv_cmd_dealloc_pd(struct ibv_pd* pd);
int ibv_cmd_destroy_cq(struct ibv_cq* cq);
int ibv_cmd_destroy_qp(struct ibv_qp* qp);
int ibv_cmd_destroy_wq(struct ibv_wq* wq);
int ibv_cmd_destroy_rwq_ind_table(struct ibv_rwq_ind_table* table);
int ibv_cmd_destroy_flow(struct ibv_flow* flow);
int ibv_cmd_destroy_srq(struct ibv_srq* srq);
int ibv_cmd_destroy_ah(struct ibv_ah* ah);
int ibv_cmd_dealloc_mw(struct ibv_mw* mw);
int ibv_cmd_attach_mcast(struct ibv_qp* qp, const union ibv_gid* gid, uint16_t lid);
int ibv_cmd_detach_mcast(struct ibv_qp* qp, const union ibv_gid* gid, uint16_t lid);
}

namespace {

// ---- what a call answered, and what it must answer ----

enum class Kind {
    ret,        // an int return value (0 or a positive errno)
    null_errno, // NULL, errno set
    minus_one,  // -1, errno set
    negative,   // a negative return (-errno); expected err 0: any negative value
    fails,      // expected only: a positive errno, or -1 with that errno
    created,    // observed only: a pointer call succeeded (the object is destroyed again)
    none,       // a void call returned
};

struct Outcome {
    Kind kind;
    int err;
};

constexpr Outcome ok() {
    return {Kind::ret, 0};
}
constexpr Outcome rc(int e) {
    return {Kind::ret, e};
}
constexpr Outcome null(int e) {
    return {Kind::null_errno, e};
}
constexpr Outcome m1(int e) {
    return {Kind::minus_one, e};
}
constexpr Outcome negative(int e = 0) {
    return {Kind::negative, e};
}
constexpr Outcome fails(int e) {
    return {Kind::fails, e};
}
constexpr Outcome created() {
    return {Kind::created, 0};
}
constexpr Outcome returned() {
    return {Kind::none, 0};
}

std::string describe(Outcome o) {
    const std::string e = std::to_string(o.err) + " (" + std::strerror(o.err) + ")";
    switch (o.kind) {
    case Kind::ret:
        return "returns " + std::to_string(o.err);
    case Kind::null_errno:
        return "NULL, errno " + e;
    case Kind::minus_one:
        return "-1, errno " + e;
    case Kind::negative:
        return o.err ? "returns -" + e : "a negative value";
    case Kind::fails:
        return "fails with " + e;
    case Kind::created:
        return "an object (success)";
    case Kind::none:
        return "returns (void)";
    }
    return "?";
}

bool matches(Outcome want, Outcome got) {
    switch (want.kind) {
    case Kind::negative:
        if (got.kind == Kind::minus_one) return want.err == 0;
        return got.kind == Kind::negative && (want.err == 0 || want.err == got.err);
    case Kind::fails:
        return (got.kind == Kind::ret || got.kind == Kind::minus_one) && got.err == want.err;
    default:
        return want.kind == got.kind && want.err == got.err;
    }
}

// An int answer: -1 reads errno, other negative values are -errno.
Outcome from_int(long r) {
    if (r == -1) return {Kind::minus_one, errno};
    if (r < 0) return {Kind::negative, static_cast<int>(-r)};
    return {Kind::ret, static_cast<int>(r)};
}

// A pointer answer; a wrongly created object is destroyed again with `destroy`.
template <class T, class D> Outcome from_ptr(T* p, D destroy) {
    if (p == nullptr) return {Kind::null_errno, errno};
    CHECK(destroy(p) == 0);
    return {Kind::created, 0};
}

// ---- the objects a row works on ----

// Objects made for one row, destroyed in reverse order after it (each destroy
// must succeed: the order is the right one). A second context on the same
// device provides "objects from another context".
class Bed {
public:
    explicit Bed(SimFixture& f) : fx(f), ctx(f.ctx), pd(f.pd) {
        ibv_query_device_ex_input in{};
        REQUIRE(ibv_query_device_ex(ctx, &in, &dev) == 0);
    }
    ~Bed() { teardown(); }
    Bed(const Bed&) = delete;
    Bed& operator=(const Bed&) = delete;

    void teardown() {
        while (!undo_.empty()) {
            auto [what, destroy] = std::move(undo_.back());
            undo_.pop_back();
            INFO("tearing down " << what);
            CHECK(destroy() == 0);
        }
        other_.reset();
    }

    // A destroy that should have been refused went through: what depends on
    // the object can no longer be torn down safely, so the row's objects are
    // left alone (the row fails anyway).
    Outcome busy(int r) {
        if (r == 0) {
            undo_.clear();
            (void)other_.release(); // leaked on purpose, see above
        }
        return from_int(r);
    }

    // Forget an object the row itself destroyed.
    void forget() { undo_.pop_back(); }

    OtherContext& other() {
        if (!other_) other_ = std::make_unique<OtherContext>();
        return *other_;
    }

    ibv_pd* new_pd(ibv_context* c = nullptr) {
        ibv_pd* p = ibv_alloc_pd(c ? c : ctx);
        REQUIRE(p != nullptr);
        keep("pd", [p] { return ibv_dealloc_pd(p); });
        return p;
    }
    ibv_cq* cq(ibv_context* c = nullptr, ibv_comp_channel* ch = nullptr) {
        ibv_cq* q = ibv_create_cq(c ? c : ctx, 64, nullptr, ch, 0);
        REQUIRE(q != nullptr);
        keep("cq", [q] { return ibv_destroy_cq(q); });
        return q;
    }
    ibv_cq_ex* cq_ex(std::uint64_t wc_flags = IBV_WC_STANDARD_FLAGS) {
        ibv_cq_init_attr_ex a{};
        a.cqe = 16;
        a.wc_flags = wc_flags;
        ibv_cq_ex* q = ibv_create_cq_ex(ctx, &a);
        REQUIRE(q != nullptr);
        keep("cq_ex", [q] { return ibv_destroy_cq(ibv_cq_ex_to_cq(q)); });
        return q;
    }
    ibv_comp_channel* channel() {
        ibv_comp_channel* ch = ibv_create_comp_channel(ctx);
        REQUIRE(ch != nullptr);
        keep("channel", [ch] { return ibv_destroy_comp_channel(ch); });
        return ch;
    }
    ibv_wq* wq(ibv_pd* p = nullptr, ibv_cq* q = nullptr, std::uint32_t max_wr = 16) {
        if (p == nullptr) p = pd;
        if (q == nullptr) q = cq(p->context);
        ibv_wq* w = make_wq(p, q, max_wr);
        keep("wq", [w] { return ibv_destroy_wq(w); });
        return w;
    }
    ibv_wq* wq_in(ibv_wq_state state) {
        ibv_wq* w = wq();
        if (state != IBV_WQS_RESET) REQUIRE(set_wq_state(w, IBV_WQS_RDY) == 0);
        if (state == IBV_WQS_ERR) REQUIRE(set_wq_state(w, IBV_WQS_ERR) == 0);
        REQUIRE(w->state == state);
        return w;
    }
    ibv_rwq_ind_table* table(ibv_wq* w = nullptr) {
        std::vector<ibv_wq*> wqs{w ? w : wq()};
        ibv_rwq_ind_table* t = make_table(wqs.front()->context, wqs, 0);
        keep("table", [t] { return ibv_destroy_rwq_ind_table(t); });
        return t;
    }
    ibv_qp* rss_qp(ibv_rwq_ind_table* t = nullptr, ibv_pd* p = nullptr) {
        ibv_qp_init_attr_ex a = rss_qp_attr(p ? p : pd, t ? t : table(), 0);
        ibv_qp* q = ibv_create_qp_ex(ctx, &a);
        REQUIRE(q != nullptr);
        keep("rss qp", [q] { return ibv_destroy_qp(q); });
        return q;
    }
    // A plain RAW_PACKET QP (its own receive queue and a send queue).
    ibv_qp_init_attr raw_attr(ibv_cq* scq, ibv_cq* rcq) const {
        ibv_qp_init_attr a{};
        a.qp_type = IBV_QPT_RAW_PACKET;
        a.send_cq = scq;
        a.recv_cq = rcq;
        a.cap.max_send_wr = 4;
        a.cap.max_recv_wr = 4;
        a.cap.max_send_sge = 1;
        a.cap.max_recv_sge = 1;
        a.cap.max_inline_data = 64;
        return a;
    }
    ibv_qp* raw_qp(ibv_pd* p = nullptr, ibv_cq* q = nullptr) {
        if (q == nullptr) q = cq();
        ibv_qp_init_attr a = raw_attr(q, q);
        ibv_qp* qp = ibv_create_qp(p ? p : pd, &a);
        REQUIRE(qp != nullptr);
        keep("raw qp", [qp] { return ibv_destroy_qp(qp); });
        return qp;
    }
    ibv_qp* raw_qp_in(ibv_qp_state state) {
        ibv_qp* qp = raw_qp();
        for (ibv_qp_state s : {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS}) {
            if (qp->state == state) break;
            ibv_qp_attr a{};
            a.qp_state = s;
            REQUIRE(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0);
        }
        REQUIRE(qp->state == state);
        return qp;
    }
    ibv_flow* flow(ibv_qp* qp) {
        ibv_flow* f = make_flow(qp, eth_flow());
        keep("flow", [f] { return ibv_destroy_flow(f); });
        return f;
    }
    ibv_mr* mr(ibv_pd* p = nullptr) {
        ibv_mr* m = ibv_reg_mr(p ? p : pd, buf.data(), buf.size(), int{IBV_ACCESS_LOCAL_WRITE});
        REQUIRE(m != nullptr);
        keep("mr", [m] { return ibv_dereg_mr(m); });
        return m;
    }

    // An RC or UC QP on its own CQ, in RTS (its peer address is nobody's).
    ibv_qp* ib_qp_rts(ibv_qp_type t = IBV_QPT_RC) {
        ibv_cq* q = cq();
        ibv_qp_init_attr a{};
        a.qp_type = t;
        a.send_cq = q;
        a.recv_cq = q;
        a.cap.max_send_wr = 4;
        a.cap.max_recv_wr = 4;
        a.cap.max_send_sge = 1;
        a.cap.max_recv_sge = 1;
        ibv_qp* qp = ibv_create_qp(pd, &a);
        REQUIRE(qp != nullptr);
        keep("ib qp", [qp] { return ibv_destroy_qp(qp); });
        for (ibv_qp_state s : {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS}) {
            ibv_qp_attr at = good_attr(s);
            const int mask = s == IBV_QPS_INIT ? init_mask(t) : s == IBV_QPS_RTR ? rtr_mask(t) : rts_mask(t);
            REQUIRE(ibv_modify_qp(qp, &at, mask) == 0);
        }
        return qp;
    }
    ibv_mw* mw(ibv_mw_type type) {
        ibv_mw* w = ibv_alloc_mw(pd, type);
        REQUIRE(w != nullptr);
        keep("mw", [w] { return ibv_dealloc_mw(w); });
        return w;
    }
    ibv_mr* bindable_mr() {
        ibv_mr* m = ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
        REQUIRE(m != nullptr);
        keep("mr", [m] { return ibv_dereg_mr(m); });
        return m;
    }

    SimFixture& fx;
    ibv_context* ctx;
    ibv_pd* pd;
    ibv_device_attr_ex dev{};
    std::vector<std::uint8_t> buf = std::vector<std::uint8_t>(4096);

private:
    void keep(const char* what, std::function<int()> destroy) {
        undo_.emplace_back(what, std::move(destroy));
    }
    std::vector<std::pair<std::string, std::function<int()>>> undo_;
    std::unique_ptr<OtherContext> other_;
};

// The ops-table slots, for the rows that pass what the inline wrapper would dereference.
verbs_context& ops(ibv_context* ctx) {
    return *verbs_get_ctx(ctx);
}

ibv_wq_init_attr good_wq(Bed& b) {
    return wq_attr(b.pd, b.cq());
}
Outcome create_wq(Bed& b, ibv_wq_init_attr a) {
    errno = 0;
    return from_ptr(ibv_create_wq(b.ctx, &a), ibv_destroy_wq);
}
Outcome create_cq_ex(Bed& b, ibv_cq_init_attr_ex a) {
    errno = 0;
    return from_ptr(ibv_create_cq_ex(b.ctx, &a),
                    [](ibv_cq_ex* q) { return ibv_destroy_cq(ibv_cq_ex_to_cq(q)); });
}
Outcome create_qp_ex(Bed& b, ibv_qp_init_attr_ex a) {
    errno = 0;
    return from_ptr(ibv_create_qp_ex(b.ctx, &a), ibv_destroy_qp);
}
Outcome create_cq(Bed& b, int cqe, ibv_comp_channel* ch = nullptr, int vector = 0) {
    errno = 0;
    return from_ptr(ibv_create_cq(b.ctx, cqe, nullptr, ch, vector), ibv_destroy_cq);
}
Outcome reg_mr_iova2(Bed&, ibv_pd* pd, void* addr, size_t len, unsigned access) {
    errno = 0;
    return from_ptr(ibv_reg_mr_iova2(pd, addr, len, 0x1000, access), ibv_dereg_mr);
}
// A WQ modify that must fail and leave the state as it was.
Outcome modify_wq_keeps_state(ibv_wq* wq, ibv_wq_attr a) {
    const ibv_wq_state before = wq->state;
    const Outcome o = from_int(ibv_modify_wq(wq, &a));
    CHECK(wq->state == before);
    return o;
}
Outcome modify_wq_to(Bed& b, ibv_wq_state from, int to) {
    ibv_wq_attr a{};
    a.attr_mask = IBV_WQ_ATTR_STATE;
    std::memcpy(&a.wq_state, &to, sizeof to); // a C caller may store any value
    return modify_wq_keeps_state(b.wq_in(from), a);
}
Outcome post_wq_checked(ibv_wq* wq, ibv_recv_wr& wr) {
    ibv_recv_wr* bad = nullptr;
    const Outcome o = from_int(ibv_post_wq_recv(wq, &wr, &bad));
    CHECK(bad == &wr);
    return o;
}
Outcome post_send_checked(ibv_qp* qp, ibv_send_wr& wr) {
    ibv_send_wr* bad = nullptr;
    const Outcome o = from_int(ibv_post_send(qp, &wr, &bad));
    CHECK(bad == &wr);
    return o;
}
Outcome post_recv_checked(ibv_qp* qp, ibv_recv_wr& wr) {
    ibv_recv_wr* bad = nullptr;
    const Outcome o = from_int(ibv_post_recv(qp, &wr, &bad));
    CHECK(bad == &wr);
    return o;
}
// A send WR of one SGE over the bed's registered buffer.
struct SendWr {
    ibv_sge sge{};
    ibv_send_wr wr{};
    SendWr(Bed& b, std::uint32_t len = 64) {
        ibv_mr* m = b.mr();
        sge = {reinterpret_cast<std::uint64_t>(b.buf.data()), len, m->lkey};
        wr.wr_id = 1;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_SEND;
    }
};
struct RecvWr {
    ibv_sge sge[2]{};
    ibv_recv_wr wr{};
    RecvWr(Bed& b, int num_sge = 1) {
        ibv_mr* m = b.mr();
        sge[0] = sge[1] = {reinterpret_cast<std::uint64_t>(b.buf.data()), 64, m->lkey};
        wr.wr_id = 1;
        wr.sg_list = sge;
        wr.num_sge = num_sge;
    }
};

// The sized limits, as the device reports them.
std::uint32_t max_wr(const Bed& b) {
    return static_cast<std::uint32_t>(b.dev.orig_attr.max_qp_wr);
}
std::uint32_t max_sge(const Bed& b) {
    return static_cast<std::uint32_t>(b.dev.orig_attr.max_sge);
}
int max_cqe(const Bed& b) {
    return b.dev.orig_attr.max_cqe;
}
std::uint32_t log_max_table(const Bed& b) {
    std::uint32_t log = 0;
    while ((2u << log) <= b.dev.rss_caps.max_rwq_indirection_table_size)
        ++log;
    return log;
}

// Runs `f` with the context's async / channel fd non-blocking.
template <class F> Outcome nonblocking(int fd, F f) {
    const int flags = ::fcntl(fd, F_GETFL);
    REQUIRE(::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0);
    const Outcome o = f();
    REQUIRE(::fcntl(fd, F_SETFL, flags) == 0);
    return o;
}

// ---- the device still works ----

void check_usable(SimFixture& fx, std::uint32_t live_before) {
    CHECK(device::from_verbs(fx.ctx)->live_objects.load() == live_before);
    CHECK(device::from_verbs(fx.pd)->users.load() == 0);
    ibv_cq* cq = make_cq(fx.ctx);
    ibv_wq* wq = make_wq(fx.pd, cq);
    REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
    check_passes_unchanged(fx, fx.pd, fx.pd, wq, cq,
                           ipv4_tcp_frame(0x0a000001, 0x0a000002, 1234, 80));
    REQUIRE(ibv_destroy_wq(wq) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
    CHECK(device::from_verbs(fx.ctx)->live_objects.load() == live_before);
}

// ---- the table ----

struct Row {
    std::string name;
    std::function<Outcome(Bed&)> call; // set-up, then the bad call
    Outcome expect;
};

std::string bit_name(const char* what, unsigned bit) {
    return std::string(what) + " bit " + std::to_string(bit);
}

// An enum holding a value outside its enumerators, as a C caller may pass one
// (UBSan's enum check, which an unoptimised build makes see the load, is
// what this function exists to get past).
template <class E> __attribute__((no_sanitize("enum"))) E raw_enum(int v) {
    static_assert(sizeof(E) == sizeof(int));
    E e;
    std::memcpy(&e, &v, sizeof e);
    return e;
}

void context_rows(std::vector<Row>& rows) {
    // Device list helpers and string tables: a NULL device or an out-of-range
    // value answers "none" (NULL + EINVAL, 0, -1, "unknown", IBV_RATE_MAX).
    rows.push_back({"ibv_get_device_name(NULL)",
                    [](Bed&) {
                        errno = 0;
                        const char* n = ibv_get_device_name(nullptr);
                        return Outcome{n ? Kind::created : Kind::null_errno, errno};
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_get_device_guid(NULL) is 0",
                    [](Bed&) { return rc(ibv_get_device_guid(nullptr) == 0 ? 0 : 1); }, ok()});
    rows.push_back({"ibv_get_device_index(NULL) is -1",
                    [](Bed&) { return rc(ibv_get_device_index(nullptr) == -1 ? 0 : 1); }, ok()});
    rows.push_back({"ibv_free_device_list(NULL) is harmless",
                    [](Bed&) {
                        ibv_free_device_list(nullptr);
                        return returned();
                    },
                    returned()});
    const auto unknown = [](const char* text) {
        return rc(std::strcmp(text, "unknown") == 0 ? 0 : 1);
    };
    rows.push_back({"ibv_node_type_str of an unknown type",
                    [=](Bed&) { return unknown(ibv_node_type_str(raw_enum<ibv_node_type>(99))); },
                    ok()});
    rows.push_back({"ibv_port_state_str of an unknown state",
                    [=](Bed&) { return unknown(ibv_port_state_str(raw_enum<ibv_port_state>(99))); },
                    ok()});
    rows.push_back(
        {"ibv_event_type_str of an unknown event",
         [=](Bed&) { return unknown(ibv_event_type_str(raw_enum<ibv_event_type>(999))); }, ok()});
    rows.push_back({"ibv_wc_status_str of an unknown status",
                    [=](Bed&) { return unknown(ibv_wc_status_str(raw_enum<ibv_wc_status>(999))); },
                    ok()});
    rows.push_back(
        {"ibv_rate_to_mult of an unknown rate is -1",
         [](Bed&) { return rc(ibv_rate_to_mult(raw_enum<ibv_rate>(999)) == -1 ? 0 : 1); }, ok()});
    rows.push_back(
        {"ibv_rate_to_mbps of an unknown rate is -1",
         [](Bed&) { return rc(ibv_rate_to_mbps(raw_enum<ibv_rate>(999)) == -1 ? 0 : 1); }, ok()});
    rows.push_back({"mult_to_ibv_rate(0) is IBV_RATE_MAX",
                    [](Bed&) { return rc(mult_to_ibv_rate(0) == IBV_RATE_MAX ? 0 : 1); }, ok()});
    rows.push_back({"mbps_to_ibv_rate(-1) is IBV_RATE_MAX",
                    [](Bed&) { return rc(mbps_to_ibv_rate(-1) == IBV_RATE_MAX ? 0 : 1); }, ok()});
    rows.push_back({"ibv_open_device(NULL)",
                    [](Bed&) {
                        errno = 0;
                        return from_ptr(ibv_open_device(nullptr), ibv_close_device);
                    },
                    null(EINVAL)});
    // ibv_close_device(3): "returns 0 on success, -1 on failure".
    rows.push_back({"ibv_close_device(NULL)",
                    [](Bed&) { return from_int(ibv_close_device(nullptr)); }, m1(EINVAL)});
    // Succeeds, as on mlx5; the objects stay usable and the context goes
    // with the last of them (LeakSanitizer checks that it does).
    rows.push_back({"ibv_close_device with a PD and a CQ alive",
                    [](Bed& b) {
                        ibv_context* c = ibv_open_device(b.ctx->device);
                        REQUIRE(c != nullptr);
                        ibv_pd* p = ibv_alloc_pd(c);
                        ibv_cq* q = ibv_create_cq(c, 16, nullptr, nullptr, 0);
                        REQUIRE((p != nullptr && q != nullptr));
                        const Outcome closed = from_int(ibv_close_device(c));
                        CHECK(ibv_destroy_cq(q) == 0);
                        CHECK(ibv_dealloc_pd(p) == 0);
                        return closed;
                    },
                    ok()});
    rows.push_back({"ibv_query_device(NULL context)",
                    [](Bed&) {
                        ibv_device_attr a;
                        return from_int(ibv_query_device(nullptr, &a));
                    },
                    rc(EINVAL)});
    rows.push_back({"ibv_query_device(NULL attr)",
                    [](Bed& b) { return from_int(ibv_query_device(b.ctx, nullptr)); }, rc(EINVAL)});
    // ibv_query_device_ex: the inline wrapper refuses a non-zero input comp_mask
    // itself; the op must too (a program may call it through verbs_context).
    for (unsigned bit = 0; bit < 32; ++bit)
        rows.push_back({bit_name("ibv_query_device_ex input comp_mask", bit),
                        [bit](Bed& b) {
                            ibv_query_device_ex_input in{};
                            in.comp_mask = 1u << bit;
                            ibv_device_attr_ex a{};
                            CHECK(ibv_query_device_ex(b.ctx, &in, &a) == EINVAL);
                            return from_int(ops(b.ctx).query_device_ex(b.ctx, &in, &a, sizeof a));
                        },
                        rc(EINVAL)});
    rows.push_back({"query_device_ex op: attr_size below ibv_device_attr",
                    [](Bed& b) {
                        ibv_device_attr_ex a{};
                        return from_int(ops(b.ctx).query_device_ex(b.ctx, nullptr, &a,
                                                                   sizeof(ibv_device_attr) - 1));
                    },
                    rc(EINVAL)});
    rows.push_back(
        {"query_device_ex op: NULL attr",
         [](Bed& b) { return from_int(ops(b.ctx).query_device_ex(b.ctx, nullptr, nullptr, 1024)); },
         rc(EINVAL)});
    // ibv_query_port: the inline wrapper calls the query_port op.
    for (int port : {0, 2, 255})
        rows.push_back({"ibv_query_port port " + std::to_string(port),
                        [port](Bed& b) {
                            ibv_port_attr a;
                            return from_int(ibv_query_port(b.ctx, static_cast<uint8_t>(port), &a));
                        },
                        rc(EINVAL)});
    // The wrapper would memset a NULL attr on its legacy path: the op directly.
    rows.push_back({"query_port op(NULL attr)",
                    [](Bed& b) {
                        return from_int(
                            ops(b.ctx).query_port(b.ctx, 1, nullptr, sizeof(ibv_port_attr)));
                    },
                    rc(EINVAL)});
    // The wrapper reads context->abi_compat: NULL context only through the exported name.
    rows.push_back(
        {"exported ibv_query_port(NULL context)",
         [](Bed&) {
             ibv_port_attr a;
             return from_int(
                 (ibv_query_port)(nullptr, 1, reinterpret_cast<_compat_ibv_port_attr*>(&a)));
         },
         rc(EINVAL)});
    rows.push_back(
        {"exported ibv_query_port port 2",
         [](Bed& b) {
             ibv_port_attr a;
             return from_int(
                 (ibv_query_port)(b.ctx, 2, reinterpret_cast<_compat_ibv_port_attr*>(&a)));
         },
         rc(EINVAL)});
    // ibv_query_gid(3), ibv_query_pkey(3): "0 on success, and -1 on error".
    struct GidCase {
        const char* name;
        int port;
        int index;
        bool null_ctx;
        bool null_out;
    };
    for (const GidCase& c :
         {GidCase{"port 0", 0, 0, false, false}, GidCase{"port 2", 2, 0, false, false},
          GidCase{"index 256 (gid_tbl_len)", 1, 256, false, false},
          GidCase{"index -1", 1, -1, false, false}, GidCase{"NULL context", 1, 0, true, false},
          GidCase{"NULL output", 1, 0, false, true}}) {
        rows.push_back({std::string("ibv_query_gid ") + c.name,
                        [c](Bed& b) {
                            ibv_gid gid;
                            errno = 0;
                            return from_int(ibv_query_gid(c.null_ctx ? nullptr : b.ctx,
                                                          static_cast<uint8_t>(c.port), c.index,
                                                          c.null_out ? nullptr : &gid));
                        },
                        m1(EINVAL)});
        rows.push_back({std::string("ibv_query_pkey ") + c.name,
                        [c](Bed& b) {
                            __be16 pkey;
                            errno = 0;
                            return from_int(ibv_query_pkey(c.null_ctx ? nullptr : b.ctx,
                                                           static_cast<uint8_t>(c.port), c.index,
                                                           c.null_out ? nullptr : &pkey));
                        },
                        m1(EINVAL)});
        if (c.index >= 0)
            rows.push_back({std::string("ibv_query_gid_type ") + c.name,
                            [c](Bed& b) {
                                ibv_gid_type_sysfs type;
                                errno = 0;
                                return from_int(ibv_query_gid_type(
                                    c.null_ctx ? nullptr : b.ctx, static_cast<uint8_t>(c.port),
                                    static_cast<unsigned>(c.index), c.null_out ? nullptr : &type));
                            },
                            m1(EINVAL)});
        if (c.index >= 0)
            rows.push_back({std::string("ibv_query_gid_ex ") + c.name,
                            [c](Bed& b) {
                                ibv_gid_entry e;
                                return from_int(_ibv_query_gid_ex(
                                    c.null_ctx ? nullptr : b.ctx, static_cast<uint32_t>(c.port),
                                    static_cast<uint32_t>(c.index), c.null_out ? nullptr : &e, 0,
                                    sizeof e));
                            },
                            rc(EINVAL)});
    }
    for (unsigned bit = 0; bit < 32; ++bit) {
        rows.push_back({bit_name("ibv_query_gid_ex flags", bit),
                        [bit](Bed& b) {
                            ibv_gid_entry e;
                            return from_int(ibv_query_gid_ex(b.ctx, 1, 0, &e, 1u << bit));
                        },
                        rc(EINVAL)});
        rows.push_back({bit_name("ibv_query_gid_table flags", bit),
                        [bit](Bed& b) {
                            ibv_gid_entry e[2];
                            return from_int(ibv_query_gid_table(b.ctx, e, 2, 1u << bit));
                        },
                        negative(EINVAL)});
    }
    rows.push_back({"ibv_query_gid_ex entry_size below ibv_gid_entry",
                    [](Bed& b) {
                        ibv_gid_entry e;
                        return from_int(_ibv_query_gid_ex(b.ctx, 1, 0, &e, 0, sizeof e - 1));
                    },
                    rc(EINVAL)});
    rows.push_back({"ibv_query_gid_table(NULL context)",
                    [](Bed&) {
                        ibv_gid_entry e[2];
                        return from_int(ibv_query_gid_table(nullptr, e, 2, 0));
                    },
                    negative(EINVAL)});
    rows.push_back({"ibv_query_gid_table(NULL entries)",
                    [](Bed& b) { return from_int(ibv_query_gid_table(b.ctx, nullptr, 2, 0)); },
                    negative(EINVAL)});
    rows.push_back({"ibv_query_gid_table max_entries 0",
                    [](Bed& b) {
                        ibv_gid_entry e[1];
                        return from_int(ibv_query_gid_table(b.ctx, e, 0, 0));
                    },
                    negative(EINVAL)});
    rows.push_back({"ibv_query_gid_table entry_size below ibv_gid_entry",
                    [](Bed& b) {
                        ibv_gid_entry e[2];
                        return from_int(_ibv_query_gid_table(b.ctx, e, 2, 0, sizeof e[0] - 1));
                    },
                    negative(EINVAL)});
    // ibv_get_pkey_index(3): "the P_Key index on success, and -1 on error".
    rows.push_back({"ibv_get_pkey_index(NULL context)",
                    [](Bed&) {
                        errno = 0;
                        return from_int(ibv_get_pkey_index(nullptr, 1, htobe16(0xffff)));
                    },
                    m1(EINVAL)});
    rows.push_back({"ibv_get_pkey_index port 2",
                    [](Bed& b) {
                        errno = 0;
                        return from_int(ibv_get_pkey_index(b.ctx, 2, htobe16(0xffff)));
                    },
                    m1(EINVAL)});
    rows.push_back({"ibv_get_pkey_index of a P_Key not in the table",
                    [](Bed& b) {
                        errno = 0;
                        return from_int(ibv_get_pkey_index(b.ctx, 1, htobe16(0x1234)));
                    },
                    m1(ENOENT)});
    // ibv_read_sysfs_file: -1 and errno, as read(2).
    rows.push_back({"ibv_read_sysfs_file(NULL dir)",
                    [](Bed&) {
                        char buf[64];
                        errno = 0;
                        return from_int(ibv_read_sysfs_file(nullptr, "board_id", buf, sizeof buf));
                    },
                    m1(EINVAL)});
    rows.push_back({"ibv_read_sysfs_file(NULL file)",
                    [](Bed& b) {
                        char buf[64];
                        errno = 0;
                        return from_int(ibv_read_sysfs_file(b.ctx->device->ibdev_path, nullptr, buf,
                                                            sizeof buf));
                    },
                    m1(EINVAL)});
    rows.push_back({"ibv_read_sysfs_file(NULL buf)",
                    [](Bed& b) {
                        errno = 0;
                        return from_int(ibv_read_sysfs_file(b.ctx->device->ibdev_path, "board_id",
                                                            nullptr, 64));
                    },
                    m1(EINVAL)});
    rows.push_back({"ibv_read_sysfs_file of an emulated file that does not exist",
                    [](Bed& b) {
                        char buf[64];
                        errno = 0;
                        return from_int(ibv_read_sysfs_file(b.ctx->device->ibdev_path,
                                                            "no_such_file", buf, sizeof buf));
                    },
                    m1(ENOENT)});
    // ibv_get_async_event(3): "0 on success, and -1 on error".
    rows.push_back({"ibv_get_async_event(NULL context)",
                    [](Bed&) {
                        ibv_async_event ev;
                        errno = 0;
                        return from_int(ibv_get_async_event(nullptr, &ev));
                    },
                    m1(EINVAL)});
    rows.push_back({"ibv_get_async_event(NULL event)",
                    [](Bed& b) {
                        errno = 0;
                        return from_int(ibv_get_async_event(b.ctx, nullptr));
                    },
                    m1(EINVAL)});
    rows.push_back({"ibv_get_async_event with nothing pending on a non-blocking fd",
                    [](Bed& b) {
                        return nonblocking(b.ctx->async_fd, [&] {
                            ibv_async_event ev;
                            errno = 0;
                            return from_int(ibv_get_async_event(b.ctx, &ev));
                        });
                    },
                    m1(EAGAIN)});
    rows.push_back({"ibv_ack_async_event(NULL) is harmless",
                    [](Bed&) {
                        ibv_ack_async_event(nullptr);
                        return returned();
                    },
                    returned()});
}

void pd_mr_rows(std::vector<Row>& rows) {
    rows.push_back({"ibv_alloc_pd(NULL)",
                    [](Bed&) {
                        errno = 0;
                        return from_ptr(ibv_alloc_pd(nullptr), ibv_dealloc_pd);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_dealloc_pd(NULL)", [](Bed&) { return from_int(ibv_dealloc_pd(nullptr)); },
                    rc(EINVAL)});
    rows.push_back({"ibv_dealloc_pd with an MR",
                    [](Bed& b) {
                        ibv_pd* p = b.new_pd();
                        b.mr(p);
                        return b.busy(ibv_dealloc_pd(p));
                    },
                    rc(EBUSY)});
    rows.push_back({"ibv_dealloc_pd with a WQ",
                    [](Bed& b) {
                        ibv_pd* p = b.new_pd();
                        b.wq(p);
                        return b.busy(ibv_dealloc_pd(p));
                    },
                    rc(EBUSY)});
    rows.push_back({"ibv_dealloc_pd with a raw QP",
                    [](Bed& b) {
                        ibv_pd* p = b.new_pd();
                        b.raw_qp(p);
                        return b.busy(ibv_dealloc_pd(p));
                    },
                    rc(EBUSY)});
    rows.push_back({"ibv_dealloc_pd with an RSS QP",
                    [](Bed& b) {
                        ibv_pd* p = b.new_pd();
                        b.rss_qp(nullptr, p);
                        return b.busy(ibv_dealloc_pd(p));
                    },
                    rc(EBUSY)});
    // The three exported registration entry points (verbs.h turns ibv_reg_mr
    // and ibv_reg_mr_iova into macros: the parentheses reach the functions).
    rows.push_back({"ibv_reg_mr(NULL pd)",
                    [](Bed& b) {
                        errno = 0;
                        return from_ptr(
                            (ibv_reg_mr)(nullptr, b.buf.data(), 64, IBV_ACCESS_LOCAL_WRITE),
                            ibv_dereg_mr);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_reg_mr length 0",
                    [](Bed& b) {
                        errno = 0;
                        return from_ptr((ibv_reg_mr)(b.pd, b.buf.data(), 0, IBV_ACCESS_LOCAL_WRITE),
                                        ibv_dereg_mr);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_reg_mr_iova(NULL pd)",
                    [](Bed& b) {
                        errno = 0;
                        return from_ptr(
                            (ibv_reg_mr_iova)(nullptr, b.buf.data(), 64, 0, IBV_ACCESS_LOCAL_WRITE),
                            ibv_dereg_mr);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_reg_mr_iova NULL addr",
                    [](Bed& b) {
                        errno = 0;
                        return from_ptr(
                            (ibv_reg_mr_iova)(b.pd, nullptr, 64, 0, IBV_ACCESS_LOCAL_WRITE),
                            ibv_dereg_mr);
                    },
                    null(EINVAL)});
    rows.push_back(
        {"ibv_reg_mr_iova2(NULL pd)",
         [](Bed& b) { return reg_mr_iova2(b, nullptr, b.buf.data(), 64, IBV_ACCESS_LOCAL_WRITE); },
         null(EINVAL)});
    rows.push_back({"ibv_reg_mr_iova2 length max_mr_size + 1",
                    [](Bed& b) {
                        return reg_mr_iova2(b, b.pd, b.buf.data(), b.dev.orig_attr.max_mr_size + 1,
                                            IBV_ACCESS_LOCAL_WRITE);
                    },
                    null(EINVAL)});
    rows.push_back(
        {"ibv_reg_mr_iova2 REMOTE_WRITE without LOCAL_WRITE",
         [](Bed& b) { return reg_mr_iova2(b, b.pd, b.buf.data(), 64, IBV_ACCESS_REMOTE_WRITE); },
         null(EINVAL)});
    rows.push_back(
        {"ibv_reg_mr_iova2 REMOTE_ATOMIC without LOCAL_WRITE",
         [](Bed& b) { return reg_mr_iova2(b, b.pd, b.buf.data(), 64, IBV_ACCESS_REMOTE_ATOMIC); },
         null(EINVAL)});
    rows.push_back({"ibv_reg_mr_iova2 NULL addr, ON_DEMAND, not implicit (not SIZE_MAX)",
                    [](Bed& b) {
                        return reg_mr_iova2(b, b.pd, nullptr, 64,
                                            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
                    },
                    null(EINVAL)});
    // Access bits verbs.h does not define: bits 8..19 and 30..31 (20..29 are
    // IBV_ACCESS_OPTIONAL_RANGE, which a device may ignore).
    for (unsigned bit = 8; bit < 32; ++bit) {
        if ((1u << bit) & IBV_ACCESS_OPTIONAL_RANGE) continue;
        rows.push_back({bit_name("ibv_reg_mr_iova2 access", bit),
                        [bit](Bed& b) {
                            return reg_mr_iova2(b, b.pd, b.buf.data(), 64,
                                                IBV_ACCESS_LOCAL_WRITE | (1u << bit));
                        },
                        null(EINVAL)});
    }
    rows.push_back(
        {"ibv_dereg_mr(NULL)", [](Bed&) { return from_int(ibv_dereg_mr(nullptr)); }, rc(EINVAL)});
}

// Memory windows (device/README.md, "Memory windows").
void mw_rows(std::vector<Row>& rows) {
    const auto alloc = [](Bed& b, int type) {
        errno = 0;
        return from_ptr(ibv_alloc_mw(b.pd, raw_enum<ibv_mw_type>(type)),
                        [](ibv_mw* w) { return ibv_dealloc_mw(w); });
    };
    for (int type : {0, 3, -1})
        rows.push_back({"ibv_alloc_mw type " + std::to_string(type), [=](Bed& b) { return alloc(b, type); },
                        null(EINVAL)});
    // The wrappers read pd->context, mw->context: NULL only through the ops.
    rows.push_back({"alloc_mw op(NULL pd)",
                    [](Bed& b) {
                        errno = 0;
                        return from_ptr(ops(b.ctx).context.ops.alloc_mw(nullptr, IBV_MW_TYPE_1),
                                        [](ibv_mw* w) { return ibv_dealloc_mw(w); });
                    },
                    null(EINVAL)});
    rows.push_back({"dealloc_mw op(NULL)",
                    [](Bed& b) { return from_int(ops(b.ctx).context.ops.dealloc_mw(nullptr)); }, rc(EINVAL)});
    rows.push_back({"bind_mw op(NULL qp)",
                    [](Bed& b) {
                        ibv_mw_bind bind{};
                        return from_int(ops(b.ctx).context.ops.bind_mw(nullptr, b.mw(IBV_MW_TYPE_1), &bind));
                    },
                    rc(EINVAL)});
    // mlx5_bind_mw refuses zero-based windows and zero-based MRs.
    rows.push_back({"ibv_bind_mw zero-based",
                    [](Bed& b) {
                        ibv_mw_bind bind{};
                        bind.bind_info = {b.bindable_mr(), reinterpret_cast<std::uint64_t>(b.buf.data()), 64,
                                          IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ZERO_BASED};
                        return from_int(ibv_bind_mw(b.ib_qp_rts(), b.mw(IBV_MW_TYPE_1), &bind));
                    },
                    rc(EINVAL)});
    rows.push_back({"ibv_bind_mw QP in RESET",
                    [](Bed& b) {
                        ibv_cq* q = b.cq();
                        ibv_qp_init_attr a{};
                        a.qp_type = IBV_QPT_RC;
                        a.send_cq = a.recv_cq = q;
                        a.cap.max_send_wr = a.cap.max_recv_wr = a.cap.max_send_sge = a.cap.max_recv_sge = 1;
                        ibv_qp* qp = ibv_create_qp(b.pd, &a);
                        REQUIRE(qp != nullptr);
                        ibv_mw* w = b.mw(IBV_MW_TYPE_1);
                        const std::uint32_t rkey = w->rkey;
                        ibv_mw_bind bind{};
                        bind.bind_info = {b.bindable_mr(), reinterpret_cast<std::uint64_t>(b.buf.data()), 64,
                                          IBV_ACCESS_REMOTE_READ};
                        const Outcome o = from_int(ibv_bind_mw(qp, w, &bind));
                        CHECK(w->rkey == rkey); // nothing posted: the key stays
                        CHECK(ibv_destroy_qp(qp) == 0);
                        return o;
                    },
                    rc(EINVAL)});
    // IBV_WR_BIND_MW through ibv_post_send.
    const auto bind_wr = [](Bed& b, ibv_qp* qp, ibv_mw* w, std::uint64_t len, unsigned access) {
        ibv_send_wr wr{};
        wr.opcode = IBV_WR_BIND_MW;
        wr.bind_mw.mw = w;
        wr.bind_mw.rkey = w ? ibv_inc_rkey(w->rkey) : 0;
        wr.bind_mw.bind_info = {b.bindable_mr(), reinterpret_cast<std::uint64_t>(b.buf.data()), len, access};
        return post_send_checked(qp, wr);
    };
    rows.push_back({"IBV_WR_BIND_MW without a window",
                    [=](Bed& b) { return bind_wr(b, b.ib_qp_rts(), nullptr, 64, IBV_ACCESS_REMOTE_READ); },
                    rc(EINVAL)});
    rows.push_back({"IBV_WR_BIND_MW unknown access bit",
                    [=](Bed& b) {
                        return bind_wr(b, b.ib_qp_rts(), b.mw(IBV_MW_TYPE_2), 64, IBV_ACCESS_MW_BIND);
                    },
                    rc(EINVAL)});
    // set_bind_wr (providers/mlx5/qp.c): a KLM covers at most 2 GiB.
    rows.push_back({"IBV_WR_BIND_MW over 2 GiB",
                    [=](Bed& b) {
                        return bind_wr(b, b.ib_qp_rts(), b.mw(IBV_MW_TYPE_2), (1ull << 31) + 1,
                                       IBV_ACCESS_REMOTE_READ);
                    },
                    rc(EOPNOTSUPP)});
    rows.push_back({"IBV_WR_LOCAL_INV on UD",
                    [](Bed& b) {
                        ibv_cq* q = b.cq();
                        ibv_qp_init_attr a{};
                        a.qp_type = IBV_QPT_UD;
                        a.send_cq = a.recv_cq = q;
                        a.cap.max_send_wr = a.cap.max_recv_wr = a.cap.max_send_sge = a.cap.max_recv_sge = 1;
                        ibv_qp* qp = ibv_create_qp(b.pd, &a);
                        REQUIRE(qp != nullptr);
                        for (ibv_qp_state s : {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS}) {
                            ibv_qp_attr at = good_attr(s);
                            const int mask = s == IBV_QPS_INIT  ? init_mask(IBV_QPT_UD)
                                             : s == IBV_QPS_RTR ? rtr_mask(IBV_QPT_UD)
                                                                : rts_mask(IBV_QPT_UD);
                            REQUIRE(ibv_modify_qp(qp, &at, mask) == 0);
                        }
                        ibv_send_wr wr{};
                        wr.opcode = IBV_WR_LOCAL_INV;
                        wr.invalidate_rkey = b.mw(IBV_MW_TYPE_2)->rkey;
                        const Outcome o = post_send_checked(qp, wr);
                        CHECK(ibv_destroy_qp(qp) == 0);
                        return o;
                    },
                    rc(EINVAL)});
    rows.push_back({"IBV_WR_SEND_WITH_INV on UC",
                    [](Bed& b) {
                        SendWr s(b);
                        s.wr.opcode = IBV_WR_SEND_WITH_INV;
                        s.wr.invalidate_rkey = 0x100;
                        return post_send_checked(b.ib_qp_rts(IBV_QPT_UC), s.wr);
                    },
                    rc(EINVAL)});
}

void cq_rows(std::vector<Row>& rows) {
    rows.push_back({"ibv_create_comp_channel(NULL)",
                    [](Bed&) {
                        errno = 0;
                        return from_ptr(ibv_create_comp_channel(nullptr), ibv_destroy_comp_channel);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_destroy_comp_channel(NULL)",
                    [](Bed&) { return from_int(ibv_destroy_comp_channel(nullptr)); }, rc(EINVAL)});
    rows.push_back({"ibv_destroy_comp_channel with a CQ",
                    [](Bed& b) {
                        ibv_comp_channel* ch = b.channel();
                        b.cq(nullptr, ch);
                        return b.busy(ibv_destroy_comp_channel(ch));
                    },
                    rc(EBUSY)});
    rows.push_back({"ibv_get_cq_event(NULL channel)",
                    [](Bed&) {
                        ibv_cq* cq;
                        void* cq_ctx;
                        errno = 0;
                        return from_int(ibv_get_cq_event(nullptr, &cq, &cq_ctx));
                    },
                    m1(EINVAL)});
    rows.push_back({"ibv_get_cq_event(NULL cq out)",
                    [](Bed& b) {
                        void* cq_ctx;
                        errno = 0;
                        return from_int(ibv_get_cq_event(b.channel(), nullptr, &cq_ctx));
                    },
                    m1(EINVAL)});
    rows.push_back({"ibv_get_cq_event(NULL context out)",
                    [](Bed& b) {
                        ibv_cq* cq;
                        errno = 0;
                        return from_int(ibv_get_cq_event(b.channel(), &cq, nullptr));
                    },
                    m1(EINVAL)});
    rows.push_back({"ibv_get_cq_event with no event on a non-blocking channel",
                    [](Bed& b) {
                        ibv_comp_channel* ch = b.channel();
                        ibv_cq* armed = b.cq(nullptr, ch);
                        REQUIRE(ibv_req_notify_cq(armed, 0) == 0);
                        return nonblocking(ch->fd, [&] {
                            ibv_cq* cq;
                            void* cq_ctx;
                            errno = 0;
                            return from_int(ibv_get_cq_event(ch, &cq, &cq_ctx));
                        });
                    },
                    m1(EAGAIN)});
    rows.push_back({"ibv_ack_cq_events(NULL) is harmless",
                    [](Bed&) {
                        ibv_ack_cq_events(nullptr, 1);
                        return returned();
                    },
                    returned()});
    rows.push_back({"ibv_create_cq(NULL context)",
                    [](Bed&) {
                        errno = 0;
                        return from_ptr(ibv_create_cq(nullptr, 16, nullptr, nullptr, 0),
                                        ibv_destroy_cq);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_create_cq cqe 0", [](Bed& b) { return create_cq(b, 0); }, null(EINVAL)});
    rows.push_back({"ibv_create_cq cqe -1", [](Bed& b) { return create_cq(b, -1); }, null(EINVAL)});
    rows.push_back({"ibv_create_cq cqe max_cqe (accepted)",
                    [](Bed& b) { return create_cq(b, max_cqe(b)); }, created()});
    rows.push_back({"ibv_create_cq cqe max_cqe + 1",
                    [](Bed& b) { return create_cq(b, max_cqe(b) + 1); }, null(EINVAL)});
    rows.push_back({"ibv_create_cq comp_vector num_comp_vectors",
                    [](Bed& b) { return create_cq(b, 16, nullptr, b.ctx->num_comp_vectors); },
                    null(EINVAL)});
    rows.push_back({"ibv_create_cq comp_vector -1",
                    [](Bed& b) { return create_cq(b, 16, nullptr, -1); }, null(EINVAL)});
    rows.push_back({"ibv_create_cq with another context's channel",
                    [](Bed& b) {
                        ibv_comp_channel* ch = ibv_create_comp_channel(b.other().ctx);
                        REQUIRE(ch != nullptr);
                        const Outcome o = create_cq(b, 16, ch);
                        CHECK(ibv_destroy_comp_channel(ch) == 0);
                        return o;
                    },
                    null(EINVAL)});
    // ibv_create_cq_ex: the wrapper reads context->abi_compat (no NULL context).
    rows.push_back({"ibv_create_cq_ex(NULL attr)",
                    [](Bed& b) {
                        errno = 0;
                        return from_ptr(ibv_create_cq_ex(b.ctx, nullptr), [](ibv_cq_ex* q) {
                            return ibv_destroy_cq(ibv_cq_ex_to_cq(q));
                        });
                    },
                    null(EINVAL)});
    const auto cq_ex_attr = [] {
        ibv_cq_init_attr_ex a{};
        a.cqe = 16;
        a.wc_flags = IBV_WC_STANDARD_FLAGS;
        return a;
    };
    // rdma-core (ibv_cmd_create_cq_ex): reserved comp_mask bits EINVAL,
    // reserved flags EOPNOTSUPP; device/README.md: unsupported wc_flags EOPNOTSUPP.
    for (unsigned bit = 2; bit < 32; ++bit)
        rows.push_back({bit_name("ibv_create_cq_ex comp_mask", bit),
                        [=](Bed& b) {
                            ibv_cq_init_attr_ex a = cq_ex_attr();
                            a.comp_mask = 1u << bit;
                            return create_cq_ex(b, a);
                        },
                        null(EINVAL)});
    for (unsigned bit = 2; bit < 32; ++bit)
        rows.push_back({bit_name("ibv_create_cq_ex flags", bit),
                        [=](Bed& b) {
                            ibv_cq_init_attr_ex a = cq_ex_attr();
                            a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
                            a.flags = 1u << bit;
                            return create_cq_ex(b, a);
                        },
                        null(EOPNOTSUPP)});
    for (unsigned bit = 0; bit < 64; ++bit) {
        if ((1ull << bit) & IBV_CREATE_CQ_SUP_WC_FLAGS) continue;
        rows.push_back({bit_name("ibv_create_cq_ex wc_flags", bit),
                        [=](Bed& b) {
                            ibv_cq_init_attr_ex a = cq_ex_attr();
                            a.wc_flags |= 1ull << bit;
                            return create_cq_ex(b, a);
                        },
                        null(EOPNOTSUPP)});
    }
    rows.push_back({"ibv_create_cq_ex cqe 0",
                    [=](Bed& b) {
                        ibv_cq_init_attr_ex a = cq_ex_attr();
                        a.cqe = 0;
                        return create_cq_ex(b, a);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_create_cq_ex cqe max_cqe + 1",
                    [=](Bed& b) {
                        ibv_cq_init_attr_ex a = cq_ex_attr();
                        a.cqe = static_cast<uint32_t>(max_cqe(b)) + 1;
                        return create_cq_ex(b, a);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_create_cq_ex comp_vector num_comp_vectors",
                    [=](Bed& b) {
                        ibv_cq_init_attr_ex a = cq_ex_attr();
                        a.comp_vector = static_cast<uint32_t>(b.ctx->num_comp_vectors);
                        return create_cq_ex(b, a);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_create_cq_ex with another context's channel",
                    [=](Bed& b) {
                        ibv_comp_channel* ch = ibv_create_comp_channel(b.other().ctx);
                        REQUIRE(ch != nullptr);
                        ibv_cq_init_attr_ex a = cq_ex_attr();
                        a.channel = ch;
                        const Outcome o = create_cq_ex(b, a);
                        CHECK(ibv_destroy_comp_channel(ch) == 0);
                        return o;
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_create_cq_ex MASK_PD with a NULL parent domain",
                    [=](Bed& b) {
                        ibv_cq_init_attr_ex a = cq_ex_attr();
                        a.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
                        return create_cq_ex(b, a);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_create_cq_ex MASK_PD with another context's PD",
                    [=](Bed& b) {
                        ibv_cq_init_attr_ex a = cq_ex_attr();
                        a.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
                        a.parent_domain = b.other().pd;
                        return create_cq_ex(b, a);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_destroy_cq(NULL)", [](Bed&) { return from_int(ibv_destroy_cq(nullptr)); },
                    rc(EINVAL)});
    rows.push_back({"ibv_destroy_cq with a WQ",
                    [](Bed& b) {
                        ibv_cq* cq = b.cq();
                        b.wq(b.pd, cq);
                        return b.busy(ibv_destroy_cq(cq));
                    },
                    rc(EBUSY)});
    rows.push_back({"ibv_destroy_cq with a raw QP",
                    [](Bed& b) {
                        ibv_cq* cq = b.cq();
                        b.raw_qp(b.pd, cq);
                        return b.busy(ibv_destroy_cq(cq));
                    },
                    rc(EBUSY)});
    // ibv_poll_cq / ibv_req_notify_cq go through cq->context->ops: a NULL CQ
    // crashes in the wrapper, so the op is called directly for it.
    rows.push_back({"ibv_poll_cq num_entries -1",
                    [](Bed& b) {
                        ibv_wc wc[1];
                        return from_int(ibv_poll_cq(b.cq(), -1, wc));
                    },
                    negative()});
    rows.push_back({"ibv_poll_cq NULL wc with num_entries 1",
                    [](Bed& b) { return from_int(ibv_poll_cq(b.cq(), 1, nullptr)); }, negative()});
    rows.push_back({"poll_cq op(NULL cq)",
                    [](Bed& b) {
                        ibv_wc wc[1];
                        return from_int(b.ctx->ops.poll_cq(nullptr, 1, wc));
                    },
                    negative()});
    rows.push_back({"req_notify_cq op(NULL cq)",
                    [](Bed& b) { return from_int(b.ctx->ops.req_notify_cq(nullptr, 0)); },
                    rc(EINVAL)});
    // ibv_start_poll: mlx5 refuses any attr->comp_mask with EINVAL.
    for (unsigned bit = 0; bit < 32; ++bit)
        rows.push_back({bit_name("ibv_start_poll attr comp_mask", bit),
                        [bit](Bed& b) {
                            ibv_poll_cq_attr attr{};
                            attr.comp_mask = 1u << bit;
                            return from_int(ibv_start_poll(b.cq_ex(), &attr));
                        },
                        rc(EINVAL)});
    rows.push_back({"ibv_start_poll(NULL attr)",
                    [](Bed& b) { return from_int(ibv_start_poll(b.cq_ex(), nullptr)); },
                    rc(EINVAL)});
    rows.push_back({"ibv_start_poll on an empty CQ",
                    [](Bed& b) {
                        ibv_poll_cq_attr attr{};
                        return from_int(ibv_start_poll(b.cq_ex(), &attr));
                    },
                    rc(ENOENT)});
}

void wq_rows(std::vector<Row>& rows) {
    // ibv_create_wq: the wrapper reads context->abi_compat (no NULL context).
    rows.push_back({"ibv_create_wq(NULL attr)",
                    [](Bed& b) {
                        errno = 0;
                        return from_ptr(ops(b.ctx).create_wq(b.ctx, nullptr), ibv_destroy_wq);
                    },
                    null(EINVAL)});
    for (unsigned bit = 1; bit < 32; ++bit) // IBV_WQ_INIT_ATTR_RESERVED = 1 << 1
        rows.push_back({bit_name("ibv_create_wq comp_mask", bit),
                        [bit](Bed& b) {
                            ibv_wq_init_attr a = good_wq(b);
                            a.comp_mask = 1u << bit;
                            return create_wq(b, a);
                        },
                        null(EINVAL)});
    for (unsigned bit = 4; bit < 32; ++bit) // IBV_WQ_FLAGS_RESERVED = 1 << 4
        rows.push_back({bit_name("ibv_create_wq create_flags", bit),
                        [bit](Bed& b) {
                            ibv_wq_init_attr a = good_wq(b);
                            a.comp_mask = IBV_WQ_INIT_ATTR_FLAGS;
                            a.create_flags = 1u << bit;
                            return create_wq(b, a);
                        },
                        null(EOPNOTSUPP)});
    rows.push_back({"ibv_create_wq wq_type IBV_WQT_RQ + 1",
                    [](Bed& b) {
                        ibv_wq_init_attr a = good_wq(b);
                        const int type = IBV_WQT_RQ + 1; // a C caller may store any value
                        std::memcpy(&a.wq_type, &type, sizeof type);
                        return create_wq(b, a);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_create_wq NULL pd",
                    [](Bed& b) {
                        ibv_wq_init_attr a = good_wq(b);
                        a.pd = nullptr;
                        return create_wq(b, a);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_create_wq NULL cq",
                    [](Bed& b) {
                        ibv_wq_init_attr a = good_wq(b);
                        a.cq = nullptr;
                        return create_wq(b, a);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_create_wq pd from another context",
                    [](Bed& b) {
                        ibv_wq_init_attr a = good_wq(b);
                        a.pd = b.other().pd;
                        return create_wq(b, a);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_create_wq cq from another context",
                    [](Bed& b) {
                        ibv_wq_init_attr a = good_wq(b);
                        a.cq = b.other().cq;
                        return create_wq(b, a);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_create_wq max_wr 0",
                    [](Bed& b) {
                        ibv_wq_init_attr a = good_wq(b);
                        a.max_wr = 0;
                        return create_wq(b, a);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_create_wq max_wr max_qp_wr (accepted)",
                    [](Bed& b) {
                        ibv_wq_init_attr a = good_wq(b);
                        a.max_wr = max_wr(b);
                        return create_wq(b, a);
                    },
                    created()});
    rows.push_back({"ibv_create_wq max_wr max_qp_wr + 1",
                    [](Bed& b) {
                        ibv_wq_init_attr a = good_wq(b);
                        a.max_wr = max_wr(b) + 1;
                        return create_wq(b, a);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_create_wq max_sge 0 (counts as 1, accepted)",
                    [](Bed& b) {
                        ibv_wq_init_attr a = good_wq(b);
                        a.max_sge = 0;
                        return create_wq(b, a);
                    },
                    created()});
    rows.push_back({"ibv_create_wq max_sge max_sge (accepted)",
                    [](Bed& b) {
                        ibv_wq_init_attr a = good_wq(b);
                        a.max_sge = max_sge(b);
                        return create_wq(b, a);
                    },
                    created()});
    rows.push_back({"ibv_create_wq max_sge max_sge + 1",
                    [](Bed& b) {
                        ibv_wq_init_attr a = good_wq(b);
                        a.max_sge = max_sge(b) + 1;
                        return create_wq(b, a);
                    },
                    null(EINVAL)});

    // ibv_modify_wq: the wrapper reads wq->context (a NULL WQ only through the op).
    rows.push_back({"modify_wq op(NULL wq)",
                    [](Bed& b) {
                        ibv_wq_attr a{};
                        a.attr_mask = IBV_WQ_ATTR_STATE;
                        a.wq_state = IBV_WQS_RDY;
                        return from_int(ops(b.ctx).modify_wq(nullptr, &a));
                    },
                    rc(EINVAL)});
    rows.push_back({"ibv_modify_wq(NULL attr)",
                    [](Bed& b) { return from_int(ibv_modify_wq(b.wq(), nullptr)); }, rc(EINVAL)});
    rows.push_back({"ibv_modify_wq attr_mask 0",
                    [](Bed& b) { return modify_wq_keeps_state(b.wq(), ibv_wq_attr{}); },
                    rc(EINVAL)});
    for (unsigned bit = 3; bit < 32; ++bit) // IBV_WQ_ATTR_RESERVED = 1 << 3
        rows.push_back({bit_name("ibv_modify_wq attr_mask", bit),
                        [bit](Bed& b) {
                            ibv_wq_attr a{};
                            a.attr_mask = IBV_WQ_ATTR_STATE | (1u << bit);
                            a.wq_state = IBV_WQS_RDY;
                            return modify_wq_keeps_state(b.wq(), a);
                        },
                        rc(EINVAL)});
    rows.push_back({"ibv_modify_wq CURR_STATE not the current state",
                    [](Bed& b) {
                        ibv_wq_attr a{};
                        a.attr_mask = IBV_WQ_ATTR_STATE | IBV_WQ_ATTR_CURR_STATE;
                        a.curr_wq_state = IBV_WQS_RDY;
                        a.wq_state = IBV_WQS_ERR;
                        return modify_wq_keeps_state(b.wq(), a);
                    },
                    rc(EINVAL)});
    for (int s : {static_cast<int>(IBV_WQS_UNKNOWN), static_cast<int>(IBV_WQS_UNKNOWN) + 1, -1})
        rows.push_back({"ibv_modify_wq to state " + std::to_string(s),
                        [s](Bed& b) { return modify_wq_to(b, IBV_WQS_RESET, s); }, rc(EINVAL)});
    rows.push_back({"ibv_modify_wq ERR -> RDY",
                    [](Bed& b) { return modify_wq_to(b, IBV_WQS_ERR, IBV_WQS_RDY); }, rc(EINVAL)});
    rows.push_back({"ibv_modify_wq RESET -> ERR",
                    [](Bed& b) { return modify_wq_to(b, IBV_WQS_RESET, IBV_WQS_ERR); },
                    rc(EINVAL)});
    for (unsigned flag : {static_cast<unsigned>(IBV_WQ_FLAGS_SCATTER_FCS),
                          static_cast<unsigned>(IBV_WQ_FLAGS_DELAY_DROP),
                          static_cast<unsigned>(IBV_WQ_FLAGS_PCI_WRITE_END_PADDING)})
        rows.push_back({"ibv_modify_wq flags_mask " + std::to_string(flag) + " (not changeable)",
                        [flag](Bed& b) {
                            ibv_wq_attr a{};
                            a.attr_mask = IBV_WQ_ATTR_FLAGS;
                            a.flags_mask = flag;
                            a.flags = flag;
                            return modify_wq_keeps_state(b.wq(), a);
                        },
                        rc(EOPNOTSUPP)});
    for (unsigned bit = 4; bit < 32; ++bit)
        rows.push_back({bit_name("ibv_modify_wq flags_mask", bit),
                        [bit](Bed& b) {
                            ibv_wq_attr a{};
                            a.attr_mask = IBV_WQ_ATTR_FLAGS;
                            a.flags_mask = 1u << bit;
                            return modify_wq_keeps_state(b.wq(), a);
                        },
                        rc(EOPNOTSUPP)});

    // ibv_post_wq_recv: the wrapper calls wq->post_recv (a NULL WQ crashes there).
    rows.push_back({"ibv_post_wq_recv num_sge above max_sge",
                    [](Bed& b) {
                        RecvWr r(b, 2);
                        return post_wq_checked(b.wq_in(IBV_WQS_RDY), r.wr);
                    },
                    rc(EINVAL)});
    rows.push_back({"ibv_post_wq_recv num_sge -1",
                    [](Bed& b) {
                        RecvWr r(b, -1);
                        return post_wq_checked(b.wq_in(IBV_WQS_RDY), r.wr);
                    },
                    rc(EINVAL)});
    rows.push_back({"ibv_post_wq_recv NULL sg_list with num_sge 1",
                    [](Bed& b) {
                        RecvWr r(b, 1);
                        r.wr.sg_list = nullptr;
                        return post_wq_checked(b.wq_in(IBV_WQS_RDY), r.wr);
                    },
                    rc(EINVAL)});
    rows.push_back({"ibv_post_wq_recv into a full ring",
                    [](Bed& b) {
                        ibv_wq* wq = b.wq(nullptr, nullptr, 1);
                        REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
                        RecvWr r(b, 1);
                        ibv_recv_wr* bad = nullptr;
                        ibv_recv_wr first = r.wr;
                        for (int i = 0; i < 64 && ibv_post_wq_recv(wq, &first, &bad) == 0; ++i) {
                        }
                        return post_wq_checked(wq, r.wr);
                    },
                    rc(ENOMEM)});
    rows.push_back({"ibv_post_wq_recv(NULL bad_wr)",
                    [](Bed& b) {
                        RecvWr r(b, 1);
                        return from_int(ibv_post_wq_recv(b.wq_in(IBV_WQS_RDY), &r.wr, nullptr));
                    },
                    rc(EINVAL)});

    // ibv_destroy_wq: the wrapper reads wq->context.
    rows.push_back({"destroy_wq op(NULL)",
                    [](Bed& b) { return from_int(ops(b.ctx).destroy_wq(nullptr)); }, rc(EINVAL)});
    rows.push_back({"ibv_destroy_wq in an indirection table",
                    [](Bed& b) {
                        ibv_wq* wq = b.wq();
                        b.table(wq);
                        return b.busy(ibv_destroy_wq(wq));
                    },
                    rc(EBUSY)});

    // ibv_create_rwq_ind_table
    const auto table_of = [](std::vector<ibv_wq*>& wqs, std::uint32_t log) {
        ibv_rwq_ind_table_init_attr a{};
        a.log_ind_tbl_size = log;
        a.ind_tbl = wqs.data();
        return a;
    };
    const auto create_table = [](Bed& b, ibv_rwq_ind_table_init_attr a) {
        errno = 0;
        return from_ptr(ibv_create_rwq_ind_table(b.ctx, &a), ibv_destroy_rwq_ind_table);
    };
    rows.push_back({"ibv_create_rwq_ind_table(NULL attr)",
                    [](Bed& b) {
                        errno = 0;
                        return from_ptr(ops(b.ctx).create_rwq_ind_table(b.ctx, nullptr),
                                        ibv_destroy_rwq_ind_table);
                    },
                    null(EINVAL)});
    for (unsigned bit = 0; bit < 32; ++bit) // IBV_CREATE_IND_TABLE_RESERVED = 1 << 0
        rows.push_back({bit_name("ibv_create_rwq_ind_table comp_mask", bit),
                        [=](Bed& b) {
                            std::vector<ibv_wq*> wqs{b.wq()};
                            ibv_rwq_ind_table_init_attr a = table_of(wqs, 0);
                            a.comp_mask = 1u << bit;
                            return create_table(b, a);
                        },
                        null(EINVAL)});
    rows.push_back({"ibv_create_rwq_ind_table at the maximum size (accepted)",
                    [=](Bed& b) {
                        const std::uint32_t log = log_max_table(b);
                        std::vector<ibv_wq*> wqs(std::size_t{1} << log, b.wq());
                        return create_table(b, table_of(wqs, log));
                    },
                    created()});
    rows.push_back({"ibv_create_rwq_ind_table one above the maximum size",
                    [=](Bed& b) {
                        const std::uint32_t log = log_max_table(b) + 1;
                        std::vector<ibv_wq*> wqs(std::size_t{1} << log, b.wq());
                        return create_table(b, table_of(wqs, log));
                    },
                    null(EINVAL)});
    for (std::uint32_t log : {31u, 32u, 0xffffffffu})
        rows.push_back({"ibv_create_rwq_ind_table log size " + std::to_string(log),
                        [=](Bed& b) {
                            std::vector<ibv_wq*> wqs{b.wq()};
                            return create_table(b, table_of(wqs, log));
                        },
                        null(EINVAL)});
    rows.push_back({"ibv_create_rwq_ind_table NULL ind_tbl",
                    [=](Bed& b) {
                        std::vector<ibv_wq*> wqs;
                        ibv_rwq_ind_table_init_attr a = table_of(wqs, 0);
                        a.ind_tbl = nullptr;
                        return create_table(b, a);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_create_rwq_ind_table a NULL entry",
                    [=](Bed& b) {
                        std::vector<ibv_wq*> wqs{b.wq(), nullptr};
                        return create_table(b, table_of(wqs, 1));
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_create_rwq_ind_table a WQ of another context",
                    [=](Bed& b) {
                        std::vector<ibv_wq*> wqs{b.wq(), b.wq(b.other().pd, b.other().cq)};
                        return create_table(b, table_of(wqs, 1));
                    },
                    null(EINVAL)});
    rows.push_back({"destroy_rwq_ind_table op(NULL)",
                    [](Bed& b) { return from_int(ops(b.ctx).destroy_rwq_ind_table(nullptr)); },
                    rc(EINVAL)});
    rows.push_back({"ibv_destroy_rwq_ind_table used by a QP",
                    [](Bed& b) {
                        ibv_rwq_ind_table* t = b.table();
                        b.rss_qp(t);
                        return b.busy(ibv_destroy_rwq_ind_table(t));
                    },
                    rc(EBUSY)});
}

void qp_rows(std::vector<Row>& rows) {
    const auto rss = [](Bed& b) { return rss_qp_attr(b.pd, b.table(), 0); };
    // The wrapper reads attr->comp_mask: a NULL attr only through the op.
    rows.push_back({"create_qp_ex op(NULL attr)",
                    [](Bed& b) {
                        errno = 0;
                        return from_ptr(ops(b.ctx).create_qp_ex(b.ctx, nullptr), ibv_destroy_qp);
                    },
                    null(EINVAL)});
    // Bits 3 (MAX_TSO_HEADER), 6 (SEND_OPS_FLAGS, raw-packet QPs): known, not
    // emulated; 7.. reserved. the README is silent and mlx5 returns NULL without
    // errno; EOPNOTSUPP makes rdma-core's tests skip. Bit 1 (XRCD) is read for
    // XRC TGT QPs only and ignored otherwise, as libibverbs' create_qp_ex_common.
    for (unsigned bit : {3u, 6u})
        rows.push_back({bit_name("ibv_create_qp_ex comp_mask (not emulated)", bit),
                        [=](Bed& b) {
                            ibv_qp_init_attr_ex a = rss(b);
                            a.comp_mask |= 1u << bit;
                            return create_qp_ex(b, a);
                        },
                        null(EOPNOTSUPP)});
    for (unsigned bit = 7; bit < 32; ++bit)
        rows.push_back({bit_name("ibv_create_qp_ex comp_mask", bit),
                        [=](Bed& b) {
                            ibv_qp_init_attr_ex a = rss(b);
                            a.comp_mask |= 1u << bit;
                            return create_qp_ex(b, a);
                        },
                        null(EOPNOTSUPP)});
    for (unsigned bit = 0; bit < 32; ++bit) {
        const unsigned supported = IBV_QP_CREATE_SCATTER_FCS | IBV_QP_CREATE_CVLAN_STRIPPING |
                                   IBV_QP_CREATE_PCI_WRITE_END_PADDING;
        if ((1u << bit) & supported) continue;
        rows.push_back({bit_name("ibv_create_qp_ex create_flags", bit),
                        [=](Bed& b) {
                            ibv_qp_init_attr_ex a = rss(b);
                            a.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
                            a.create_flags = 1u << bit;
                            return create_qp_ex(b, a);
                        },
                        null(EOPNOTSUPP)});
    }
    // RSS attributes on RC/UC/UD are EOPNOTSUPP as other types are (RSS is raw-packet only).
    for (ibv_qp_type t : {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD, IBV_QPT_XRC_SEND, IBV_QPT_DRIVER})
        rows.push_back({"ibv_create_qp_ex qp_type " + std::to_string(t) + " (with RSS: not emulated)",
                        [=](Bed& b) {
                            ibv_qp_init_attr_ex a = rss(b);
                            a.qp_type = t;
                            return create_qp_ex(b, a);
                        },
                        null(EOPNOTSUPP)});
    rows.push_back({"ibv_create_qp_ex NULL pd",
                    [=](Bed& b) {
                        ibv_qp_init_attr_ex a = rss(b);
                        a.pd = nullptr;
                        return create_qp_ex(b, a);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_create_qp_ex pd from another context",
                    [=](Bed& b) {
                        ibv_qp_init_attr_ex a = rss(b);
                        a.pd = b.other().pd;
                        return create_qp_ex(b, a);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_create_qp_ex without IBV_QP_INIT_ATTR_PD",
                    [=](Bed& b) {
                        ibv_qp_init_attr_ex a = rss(b);
                        a.comp_mask &= ~static_cast<uint32_t>(IBV_QP_INIT_ATTR_PD);
                        return create_qp_ex(b, a);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_create_qp_ex NULL indirection table",
                    [=](Bed& b) {
                        ibv_qp_init_attr_ex a = rss(b);
                        a.rwq_ind_tbl = nullptr;
                        return create_qp_ex(b, a);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_create_qp_ex indirection table from another context",
                    [=](Bed& b) {
                        ibv_qp_init_attr_ex a = rss(b);
                        a.rwq_ind_tbl = b.table(b.wq(b.other().pd, b.other().cq));
                        return create_qp_ex(b, a);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_create_qp_ex IND_TABLE without RX_HASH",
                    [=](Bed& b) {
                        ibv_qp_init_attr_ex a = rss(b);
                        a.comp_mask &= ~static_cast<uint32_t>(IBV_QP_INIT_ATTR_RX_HASH);
                        return create_qp_ex(b, a);
                    },
                    null(EINVAL)});
    for (std::uint8_t fn : {std::uint8_t{0}, std::uint8_t{2}, std::uint8_t{0x80}})
        rows.push_back({"ibv_create_qp_ex hash function " + std::to_string(fn),
                        [=](Bed& b) {
                            ibv_qp_init_attr_ex a = rss(b);
                            a.rx_hash_conf.rx_hash_function = fn;
                            return create_qp_ex(b, a);
                        },
                        null(EOPNOTSUPP)});
    for (std::uint8_t len : {std::uint8_t{0}, std::uint8_t{39}, std::uint8_t{41}})
        rows.push_back({"ibv_create_qp_ex hash key length " + std::to_string(len),
                        [=](Bed& b) {
                            ibv_qp_init_attr_ex a = rss(b);
                            a.rx_hash_conf.rx_hash_key_len = len;
                            return create_qp_ex(b, a);
                        },
                        null(EINVAL)});
    rows.push_back({"ibv_create_qp_ex NULL hash key",
                    [=](Bed& b) {
                        ibv_qp_init_attr_ex a = rss(b);
                        a.rx_hash_conf.rx_hash_key = nullptr;
                        return create_qp_ex(b, a);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_create_qp_ex no hash fields over a two-entry table",
                    [](Bed& b) {
                        std::vector<ibv_wq*> wqs{b.wq(), b.wq()};
                        ibv_rwq_ind_table* t = make_table(b.ctx, wqs, 1);
                        ibv_qp_init_attr_ex a = rss_qp_attr(b.pd, t, 0);
                        const Outcome o = create_qp_ex(b, a);
                        CHECK(ibv_destroy_rwq_ind_table(t) == 0);
                        return o;
                    },
                    null(EINVAL)});
    for (auto [name, fields] :
         {std::pair<const char*, std::uint64_t>{"IPv4 and IPv6",
                                                IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV6},
          std::pair<const char*, std::uint64_t>{"TCP and UDP ports", IBV_RX_HASH_SRC_PORT_TCP |
                                                                         IBV_RX_HASH_DST_PORT_UDP}})
        rows.push_back({std::string("ibv_create_qp_ex hash fields mix ") + name,
                        [=, mask = fields](Bed& b) { // clang 14: no capture of a binding
                            ibv_qp_init_attr_ex a = rss(b);
                            a.rx_hash_conf.rx_hash_fields_mask = mask;
                            return create_qp_ex(b, a);
                        },
                        null(EINVAL)});
    // Hash fields past the eight IPv4/IPv6/TCP/UDP bits (IPSEC_SPI, INNER,
    // reserved): not emulated.
    for (unsigned bit = 8; bit < 64; ++bit)
        rows.push_back({bit_name("ibv_create_qp_ex rx_hash_fields_mask", bit),
                        [=](Bed& b) {
                            ibv_qp_init_attr_ex a = rss(b);
                            a.rx_hash_conf.rx_hash_fields_mask = 1ull << bit;
                            return create_qp_ex(b, a);
                        },
                        null(EOPNOTSUPP)});

    // The exported ibv_create_qp (plain RAW_PACKET QPs).
    const auto create_qp = [](Bed&, ibv_pd* pd, ibv_qp_init_attr* a) {
        errno = 0;
        return from_ptr(ibv_create_qp(pd, a), ibv_destroy_qp);
    };
    rows.push_back({"ibv_create_qp(NULL pd)",
                    [=](Bed& b) {
                        ibv_cq* cq = b.cq();
                        ibv_qp_init_attr a = b.raw_attr(cq, cq);
                        return create_qp(b, nullptr, &a);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_create_qp(NULL attr)", [=](Bed& b) { return create_qp(b, b.pd, nullptr); },
                    null(EINVAL)});
    rows.push_back({"ibv_create_qp qp_type XRC_RECV (its XRCD needs ibv_create_qp_ex)",
                    [=](Bed& b) {
                        ibv_cq* cq = b.cq();
                        ibv_qp_init_attr a = b.raw_attr(cq, cq);
                        a.qp_type = IBV_QPT_XRC_RECV;
                        return create_qp(b, b.pd, &a);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_create_qp NULL send_cq",
                    [=](Bed& b) {
                        ibv_cq* cq = b.cq();
                        ibv_qp_init_attr a = b.raw_attr(nullptr, cq);
                        return create_qp(b, b.pd, &a);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_create_qp NULL recv_cq",
                    [=](Bed& b) {
                        ibv_cq* cq = b.cq();
                        ibv_qp_init_attr a = b.raw_attr(cq, nullptr);
                        return create_qp(b, b.pd, &a);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_create_qp recv_cq from another context",
                    [=](Bed& b) {
                        ibv_cq* cq = b.cq();
                        ibv_qp_init_attr a = b.raw_attr(cq, b.other().cq);
                        return create_qp(b, b.pd, &a);
                    },
                    null(EINVAL)});
    struct CapCase {
        const char* name;
        std::uint32_t ibv_qp_cap::*field;
        bool sge;
    };
    for (const CapCase& c : {CapCase{"max_send_wr", &ibv_qp_cap::max_send_wr, false},
                             CapCase{"max_recv_wr", &ibv_qp_cap::max_recv_wr, false},
                             CapCase{"max_send_sge", &ibv_qp_cap::max_send_sge, true},
                             CapCase{"max_recv_sge", &ibv_qp_cap::max_recv_sge, true}}) {
        rows.push_back({std::string("ibv_create_qp ") + c.name + " at the maximum (accepted)",
                        [=](Bed& b) {
                            ibv_cq* cq = b.cq();
                            ibv_qp_init_attr a = b.raw_attr(cq, cq);
                            a.cap.*c.field = c.sge ? max_sge(b) : max_wr(b);
                            return create_qp(b, b.pd, &a);
                        },
                        created()});
        rows.push_back({std::string("ibv_create_qp ") + c.name + " above the maximum",
                        [=](Bed& b) {
                            ibv_cq* cq = b.cq();
                            ibv_qp_init_attr a = b.raw_attr(cq, cq);
                            a.cap.*c.field = (c.sge ? max_sge(b) : max_wr(b)) + 1;
                            return create_qp(b, b.pd, &a);
                        },
                        null(EINVAL)});
    }

    // ibv_modify_qp / ibv_query_qp / ibv_destroy_qp (exported).
    rows.push_back({"ibv_modify_qp(NULL qp)",
                    [](Bed&) {
                        ibv_qp_attr a{};
                        return from_int(ibv_modify_qp(nullptr, &a, IBV_QP_STATE));
                    },
                    rc(EINVAL)});
    rows.push_back(
        {"ibv_modify_qp(NULL attr)",
         [](Bed& b) { return from_int(ibv_modify_qp(b.raw_qp(), nullptr, IBV_QP_STATE)); },
         rc(EINVAL)});
    {
        const int known = IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX |
                          IBV_QP_QKEY | IBV_QP_RATE_LIMIT;
        for (unsigned bit = 0; bit < 32; ++bit) {
            if ((1u << bit) & static_cast<unsigned>(known)) continue;
            rows.push_back({bit_name("ibv_modify_qp attr_mask (not for a raw QP)", bit),
                            [bit](Bed& b) {
                                ibv_qp* qp = b.raw_qp();
                                ibv_qp_attr a{};
                                a.qp_state = IBV_QPS_INIT;
                                const Outcome o = from_int(ibv_modify_qp(
                                    qp, &a, IBV_QP_STATE | static_cast<int>(1u << bit)));
                                CHECK(qp->state == IBV_QPS_RESET);
                                return o;
                            },
                            rc(EINVAL)});
        }
    }
    for (ibv_qp_state to : {IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD, IBV_QPS_SQE})
        rows.push_back({"ibv_modify_qp RESET -> " + std::to_string(to),
                        [to](Bed& b) {
                            ibv_qp* qp = b.raw_qp();
                            ibv_qp_attr a{};
                            a.qp_state = to;
                            const Outcome o = from_int(ibv_modify_qp(qp, &a, IBV_QP_STATE));
                            CHECK(qp->state == IBV_QPS_RESET);
                            return o;
                        },
                        rc(EINVAL)});
    rows.push_back({"ibv_modify_qp CUR_STATE not the current state",
                    [](Bed& b) {
                        ibv_qp_attr a{};
                        a.qp_state = IBV_QPS_INIT;
                        a.cur_qp_state = IBV_QPS_RTS;
                        return from_int(
                            ibv_modify_qp(b.raw_qp(), &a, IBV_QP_STATE | IBV_QP_CUR_STATE));
                    },
                    rc(EINVAL)});
    rows.push_back({"ibv_modify_qp port_num 2",
                    [](Bed& b) {
                        ibv_qp_attr a{};
                        a.qp_state = IBV_QPS_INIT;
                        a.port_num = 2;
                        return from_int(ibv_modify_qp(b.raw_qp(), &a, IBV_QP_STATE | IBV_QP_PORT));
                    },
                    rc(EINVAL)});
    rows.push_back({"ibv_query_qp(NULL qp)",
                    [](Bed&) {
                        ibv_qp_attr a;
                        ibv_qp_init_attr i;
                        return from_int(ibv_query_qp(nullptr, &a, IBV_QP_STATE, &i));
                    },
                    rc(EINVAL)});
    rows.push_back({"ibv_query_qp(NULL attr)",
                    [](Bed& b) {
                        ibv_qp_init_attr i;
                        return from_int(ibv_query_qp(b.raw_qp(), nullptr, IBV_QP_STATE, &i));
                    },
                    rc(EINVAL)});
    rows.push_back({"ibv_query_qp(NULL init_attr)",
                    [](Bed& b) {
                        ibv_qp_attr a;
                        return from_int(ibv_query_qp(b.raw_qp(), &a, IBV_QP_STATE, nullptr));
                    },
                    rc(EINVAL)});
    rows.push_back({"ibv_destroy_qp(NULL)", [](Bed&) { return from_int(ibv_destroy_qp(nullptr)); },
                    rc(EINVAL)});
    rows.push_back({"ibv_destroy_qp with a flow",
                    [](Bed& b) {
                        ibv_qp* qp = b.rss_qp();
                        b.flow(qp);
                        return b.busy(ibv_destroy_qp(qp));
                    },
                    rc(EBUSY)});

    // ibv_post_send / ibv_post_recv go through qp->context->ops: a NULL QP
    // crashes in the wrapper, so the op is called directly for it.
    rows.push_back({"post_send op(NULL qp)",
                    [](Bed& b) {
                        SendWr s(b);
                        ibv_send_wr* bad = nullptr;
                        return from_int(b.ctx->ops.post_send(nullptr, &s.wr, &bad));
                    },
                    rc(EINVAL)});
    for (ibv_qp_state st : {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR})
        rows.push_back({"ibv_post_send on a raw QP in state " + std::to_string(st),
                        [st](Bed& b) {
                            SendWr s(b);
                            return post_send_checked(b.raw_qp_in(st), s.wr);
                        },
                        rc(EINVAL)});
    rows.push_back({"ibv_post_send on an RSS QP",
                    [](Bed& b) {
                        SendWr s(b);
                        return post_send_checked(b.rss_qp(), s.wr);
                    },
                    rc(EINVAL)});
    rows.push_back({"ibv_post_send opcode RDMA_WRITE on a raw QP",
                    [](Bed& b) {
                        SendWr s(b);
                        s.wr.opcode = IBV_WR_RDMA_WRITE;
                        return post_send_checked(b.raw_qp_in(IBV_QPS_RTS), s.wr);
                    },
                    rc(EINVAL)});
    rows.push_back({"ibv_post_send num_sge above max_send_sge",
                    [](Bed& b) {
                        SendWr s(b);
                        ibv_sge two[2] = {s.sge, s.sge};
                        s.wr.sg_list = two;
                        s.wr.num_sge = 2;
                        return post_send_checked(b.raw_qp_in(IBV_QPS_RTS), s.wr);
                    },
                    rc(EINVAL)});
    rows.push_back({"ibv_post_send inline data above max_inline_data",
                    [](Bed& b) {
                        SendWr s(b, 65);
                        s.wr.send_flags = IBV_SEND_INLINE;
                        return post_send_checked(b.raw_qp_in(IBV_QPS_RTS), s.wr);
                    },
                    rc(EINVAL)});
    rows.push_back({"ibv_post_send(NULL bad_wr)",
                    [](Bed& b) {
                        SendWr s(b);
                        return from_int(ibv_post_send(b.raw_qp_in(IBV_QPS_RTS), &s.wr, nullptr));
                    },
                    rc(EINVAL)});
    rows.push_back({"post_recv op(NULL qp)",
                    [](Bed& b) {
                        RecvWr r(b);
                        ibv_recv_wr* bad = nullptr;
                        return from_int(b.ctx->ops.post_recv(nullptr, &r.wr, &bad));
                    },
                    rc(EINVAL)});
    rows.push_back({"ibv_post_recv on an RSS QP (it receives through its WQs)",
                    [](Bed& b) {
                        RecvWr r(b);
                        return post_recv_checked(b.rss_qp(), r.wr);
                    },
                    rc(EINVAL)});
    rows.push_back({"ibv_post_recv num_sge above max_recv_sge",
                    [](Bed& b) {
                        RecvWr r(b, 2);
                        return post_recv_checked(b.raw_qp(), r.wr);
                    },
                    rc(EINVAL)});
    rows.push_back({"ibv_post_recv into a full ring",
                    [](Bed& b) {
                        ibv_qp* qp = b.raw_qp();
                        RecvWr r(b);
                        ibv_recv_wr first = r.wr;
                        ibv_recv_wr* bad = nullptr;
                        for (int i = 0; i < 64 && ibv_post_recv(qp, &first, &bad) == 0; ++i) {
                        }
                        return post_recv_checked(qp, r.wr);
                    },
                    rc(ENOMEM)});

    // ibv_create_flow / ibv_destroy_flow: the wrappers read qp->context and
    // flow->context (NULL objects only through the ops).
    rows.push_back({"ibv_create_flow(NULL attr)",
                    [](Bed& b) {
                        errno = 0;
                        return from_ptr(ibv_create_flow(b.rss_qp(), nullptr), ibv_destroy_flow);
                    },
                    null(EINVAL)});
    rows.push_back({"create_flow op(NULL qp)",
                    [](Bed& b) {
                        EthFlowAttr f = eth_flow();
                        errno = 0;
                        return from_ptr(ops(b.ctx).ibv_create_flow(nullptr, &f.attr),
                                        ibv_destroy_flow);
                    },
                    null(EINVAL)});
    rows.push_back({"ibv_create_flow port 2",
                    [](Bed& b) {
                        EthFlowAttr f = eth_flow();
                        f.attr.port = 2;
                        errno = 0;
                        return from_ptr(ibv_create_flow(b.rss_qp(), &f.attr), ibv_destroy_flow);
                    },
                    null(EINVAL)});
    for (unsigned bit = 0; bit < 32; ++bit)
        rows.push_back({bit_name("ibv_create_flow comp_mask", bit),
                        [bit](Bed& b) {
                            EthFlowAttr f = eth_flow();
                            f.attr.comp_mask = 1u << bit;
                            errno = 0;
                            return from_ptr(ibv_create_flow(b.rss_qp(), &f.attr), ibv_destroy_flow);
                        },
                        null(EINVAL)});
    rows.push_back({"ibv_create_flow unknown spec type",
                    [](Bed& b) {
                        EthFlowAttr f = eth_flow();
                        f.eth.type = static_cast<ibv_flow_spec_type>(0x7f);
                        errno = 0;
                        return from_ptr(ibv_create_flow(b.rss_qp(), &f.attr), ibv_destroy_flow);
                    },
                    null(EOPNOTSUPP)});
    rows.push_back({"destroy_flow op(NULL)",
                    [](Bed& b) { return from_int(ops(b.ctx).ibv_destroy_flow(nullptr)); },
                    rc(EINVAL)});
}

// Verbs that are not emulated answer EOPNOTSUPP (device/README.md, "The library seen by a program"), through
// the exported name or through an op left NULL in the context.
void unsupported_rows(std::vector<Row>& rows) {
    const auto np = [](auto* p) {
        CHECK(p == nullptr);
        return Outcome{p == nullptr ? Kind::null_errno : Kind::created, errno};
    };
    const auto add = [&rows](std::string name, std::function<Outcome(Bed&)> f, Outcome e) {
        rows.push_back({std::move(name),
                        [f](Bed& b) {
                            errno = 0;
                            return f(b);
                        },
                        e});
    };
    // SRQs and AHs exist (device/README.md, "Shared receive queues",
    // "Address handles"): their bad inputs.
    add(
        "ibv_create_srq max_wr above max_srq_wr",
        [np](Bed& b) {
            ibv_srq_init_attr a{};
            a.attr.max_wr = 1u << 20;
            a.attr.max_sge = 1;
            return np(ibv_create_srq(b.pd, &a));
        },
        null(EINVAL));
    add(
        "ibv_create_srq_ex (XRC without XRCD and CQ)",
        [np](Bed& b) {
            ibv_srq_init_attr_ex a{};
            a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
            a.srq_type = IBV_SRQT_XRC;
            a.pd = b.pd;
            return np(ibv_create_srq_ex(b.ctx, &a));
        },
        null(EINVAL));
    add(
        "ibv_create_srq_ex (basic: through ibv_create_srq) max_sge above max_srq_sge",
        [np](Bed& b) {
            ibv_srq_init_attr_ex a{};
            a.comp_mask = IBV_SRQ_INIT_ATTR_PD;
            a.pd = b.pd;
            a.attr.max_wr = 4;
            a.attr.max_sge = 64;
            return np(ibv_create_srq_ex(b.ctx, &a));
        },
        null(EINVAL));
    add(
        "ibv_modify_srq(NULL)",
        [](Bed&) {
            ibv_srq_attr a{};
            return from_int(ibv_modify_srq(nullptr, &a, IBV_SRQ_LIMIT));
        },
        rc(EINVAL));
    add(
        "ibv_query_srq(NULL)",
        [](Bed&) {
            ibv_srq_attr a{};
            return from_int(ibv_query_srq(nullptr, &a));
        },
        rc(EINVAL));
    add(
        "ibv_destroy_srq(NULL)", [](Bed&) { return from_int(ibv_destroy_srq(nullptr)); }, rc(EINVAL));
    add(
        "ibv_create_ah without a GRH (RoCE needs one)",
        [np](Bed& b) {
            ibv_ah_attr a{};
            a.port_num = 1;
            return np(ibv_create_ah(b.pd, &a));
        },
        null(EINVAL));
    add(
        "ibv_destroy_ah(NULL)", [](Bed&) { return from_int(ibv_destroy_ah(nullptr)); }, rc(EINVAL));
    add(
        "ibv_create_ah_from_wc without IBV_WC_GRH",
        [np](Bed& b) {
            ibv_wc wc{};
            ibv_grh grh{};
            return np(ibv_create_ah_from_wc(b.pd, &wc, &grh, 1));
        },
        null(EINVAL));
    add(
        "ibv_init_ah_from_wc GRH neither IPv6 nor IPv4",
        [](Bed& b) {
            ibv_wc wc{};
            wc.wc_flags = IBV_WC_GRH;
            ibv_grh grh{};
            ibv_ah_attr a{};
            return from_int(ibv_init_ah_from_wc(b.ctx, 1, &wc, &grh, &a));
        },
        m1(EPROTONOSUPPORT));
    add(
        "ibv_attach_mcast raw-packet QP",
        [](Bed& b) {
            ibv_gid gid{};
            gid.raw[0] = 0xff;
            return from_int(ibv_attach_mcast(b.raw_qp(), &gid, 0));
        },
        rc(EINVAL));
    add(
        "ibv_detach_mcast raw-packet QP",
        [](Bed& b) {
            ibv_gid gid{};
            gid.raw[0] = 0xff;
            return from_int(ibv_detach_mcast(b.raw_qp(), &gid, 0));
        },
        rc(EINVAL));
    add(
        "ibv_open_xrcd fd -1 without O_CREAT",
        [np](Bed& b) {
            ibv_xrcd_init_attr a{};
            a.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
            a.fd = -1;
            a.oflags = 0;
            return np(ibv_open_xrcd(b.ctx, &a));
        },
        null(EAGAIN));
    add(
        "ibv_open_xrcd without OFLAGS",
        [np](Bed& b) {
            ibv_xrcd_init_attr a{};
            a.comp_mask = IBV_XRCD_INIT_ATTR_FD;
            a.fd = -1;
            return np(ibv_open_xrcd(b.ctx, &a));
        },
        null(EINVAL));
    add(
        "ibv_alloc_dm with a comp_mask",
        [np](Bed& b) {
            ibv_alloc_dm_attr a{};
            a.length = 64;
            a.comp_mask = 1;
            return np(ibv_alloc_dm(b.ctx, &a));
        },
        null(EINVAL));
    add(
        "ibv_reg_dm_mr without ZERO_BASED",
        [np](Bed& b) {
            ibv_alloc_dm_attr a{};
            a.length = 64;
            ibv_dm* dm = ibv_alloc_dm(b.ctx, &a);
            REQUIRE(dm != nullptr);
            const Outcome o = np(ibv_reg_dm_mr(b.pd, dm, 0, 64, IBV_ACCESS_LOCAL_WRITE));
            CHECK(ibv_free_dm(dm) == 0);
            return o;
        },
        null(EINVAL));
    add(
        "free_dm op(NULL)", [](Bed& b) { return from_int(ops(b.ctx).free_dm(nullptr)); },
        rc(EINVAL));
    add(
        "ibv_reg_dmabuf_mr",
        [np](Bed& b) { return np(ibv_reg_dmabuf_mr(b.pd, 0, 64, 0, -1, IBV_ACCESS_LOCAL_WRITE)); },
        null(EOPNOTSUPP));
    add(
        "ibv_create_counters",
        [np](Bed& b) {
            ibv_counters_init_attr a{};
            return np(ibv_create_counters(b.ctx, &a));
        },
        null(EOPNOTSUPP));
    add(
        "ibv_create_flow_action_esp",
        [np](Bed& b) {
            ibv_flow_action_esp_attr a{};
            return np(ibv_create_flow_action_esp(b.ctx, &a));
        },
        null(EOPNOTSUPP));
    add(
        "ibv_alloc_td",
        [np](Bed& b) {
            ibv_td_init_attr a{};
            return np(ibv_alloc_td(b.ctx, &a));
        },
        null(EOPNOTSUPP));
    add(
        "ibv_alloc_parent_domain with an unknown comp_mask bit",
        [np](Bed& b) {
            ibv_parent_domain_init_attr a{};
            a.pd = b.pd;
            a.comp_mask = 1u << 7;
            return np(ibv_alloc_parent_domain(b.ctx, &a));
        },
        null(EINVAL));
    add(
        "ibv_alloc_null_mr", [np](Bed& b) { return np(ibv_alloc_null_mr(b.pd)); },
        null(EOPNOTSUPP));
    add(
        "ibv_open_qp",
        [np](Bed& b) {
            ibv_qp_open_attr a{};
            return np(ibv_open_qp(b.ctx, &a));
        },
        null(EOPNOTSUPP));
    add(
        "ibv_advise_mr naming no ODP MR (asynchronous: EINVAL)",
        [](Bed& b) {
            ibv_sge sge{};
            return from_int(ibv_advise_mr(b.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1));
        },
        rc(EINVAL));
    add(
        "ibv_modify_cq",
        [](Bed& b) {
            ibv_modify_cq_attr a{};
            return from_int(ibv_modify_cq(b.cq(), &a));
        },
        rc(EOPNOTSUPP));
    add(
        "ibv_resize_cq to 0 entries", [](Bed& b) { return from_int(ibv_resize_cq(b.cq(), 0)); },
        rc(EINVAL));
    add(
        "ibv_query_rt_values_ex",
        [](Bed& b) {
            ibv_values_ex v{};
            v.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
            return from_int(ibv_query_rt_values_ex(b.ctx, &v));
        },
        rc(EOPNOTSUPP));
    add(
        "ibv_modify_qp_rate_limit",
        [](Bed& b) {
            ibv_qp_rate_limit_attr a{};
            return from_int(ibv_modify_qp_rate_limit(b.raw_qp(), &a));
        },
        rc(EOPNOTSUPP));
    // A bad rereg is IBV_REREG_MR_ERR_INPUT (-1) with errno EINVAL; the MR stays.
    add(
        "ibv_rereg_mr with remote write but no local write",
        [](Bed& b) {
            ibv_mr* m = b.mr();
            return from_int(ibv_rereg_mr(m, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
                                         IBV_ACCESS_REMOTE_WRITE));
        },
        fails(EINVAL));
    // Shared contexts: -1 is no descriptor (libibverbs' fstat check), and no
    // object has the handle ~0 (the kernel's lookup: ENOENT).
    add(
        "ibv_import_device of fd -1", [np](Bed&) { return np(ibv_import_device(-1)); },
        null(EINVAL));
    add(
        "ibv_import_pd of an unknown handle",
        [np](Bed& b) { return np(ibv_import_pd(b.ctx, ~0u)); }, null(ENOENT));
    add(
        "ibv_import_mr of an unknown handle", [np](Bed& b) { return np(ibv_import_mr(b.pd, ~0u)); },
        null(ENOENT));
    add(
        "ibv_import_dm of an unknown handle",
        [np](Bed& b) { return np(ibv_import_dm(b.ctx, ~0u)); }, null(ENOENT));
    add(
        "ibv_qp_to_qp_ex (no QP has send ops)",
        [np](Bed& b) { return np(ibv_qp_to_qp_ex(b.raw_qp())); }, null(EOPNOTSUPP));
    // Private provider interface: stubs.
    add(
        "verbs_open_device", [np](Bed& b) { return np(verbs_open_device(b.ctx->device, nullptr)); },
        null(EOPNOTSUPP));
    add(
        "ibv_cmd_poll_cq",
        [](Bed& b) {
            ibv_wc wc[1];
            return from_int(ibv_cmd_poll_cq(b.cq(), 1, wc));
        },
        m1(EOPNOTSUPP));
    add(
        "ibv_cmd_req_notify_cq", [](Bed& b) { return from_int(ibv_cmd_req_notify_cq(b.cq(), 0)); },
        rc(EOPNOTSUPP));
    add(
        "ibv_cmd_post_send",
        [](Bed& b) {
            SendWr s(b);
            ibv_send_wr* bad = nullptr;
            const Outcome o = from_int(ibv_cmd_post_send(b.raw_qp(), &s.wr, &bad));
            CHECK(bad == &s.wr);
            return o;
        },
        rc(EOPNOTSUPP));
    add(
        "ibv_cmd_post_recv",
        [](Bed& b) {
            RecvWr r(b);
            ibv_recv_wr* bad = nullptr;
            const Outcome o = from_int(ibv_cmd_post_recv(b.raw_qp(), &r.wr, &bad));
            CHECK(bad == &r.wr);
            return o;
        },
        rc(EOPNOTSUPP));
    add(
        "ibv_cmd_dealloc_pd", [](Bed& b) { return from_int(ibv_cmd_dealloc_pd(b.new_pd())); },
        rc(EOPNOTSUPP));
    add(
        "ibv_cmd_destroy_cq", [](Bed& b) { return from_int(ibv_cmd_destroy_cq(b.cq())); },
        rc(EOPNOTSUPP));
    add(
        "ibv_cmd_destroy_qp", [](Bed& b) { return from_int(ibv_cmd_destroy_qp(b.raw_qp())); },
        rc(EOPNOTSUPP));
    add(
        "ibv_cmd_destroy_wq", [](Bed& b) { return from_int(ibv_cmd_destroy_wq(b.wq())); },
        rc(EOPNOTSUPP));
    add(
        "ibv_cmd_destroy_rwq_ind_table",
        [](Bed& b) { return from_int(ibv_cmd_destroy_rwq_ind_table(b.table())); }, rc(EOPNOTSUPP));
    add(
        "ibv_cmd_destroy_flow",
        [](Bed& b) { return from_int(ibv_cmd_destroy_flow(b.flow(b.rss_qp()))); }, rc(EOPNOTSUPP));
    add(
        "ibv_cmd_destroy_srq", [](Bed&) { return from_int(ibv_cmd_destroy_srq(nullptr)); },
        rc(EOPNOTSUPP));
    add(
        "ibv_cmd_destroy_ah", [](Bed&) { return from_int(ibv_cmd_destroy_ah(nullptr)); },
        rc(EOPNOTSUPP));
    add(
        "ibv_cmd_dealloc_mw", [](Bed&) { return from_int(ibv_cmd_dealloc_mw(nullptr)); },
        rc(EOPNOTSUPP));
    add(
        "ibv_cmd_attach_mcast",
        [](Bed& b) {
            ibv_gid gid{};
            return from_int(ibv_cmd_attach_mcast(b.raw_qp(), &gid, 0));
        },
        rc(EOPNOTSUPP));
    add(
        "ibv_cmd_detach_mcast",
        [](Bed& b) {
            ibv_gid gid{};
            return from_int(ibv_cmd_detach_mcast(b.raw_qp(), &gid, 0));
        },
        rc(EOPNOTSUPP));
}

std::vector<Row> all_rows() {
    std::vector<Row> rows;
    context_rows(rows);
    pd_mr_rows(rows);
    mw_rows(rows);
    cq_rows(rows);
    wq_rows(rows);
    qp_rows(rows);
    unsupported_rows(rows);
    return rows;
}

} // namespace

TEST_CASE("bad input matrix: every verb refuses bad input and the device keeps working",
          "[device][matrix]") {
    SimFixture fx;
    const std::uint32_t live = device::from_verbs(fx.ctx)->live_objects.load();
    const std::vector<Row> rows = all_rows();
    std::size_t failed = 0;
    for (const Row& row : rows) {
        INFO("row: " << row.name);
        {
            Bed bed(fx);
            const Outcome got = row.call(bed);
            INFO("expected " << describe(row.expect) << ", got " << describe(got));
            CHECK(matches(row.expect, got));
            if (!matches(row.expect, got)) ++failed;
            bed.teardown();
        }
        check_usable(fx, live);
    }
    INFO(rows.size() << " rows");
    CHECK(failed == 0);
    CHECK(rows.size() > 500);
}
