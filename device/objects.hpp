// The HCA model. Each object embeds its public verbs.h struct as its first
// member, so the pointer a program holds converts back with from_verbs()
// (the rxe to_rcq() habit); every such type is standard-layout, and checked.
//
// Locking (device/README.md, "Locking"): the port lock (port.mutex())
// guards steering and everything the engine touches (it is taken once per
// burst, never per frame by the program); each receive queue has a post lock
// for program threads posting; each CQ a poll lock for program threads
// polling. Lock order: port, then post; a purge of a CQ takes its poll lock
// before both. There is no device-wide lock.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <sys/types.h>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "datapath/cq_ring.hpp"
#include "datapath/mr_table.hpp"
#include "datapath/port.hpp"
#include "datapath/rx_queue.hpp"
#include "datapath/recv_ring.hpp"
#include "device/caps.hpp"

namespace rdmasim::device {

struct Device;
struct Context;
class VerbFaultHook; // device/verb_faults.hpp
class TraceHook;     // device/trace.hpp
class StatsHook;     // device/stats_hook.hpp
struct Cq;
struct Pd;
struct Mr;
struct Dm; // device/dm.hpp
struct Qp;
struct QpOps;     // device/qp_roles.hpp
struct RawQp;     // device/qp_roles.hpp
struct IbQp;      // device/qp_roles.hpp
struct Flow;
struct Ah;
struct Srq;
struct TagList;   // device/tm_srq.hpp
class QpTransport; // device/qp_transport.hpp
struct WrBuilder;  // device/qp_ex.hpp

// What the runtime (sim/) plugs in; device/ never starts threads or does I/O
// of its own. All calls may come from any program thread.
class EngineHooks {
public:
    virtual ~EngineHooks() = default;
    // A program is about to poll a CQ of `dev` (the inline engine pulls frames here).
    virtual void on_poll(Device& dev) noexcept = 0;
    // A program armed a CQ of `dev` (ibv_req_notify_cq): it may sleep in
    // ibv_get_cq_event next, so it will not poll. By default, a poll.
    virtual void on_arm(Device& dev) noexcept { on_poll(dev); }
    // A program posted receive WQEs (held frames may now be delivered), or a
    // verb moved the port's next deadline earlier (a transport's timer).
    virtual void on_post(Device& dev) noexcept = 0;
    // A receiver is ready: a flow rule was attached, or an RC, UC or UD QP
    // reached RTR (a replay started by start=first-flow may begin).
    virtual void on_receiver_ready(Device& dev) noexcept = 0;
    // The engine's clock (virtual under the inline engine); a transport
    // called from a verb runs at it. Called holding the port lock.
    [[nodiscard]] virtual std::uint64_t clock_ns() const noexcept = 0;
};

// A spinlock for program-side object locks (post, poll): short critical sections only.
class SpinLock {
public:
    void lock() noexcept {
        while (flag_.test_and_set(std::memory_order_acquire))
            while (flag_.test(std::memory_order_relaxed)) {
            }
    }
    void unlock() noexcept { flag_.clear(std::memory_order_release); }

private:
    std::atomic_flag flag_;
};

// An XRC domain: one per file on the device (the file named by
// ibv_open_xrcd's fd, by its inode), shared by every open of that file; an
// open with fd -1 makes a private one. Its XRC SRQs are what an XRC TGT
// QP's requests may name. Under the port lock.
struct XrcDomain {
    dev_t file_dev = 0;
    ino_t file_ino = 0;
    bool is_private = false; // fd -1: no file, no sharing
    std::uint32_t opens = 0; // Xrcd handles on it
    std::vector<Srq*> srqs;  // its XRC SRQs
};

struct Device {
    ibv_device ibdev;                           // what ibv_get_device_list hands out
    const void* verbs_device_ops = nullptr;     // where rdma-core's verbs_device keeps its
                                                // provider ops: NULL answers "not mine"
    DeviceIdentity identity;
    Capabilities caps;
    datapath::Port port;                        // frames in and out; see datapath/port.hpp
    datapath::MrTable mrs;                      // sized from caps.max_mr by make_device
    EngineHooks* hooks = nullptr;               // set by the runtime; may stay null
    // Set by the runtime with a fault plan; a device-fatal fault swaps in
    // the dead device's (every verb but the destroys fails with EIO).
    std::atomic<VerbFaultHook*> verb_faults{nullptr};
    std::atomic<bool> fatal{false};             // IBV_EVENT_DEVICE_FATAL was raised
    TraceHook* trace = nullptr;                 // set by the runtime with --trace
    StatsHook* stats = nullptr;                 // set by the runtime with --stats
    std::atomic<std::uint32_t> next_qpn{0x100}; // WQ and QP numbers, unique per device
    std::atomic<std::uint32_t> wqs_created{0};  // Wq::index
    std::atomic<std::uint32_t> next_handle{1};
    std::atomic<std::uint32_t> live_contexts{0};
    std::atomic<std::uint32_t> ind_tables{0};  // live, at most caps.max_rwq_indirection_tables
    std::atomic<std::uint32_t> srqs{0};        // live, at most caps.max_srq
    // Device memory (device/dm.hpp): bit i set = 4 KiB page i of the
    // emulated MEMIC BAR is allocated to a DM. Claimed and released by CAS.
    std::atomic<std::uint64_t> dm_pages{0};
    // Under the port lock: what service() visits after each burst, and the
    // open contexts (port events go to each).
    std::vector<Cq*> cqs;                       // notifications, overflow events
    std::vector<Context*> contexts;
    std::vector<std::unique_ptr<XrcDomain>> xrc_domains; // open XRC domains (device/xrcd.cpp)
    // The port's state as ibv_query_port reports it: ACTIVE, or DOWN while
    // the fault plan holds it down. Written under the port lock.
    std::atomic<int> port_state{IBV_PORT_ACTIVE};
};

struct AsyncEvents {
    std::mutex lock;
    std::deque<ibv_async_event> queue;
    int read_fd = -1; // the context's async_fd: one byte per queued event
    int write_fd = -1;
};

// What a context's cmd_fd stands for, the kernel's uverbs file
// (device/import.hpp): one per ibv_open_device, shared by the contexts that
// ibv_import_device makes from a descriptor of it. Its handle table names
// the PDs, MRs and DMs those contexts may import. Lives while a context uses it.
struct ContextFile {
    dev_t file_dev = 0; // the memfd behind every cmd_fd of it: what an fd is looked up by
    ino_t file_ino = 0;
    int own_fd = -1; // the file's own descriptor of it: the inode stays while the file lives
    std::mutex lock; // the table, and the names of the objects in it
    std::unordered_map<std::uint32_t, Pd*> pds; // by handle; handles are unique per device
    std::unordered_map<std::uint32_t, Mr*> mrs;
    std::unordered_map<std::uint32_t, Dm*> dms;
    std::atomic<std::uint32_t> contexts{0};
};

// The kernel side of an importable object (a PD, an MR, a DM): how many user-space
// objects name it (the one allocated, and each import), and whether it was
// destroyed (by a dealloc, dereg or free through any of them). Its memory goes with
// the last name (device/import.hpp). Under the file's lock.
struct KernelNames {
    std::uint32_t names = 1;
    std::atomic<bool> destroyed{false};
};

struct Context {
    verbs_context vctx; // programs see &vctx.context
    Device* device = nullptr;
    ContextFile* file = nullptr;
    AsyncEvents events;
    std::atomic<std::uint32_t> live_objects{0};
    // ibv_close_device ran while objects lived: the last one's destroy frees
    // the context (device/context.hpp, object_destroyed).
    std::atomic<bool> closed{false};
    std::atomic<bool> freeing{false}; // whoever sets it first frees
};

struct Pd {
    ibv_pd ibpd;
    std::atomic<std::uint32_t> users{0}; // MRs, MWs, WQs, QPs, parent domains, a parent's CQs
    // A parent domain (ibv_alloc_parent_domain): the PD it stands for. Its
    // allocators are kept, never called (rdmasim's queues are its own memory).
    Pd* protection = nullptr;
    ibv_parent_domain_init_attr parent{};
    // An imported PD (ibv_import_pd): the PD it names, which holds the
    // users, the kernel names and the identity MRs are checked against.
    Pd* origin = nullptr;
    KernelNames kernel;
};

// The protection domain `pd` stands for: itself, or a parent domain's PD.
// What MR ownership is checked against.
inline const Pd* protection_domain(const Pd* pd) noexcept {
    if (pd != nullptr && pd->origin != nullptr) return pd->origin;
    return pd != nullptr && pd->protection != nullptr ? pd->protection : pd;
}

// One ibv_open_xrcd: a handle on a domain. ibv_close_xrcd is EBUSY while
// XRC SRQs or XRC TGT QPs created with it live.
struct Xrcd {
    ibv_xrcd ibxrcd;
    Context* ctx = nullptr;
    XrcDomain* domain = nullptr;
    std::atomic<std::uint32_t> users{0};
};

struct Mr {
    ibv_mr ibmr;
    int access = 0;
    Pd* pd = nullptr;     // whose users count it (an imported PD's origin)
    Mr* origin = nullptr; // an imported MR (ibv_import_mr): the MR it names
    KernelNames kernel;
    Dm* dm = nullptr; // an MR on device memory (ibv_reg_dm_mr): one of the DM's users
};

// A memory window (device/mw.hpp). Its state (bound or not, range, access,
// QP) lives in the device's MrTable slot under `key`.
struct Mw {
    ibv_mw ibmw;
    Pd* pd = nullptr;
    std::uint32_t key = 0; // the slot's current key (changes with each bind; port lock)
};

struct CompChannel {
    ibv_comp_channel ibch;
    std::mutex lock;
    std::deque<Cq*> fired; // CQs whose event has not been read yet
    std::atomic<std::uint32_t> cqs{0};
};

struct Cq {
    ibv_cq_ex cqx;          // a plain ibv_cq is its prefix
    Device* device = nullptr;
    Context* ctx = nullptr;
    CompChannel* channel = nullptr;
    datapath::CqRing ring;
    std::uint64_t wc_flags = 0; // requested IBV_WC_EX_WITH_* (extended CQs)
    bool extended = false;
    bool ignore_overrun = false; // IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN: no IBV_EVENT_CQ_ERR
    std::mutex poll_lock;       // held from start_poll to end_poll
    std::atomic<std::thread::id> poll_owner{}; // who holds poll_lock from start_poll to end_poll
    // The entry start_poll / next_poll exposes, read in place in the ring (the
    // producer never writes a slot before it is popped); null between polls,
    // when the read_* accessors see an empty entry.
    const datapath::Cqe* current = nullptr;
    std::atomic<bool> armed{false};
    std::atomic<std::uint32_t> armed_at{0};  // ring.written() when armed: the event is for a later one
    std::atomic<bool> solicited_only{false}; // armed by ibv_req_notify_cq(cq, 1)
    std::atomic<std::uint32_t> users{0}; // WQs and QPs
    // The parent domain of ibv_create_cq_ex's IBV_CQ_INIT_ATTR_MASK_PD: one of
    // its users until the CQ is destroyed, as mlx5 counts it (ibv_dealloc_pd
    // of the domain is EBUSY meanwhile).
    Pd* parent_domain = nullptr;
    // Events handed to the program, which ibv_destroy_cq waits to see acked in
    // cqx.comp_events_completed / async_events_completed.
    std::uint32_t comp_events_reported = 0;  // by ibv_get_cq_event, under the channel lock
    std::uint32_t async_events_reported = 0; // by ibv_get_async_event, under the event lock
};

// The receive side of a WQ or of a plain raw-packet QP, as verbs post to it.
struct RecvQueue {
    SpinLock post_lock;          // program threads posting; held to change in_error
    datapath::RxQueue rx;        // the datapath pipeline (engine side under the port lock)
    std::uint32_t max_sge = 1;   // per WQE, as created
    bool in_error = false;       // WRs posted now are flushed at once
};

struct Wq {
    ibv_wq ibwq;
    Context* ctx = nullptr;
    Cq* cq = nullptr;
    Pd* pd = nullptr;
    std::uint32_t create_flags = 0;
    std::uint32_t index = 0; // WQs created on the device before it (fault targets: wq=N)
    RecvQueue recv;
    std::atomic<std::uint32_t> table_refs{0}; // indirection tables naming it
    // Async events handed out by ibv_get_async_event (under the context's event
    // lock); ibv_destroy_wq waits until ibwq.events_completed reaches it.
    std::uint32_t events_reported = 0;
};

struct IndTable {
    ibv_rwq_ind_table ibt;
    std::uint32_t log_size = 0;
    std::vector<Wq*> entries;
    std::atomic<std::uint32_t> qp_refs{0};
};

// The receive queue of an RC, UC or UD QP, or of an SRQ: WQEs the transport
// takes (device/qp_transport.cpp, peek_recv / pop_recv). Producer: posts, under post_lock.
// Consumer: the transport, a flush or a reset, under the port lock (and
// post_lock for flush and reset: lock order port, then post).
struct WorkRecvQueue {
    SpinLock post_lock;
    datapath::RecvRing ring;
    std::uint32_t max_sge = 1;  // per WQE, as created (reported)
    std::uint32_t max_post = 1; // WQEs that may be outstanding (<= ring capacity)
};

struct Ah {
    ibv_ah ibah;
    Pd* pd = nullptr;
    ibv_ah_attr attr{}; // as created: the transport's destination
};

struct Srq {
    ibv_srq ibsrq;
    Context* ctx = nullptr;
    Pd* pd = nullptr;
    std::uint32_t srq_num = 0;
    // XRC SRQ (IBV_SRQT_XRC): its domain, and the CQ its receives complete on.
    Xrcd* xrcd = nullptr;
    Cq* cq = nullptr;
    // Tag-matching SRQ (IBV_SRQT_TM; cq is where its list operations
    // complete): the tag list, owned; under the port lock.
    TagList* tm = nullptr;
    WorkRecvQueue rq;
    // Armed limit (0: not armed): when a WQE taken leaves fewer posted,
    // IBV_EVENT_SRQ_LIMIT_REACHED and the limit disarms. Under the port lock.
    std::uint32_t limit = 0;
    std::atomic<std::uint32_t> qps{0}; // QPs attached: ibv_destroy_srq is EBUSY
    // Async events handed out by ibv_get_async_event (under the context's event
    // lock); ibv_destroy_srq waits until ibsrq.events_completed reaches it.
    std::uint32_t events_reported = 0;
};

// What every QP is, whatever role it plays (device/qp_roles.hpp: raw
// packet, RSS, RC/UC/UD/XRC): the ibv_qp a program sees, first; the verbs of
// its role, chosen at create; what every role keeps. Only the roles are
// ever created.
struct Qp {
    // Programs see &ibqp; an extended QP (created with send_ops_flags) is
    // the same object seen as the ibv_qp_ex that begins with it.
    union {
        ibv_qp ibqp;
        ibv_qp_ex qpx;
    };
    const QpOps* ops = nullptr; // its role's verbs (device/qp_roles.hpp)
    Context* ctx = nullptr;
    Pd* pd = nullptr;   // none for an XRC TGT QP
    ibv_qp_attr attr{}; // what ibv_query_qp reports; for RC/UC/UD the transport's attributes
    std::atomic<std::uint32_t> flows{0};
    // Async events handed out by ibv_get_async_event (under the context's event
    // lock); ibv_destroy_qp waits until ibqp.events_completed reaches it.
    std::uint32_t events_reported = 0;
};

struct Flow {
    ibv_flow ibflow;
    Qp* qp = nullptr;
    datapath::SteeringEntry entry; // rule and target, registered with the port
};

static_assert(std::is_standard_layout_v<Device>);
static_assert(std::is_standard_layout_v<Context>);
static_assert(std::is_standard_layout_v<Pd>);
static_assert(std::is_standard_layout_v<Mr>);
static_assert(std::is_standard_layout_v<Mw>);
static_assert(std::is_standard_layout_v<CompChannel>);
static_assert(std::is_standard_layout_v<Cq>);
static_assert(std::is_standard_layout_v<Wq>);
static_assert(std::is_standard_layout_v<IndTable>);
static_assert(std::is_standard_layout_v<Qp>);
static_assert(std::is_standard_layout_v<Flow>);
static_assert(std::is_standard_layout_v<Ah>);
static_assert(std::is_standard_layout_v<Srq>);
static_assert(std::is_standard_layout_v<Xrcd>);

// Back from the verbs pointer a program holds to the object around it.
inline Device* from_verbs(ibv_device* d) noexcept { return reinterpret_cast<Device*>(d); }
inline Context* from_verbs(ibv_context* c) noexcept {
    auto* v = reinterpret_cast<verbs_context*>(reinterpret_cast<char*>(c) -
                                               offsetof(verbs_context, context));
    return reinterpret_cast<Context*>(v);
}
inline Pd* from_verbs(ibv_pd* p) noexcept { return reinterpret_cast<Pd*>(p); }
inline Mr* from_verbs(ibv_mr* m) noexcept { return reinterpret_cast<Mr*>(m); }
inline Mw* from_verbs(ibv_mw* m) noexcept {
    return reinterpret_cast<Mw*>(m);
}
inline CompChannel* from_verbs(ibv_comp_channel* c) noexcept { return reinterpret_cast<CompChannel*>(c); }
inline Cq* from_verbs(ibv_cq* c) noexcept { return reinterpret_cast<Cq*>(c); }
inline Cq* from_verbs(ibv_cq_ex* c) noexcept { return reinterpret_cast<Cq*>(c); }
inline Wq* from_verbs(ibv_wq* w) noexcept { return reinterpret_cast<Wq*>(w); }
inline IndTable* from_verbs(ibv_rwq_ind_table* t) noexcept { return reinterpret_cast<IndTable*>(t); }
inline Qp* from_verbs(ibv_qp* q) noexcept { return reinterpret_cast<Qp*>(q); }
inline Flow* from_verbs(ibv_flow* f) noexcept { return reinterpret_cast<Flow*>(f); }
inline Ah* from_verbs(ibv_ah* a) noexcept { return reinterpret_cast<Ah*>(a); }
inline Srq* from_verbs(ibv_srq* s) noexcept { return reinterpret_cast<Srq*>(s); }
inline Xrcd* from_verbs(ibv_xrcd* x) noexcept { return reinterpret_cast<Xrcd*>(x); }

inline ibv_cq* to_verbs_cq(Cq* c) noexcept { return reinterpret_cast<ibv_cq*>(&c->cqx); }

} // namespace rdmasim::device
