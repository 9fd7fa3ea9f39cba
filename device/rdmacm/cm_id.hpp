// rdma_cm inside the drop-in (device/README.md, "Connection manager"): event
// channels, rdma_cm_ids and what librdmacm and the kernel's rdma_cm do
// between a program and the port's CM (datapath/cm/agent.hpp): addresses
// to devices, port spaces to service IDs, CM events to rdma_cm events, and
// the QP moved through its states as librdmacm moves it. The exported
// librdmacm.so.1 forwards every rdma_* call here (device/rdmacm/ops.hpp).
//
// Locking: an id's connection fields (state, comm_id, peer, path) under its
// device's port lock, as the CM's handlers run under it; a channel's queue
// under the channel's own lock (taken inside the port lock, never around it).
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "datapath/cm/agent.hpp"
#include "device/objects.hpp"
#include "device/qp_transport.hpp"
#include "device/verb_faults.hpp"

namespace rdmasim::rdmacm {

// RDMA_UDP_QKEY: the Q_Key of every UD id's QP, its SIDR replies and its
// multicast groups, as the kernel's rdma_cm sets it.
inline constexpr std::uint32_t kUdpQkey = 0x01234567;

struct CmId;

// One rdma_join_multicast of an id (device/rdmacm/multicast.cpp), as
// librdmacm keeps it: the group's address as given, the program's context,
// and what the join event told (the group's GID) once it was read.
struct McJoin {
    sockaddr_storage addr{}; // the first addr_len bytes: what rdma_leave_multicast compares
    std::size_t addr_len = 0;
    void* context = nullptr;
    bool send_only = false; // RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER: the QP is never attached
    bool left = false;      // rdma_leave_multicast ran before its event was read
    bool attached = false;  // the id's QP was attached when its event was read
    ibv_gid mgid{};
};

// One queued event; the program holds it from rdma_get_cm_event to rdma_ack_cm_event.
struct EventRec {
    rdma_cm_event ev{};
    CmId* owner = nullptr; // the id the event is for (ev.id, or a new child's)
    // Processed by rdma_get_cm_event first (librdmacm's own step): a REP
    // for an id with a QP moves the QP and sends the RTU.
    bool conn_response = false;
    // A MULTICAST_JOIN: rdma_get_cm_event attaches the id's QP first (librdmacm's step).
    std::shared_ptr<McJoin> join;
    std::array<std::uint8_t, 256> data{}; // the private data ev.param points into
};

struct Channel {
    rdma_event_channel ch{}; // what the program sees: ch.fd an eventfd counting the queued events
    std::mutex lock;
    std::deque<EventRec*> queue;
};
inline Channel* from_cm(rdma_event_channel* c) noexcept {
    return reinterpret_cast<Channel*>(c);
}

// Queues `rec` on `channel` (the owner's) and wakes a reader. Never throws.
void post_event(Channel& channel, EventRec* rec) noexcept;
// A new event for `id` of `type` and `status`; nullptr when out of memory.
[[nodiscard]] EventRec* new_event(CmId& id, rdma_cm_event_type type, int status) noexcept;

enum class IdState : std::uint8_t {
    idle,
    addr_query,
    addr_resolved,
    route_query,
    route_resolved,
    listen,
    connect,      // REQ sent
    req_received, // passive: the program decides (accept / reject)
    accepting,    // REP sent
    connected,
    disconnected,
    error,
};

// The program's rdma_cm_id and what rdmasim keeps beside it. `box.id`
// first: a program's rdma_cm_id* leads back to it (from_cm).
struct IdBox {
    rdma_cm_id id;
    CmId* self;
};

struct CmId final : datapath::cm::Handler, datapath::cm::AddressHandler {
    IdBox box{};
    Channel* channel = nullptr;
    bool own_channel = false;      // created without one: synchronous calls
    device::Device* dev = nullptr; // once bound to an address or resolved
    IdState state = IdState::idle;
    std::uint32_t comm_id = 0;    // the CM's connection (0: none)
    std::uint64_t service_id = 0; // listening
    bool listening_all = false;   // bound to the wildcard address: every device
    int backlog = 0;
    // A listener's children not yet accepted or rejected; shared with each
    // child, which may outlive its listener (a child never points at it).
    std::shared_ptr<std::atomic<int>> pending_requests = std::make_shared<std::atomic<int>>(0);
    std::shared_ptr<std::atomic<int>> counted_in; // a child still pending: its listener's count
    datapath::cm::QpParams peer;          // the REQ's or the REP's offer
    datapath::cm::Path path;
    net::MacAddress dmac{};
    std::uint32_t own_psn = 0; // the starting PSN we offer
    std::uint8_t responder_resources = 0;
    std::uint8_t initiator_depth = 0;
    std::uint8_t rnr_retry_count = 7; // our QP's RNR retries
    std::uint8_t retry_count = 7;     // our QP's transport retries
    std::uint8_t tos = 0;
    // rdma_set_local_ece's; not carried on the wire (device/README.md, "Connection manager").
    ibv_ece local_ece{};
    std::uint8_t ack_timeout = 17; // RDMA_OPTION_ID_ACK_TIMEOUT; rdma_cm's RoCE default
    bool reuse_addr = false;
    bool afonly = false;
    ibv_sa_path_rec path_rec{};
    std::uint32_t events_out = 0; // handed to the program and not acked (under `gate`)
    std::mutex gate;
    std::condition_variable acked;
    ibv_qp_init_attr ep_qp_attr{}; // rdma_create_ep: the QP each rdma_get_request makes
    bool ep_has_qp = false;
    std::mutex mc_lock;                         // guards `joins` and each join's fields
    std::vector<std::shared_ptr<McJoin>> joins; // newest last

    rdma_cm_id& id() noexcept { return box.id; }
    void cm_event(const datapath::cm::Event& event) noexcept override;
    void address_resolved(std::uint64_t token, const net::MacAddress& mac) noexcept override;
    void address_failed(std::uint64_t token) noexcept override;
};
inline CmId* from_cm(rdma_cm_id* id) noexcept {
    return reinterpret_cast<IdBox*>(id)->self;
}

// The verbs context rdma_cm opens for `dev` (once, kept for the process), or nullptr.
[[nodiscard]] ibv_context* context_for(device::Device& dev) noexcept;
// Its protection domain: what an id's `pd` is once it has a device.
[[nodiscard]] ibv_pd* default_pd(device::Device& dev) noexcept;
// The id now uses `dev`: verbs, pd, port_num, and it watches the device's
// events (addr_change, device_removal). ENODEV when it cannot be opened.
// `port_locked`: the caller holds dev's port lock (a CM handler).
[[nodiscard]] int attach_device(CmId& id, device::Device& dev, bool port_locked = false) noexcept;
// The device whose port has address `ip` (network order), or nullptr.
[[nodiscard]] device::Device* device_with_ip(const net::Ipv4Address& ip) noexcept;
// The device a packet to `dst` leaves from: one with that address
// (loopback), else the first with an IPv4 address; nullptr when none.
[[nodiscard]] device::Device* route_device(const net::Ipv4Address& dst) noexcept;
// Every device (the provider runs first).
[[nodiscard]] std::vector<device::Device*> all_devices() noexcept;
// Takes `port` (host order; 0: an ephemeral one, written back) in `ps`.
// EADDRINUSE when taken and not reusable.
[[nodiscard]] int reserve_port(rdma_port_space ps, std::uint16_t& port, bool reuse) noexcept;
void release_port(rdma_port_space ps, std::uint16_t port) noexcept;

// The QP moves librdmacm makes (device/rdmacm/qp.cpp).
[[nodiscard]] int init_qp_attr(CmId& id, ibv_qp_attr& attr, int& mask) noexcept;
[[nodiscard]] int move_qp_rtr_rts(CmId& id, int responder_resources, int initiator_depth) noexcept;
void move_qp_err(CmId& id) noexcept;

// The connection ends for the program: listens stopped, the CM's
// connection released (datapath/cm/agent.hpp, release), resolves cancelled.
void forget_connection(CmId& id) noexcept;
// The active side's RTU (rdma_establish, or a REP processed): 0 or an errno.
[[nodiscard]] int send_rtu(CmId& id) noexcept;
// UD ids: SIDR instead of a connection (device/rdmacm/sidr.cpp).
[[nodiscard]] int connect_ud(CmId& id, const rdma_conn_param* param) noexcept;
[[nodiscard]] int accept_ud(CmId& id, const rdma_conn_param* param) noexcept;
[[nodiscard]] int reject_ud(CmId& id, const void* private_data, std::uint8_t len) noexcept;

// The CM's events for an id other than REQ and REP (device/rdmacm/events.cpp).
void on_other_event(CmId& id, const datapath::cm::Event& e) noexcept;
void on_sidr_reply(CmId& id, const datapath::cm::Event& e) noexcept;

// The CM has work for `dev`'s engine (MADs to resend, deadlines, ARP): a
// receiver is ready (an engine started by the first flow starts now, as
// for a QP reaching RTR), and its next wake-up may be sooner.
inline void kick_engine(device::Device& dev) noexcept {
    if (dev.hooks == nullptr) return;
    dev.hooks->on_receiver_ready(dev);
    dev.hooks->on_post(dev);
}

// A pending child is decided (accepted, rejected, destroyed): its listener's backlog frees a place.
inline void leave_backlog(CmId& id) noexcept {
    if (auto count = std::exchange(id.counted_in, nullptr)) --*count;
}

// One call into `dev`'s CM, as every rdma_cm verb makes it: under the port
// lock at the engine's clock, then the MADs it looped back let in, then the
// engine woken for the resends and deadlines. Returns what `f` returns.
template <class F> int with_cm(device::Device& dev, F f) {
    int err;
    {
        std::lock_guard lock(dev.port.mutex());
        (void)device::transport_now(dev);
        err = f(dev.port.cm());
        dev.port.finish_call();
    }
    kick_engine(dev);
    return err;
}

// Waits for the next event of a synchronous id and turns it into a result
// (librdmacm's ucma_complete): 0, or -1 with errno.
[[nodiscard]] int complete(CmId& id) noexcept;
// -1 with errno `err` (librdmacm's convention).
inline int fail(int err) noexcept {
    errno = err;
    return -1;
}
// The errno the fault plan's verb-fail makes this call of `verb` on `dev` fail with, or 0.
inline int injected(const device::Device& dev, device::Verb verb) noexcept {
    return device::injected_failure(dev, verb);
}

} // namespace rdmasim::rdmacm
