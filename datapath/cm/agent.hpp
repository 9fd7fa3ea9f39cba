// A port's communication manager (datapath/README.md, "Connection
// manager"): what a kernel's ib_cm does for RoCE v2, in the port. It owns
// the port's GSI endpoint (QP1: CM MADs in UD datagrams, Q_Key 0x80010000),
// the connections by local communication ID with their MAD exchanges,
// resends and timeouts, and the listeners by service ID. It answers a REQ
// for a service nobody listens to with REJ (invalid service ID), as every
// RoCE host does. It never touches a QP: the layer above (rdma_cm,
// device/rdmacm/) moves QPs with what the events carry.
//
// Threading: every call under the port lock. Handlers are called under it
// too, from the engine's thread or a verb's: they queue, they never call
// back into the port.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "datapath/counters.hpp"
#include "datapath/family.hpp"
#include "datapath/neighbours.hpp"
#include "net/cm_mad.hpp"
#include "net/cma_header.hpp"
#include "net/roce_frame.hpp"

namespace rdmasim::datapath {
class RocePort;
class L2Host;
} // namespace rdmasim::datapath

namespace rdmasim::datapath::cm {

// What one side of a connection offers (REQ) or answers (REP): the QP and
// the transport parameters the other side's QP is moved with.
struct QpParams {
    std::uint32_t qpn = 0;
    std::uint32_t starting_psn = 0;
    std::uint8_t responder_resources = 0; // RDMA READs / atomics it accepts at once
    std::uint8_t initiator_depth = 0;     // ... it issues at once
    std::uint8_t retry_count = 7;         // REQ only
    std::uint8_t rnr_retry_count = 7;
    bool srq = false;
    bool uc = false;                    // REQ: transport service type UC (else RC)
    std::uint8_t local_ack_timeout = 0; // REQ: the path's, 4.096 us * 2^t
    net::PathMtu mtu = net::PathMtu::mtu1024;
};

// The path of a connection, as seen from this port.
struct Path {
    net::Gid local_gid{};
    net::Gid remote_gid{};
    std::uint8_t traffic_class = 0;
    std::uint8_t hop_limit = 64;
    std::uint32_t flow_label = 0;
};

enum class EventKind : std::uint8_t {
    req, // a REQ for a listened service: a new connection (comm_id), on the listener's handler
    rep, // our REQ was answered (peer: the peer's QP)
    established,   // passive: the RTU came (or the first packet: notify)
    rej,           // the peer rejected (reason, private data)
    mra,           // the peer needs more time; our timer is extended
    dreq,          // the peer disconnects (DREP already sent)
    disconnected,  // our DREQ was answered, or its resends ran out
    timewait_exit, // the connection's time-wait ended: the comm ID is free
    unreachable,   // REQ or REP resends ran out (a REJ "timeout" went to the peer)
    sidr_req,      // a SIDR_REQ for a listened service (on the listener's handler)
    sidr_rep,      // the answer to our SIDR_REQ (status, peer QPN and Q_Key)
    sidr_timeout,  // SIDR_REQ resends ran out
    addr_change,   // the port went down: the address may have moved (told to every watcher)
    device_removal, // the device died (told to every watcher)
};
[[nodiscard]] const char* event_name(EventKind kind) noexcept;

class Agent;

struct Event {
    EventKind kind{};
    std::uint32_t comm_id = 0; // the connection's local ID (SIDR: the request ID)
    Agent* agent = nullptr;    // the port's CM that tells it
    std::uint64_t service_id = 0;
    QpParams peer;                              // req, rep: the peer's offer
    Path path;                                  // req, sidr_req: the peer's addresses
    std::uint16_t reason = 0;                   // rej: IBA reject reason; sidr_rep: status
    std::uint32_t qkey = 0;                     // sidr_rep
    std::span<const std::uint8_t> private_data; // valid during the call
};

// Told what happens to a connection or a listen. Called under the port lock.
class Handler {
public:
    virtual ~Handler() = default;
    // For req and sidr_req, the listener's handler adopts the new
    // connection (Agent::adopt) within the call, or it is rejected.
    virtual void cm_event(const Event& event) noexcept = 0;
};

// Told what became of an address resolution (resolve).
class AddressHandler {
public:
    virtual ~AddressHandler() = default;
    virtual void address_resolved(std::uint64_t token, const net::MacAddress& mac) noexcept = 0;
    virtual void address_failed(std::uint64_t token) noexcept = 0;
};

// Relaxed counters: read from any thread (--stats) while the engine counts.
struct AgentCounters {
    Counter mads_sent;
    Counter mads_received;
    Counter mads_resent;
    Counter mads_refused;    // not a CM MAD we read (net::CmMadError), or the wrong Q_Key
    Counter mads_unmatched;  // for no connection of ours, or out of state
    Counter rej_no_listener; // REQs and SIDR_REQs answered "invalid service ID"
};

class Agent final : public NeighbourListener {
public:
    Agent(RocePort& roce, L2Host& host, const std::uint64_t& clock) noexcept
        : roce_(roce), host_(host), clock_(clock) {}
    Agent(const Agent&) = delete;
    Agent& operator=(const Agent&) = delete;

    // The CA GUID REQs and REPs carry (the device's node GUID, host order).
    void set_ca_guid(std::uint64_t guid) noexcept { ca_guid_ = guid; }
    // CM response timeout (4.096 us * 2^t) and resends of the REQs this
    // port sends: rdma_cm's defaults (CMA_CM_RESPONSE_TIMEOUT, CMA_MAX_CM_RETRIES).
    void set_timeouts(std::uint8_t response_timeout, std::uint8_t max_retries) noexcept {
        response_timeout_ = response_timeout;
        max_retries_ = max_retries;
    }

    // --- listening ---
    bool listen(std::uint64_t service_id, Handler& handler);
    void stop_listening(std::uint64_t service_id) noexcept;
    // The port joined a family (RocePort::set_family): new communication
    // IDs carry its member number, and the family's listener table learns
    // this port's listeners; a forked child drops its copies of the
    // parent's (keep_listeners false).
    void join_family(bool keep_listeners) noexcept;
    // Within a req or sidr_req event: `handler` owns the new connection.
    void adopt(std::uint32_t comm_id, Handler& handler) noexcept;

    // --- one connection; each returns 0 or an errno ---
    // Active: a REQ to `path.remote_gid`; the new connection's ID in `comm_id`.
    int connect(Handler& handler, std::uint64_t service_id, const Path& path, const QpParams& qp,
                std::span<const std::uint8_t> private_data, std::uint32_t& comm_id);
    // Passive, after req: REP (resent until the RTU comes).
    int accept(std::uint32_t comm_id, const QpParams& qp,
               std::span<const std::uint8_t> private_data) noexcept;
    // Active, after rep: RTU; the connection is established.
    int establish(std::uint32_t comm_id, std::span<const std::uint8_t> private_data) noexcept;
    // Passive after req, or active after rep: REJ with `reason`.
    int reject(std::uint32_t comm_id, std::uint16_t reason,
               std::span<const std::uint8_t> private_data) noexcept;
    // An established connection: DREQ (resent until the DREP). After dreq: nothing more to send.
    int disconnect(std::uint32_t comm_id, std::span<const std::uint8_t> private_data) noexcept;
    // Passive, after accept: the first packet on the QP stands for the RTU
    // (rdma_notify with IBV_EVENT_COMM_EST): established is told.
    int notify_established(std::uint32_t comm_id) noexcept;
    // The handler goes: what is in flight ends as IBA says (a REQ
    // received is rejected, an established connection disconnected) and
    // the connection is forgotten; no event follows.
    void release(std::uint32_t comm_id) noexcept;

    // --- the device's own events, for every id on it ---
    // `handler` hears addr_change and device_removal until unwatched.
    void watch(Handler& handler);
    void unwatch(Handler& handler) noexcept;
    // The port went down (addr_change) or the device died (device_removal).
    void device_event(EventKind kind) noexcept;

    // --- SIDR (UD services) ---
    int sidr_request(Handler& handler, std::uint64_t service_id, const Path& path,
                     std::span<const std::uint8_t> private_data, std::uint32_t& request_id);
    int sidr_reply(std::uint32_t request_id, std::uint16_t status, std::uint32_t qpn,
                   std::uint32_t qkey, std::span<const std::uint8_t> private_data) noexcept;

    // --- addresses: the port's ARP, with a deadline ---
    // Resolves `ip`; the handler hears of it once, from the engine, never
    // within this call (a kernel's rdma_cm answers from a work queue too):
    // at the next service when the neighbour is known (or known to fail),
    // else on the ARP answer, the ARP failure or `timeout_ns` passing.
    void resolve(const net::Ipv4Address& ip, std::uint64_t timeout_ns, AddressHandler& handler,
                 std::uint64_t token);
    // The handler hears address_resolved(token, mac) at the next service.
    void defer(AddressHandler& handler, std::uint64_t token, const net::MacAddress& mac);
    void cancel_resolve(AddressHandler& handler) noexcept;

    // --- the port's side ---
    // A UD datagram the port received for QP 1.
    void receive(const net::RocePacket& packet) noexcept;
    void service(std::uint64_t now_ns) noexcept;
    [[nodiscard]] std::uint64_t next_deadline_ns() const noexcept { return next_deadline_; }
    [[nodiscard]] const AgentCounters& counters() const noexcept { return counters_; }

    // NeighbourListener: the port's ARP results.
    void resolved(const net::Ipv4Address& ip, const net::MacAddress& mac) noexcept override;
    void unreachable(const net::Ipv4Address& ip) noexcept override;

private:
    enum class State : std::uint8_t {
        req_sent,
        req_rcvd,
        rep_sent,
        rep_rcvd,
        established,
        dreq_sent,
        dreq_rcvd,
        timewait,
        sidr_sent,
        sidr_rcvd
    };
    struct Conn {
        State state{};
        Handler* handler = nullptr;
        std::uint32_t remote_id = 0;
        std::uint32_t remote_qpn = 0;
        std::uint64_t service_id = 0;
        std::uint64_t tid = 0;
        net::Gid remote_gid{};
        net::Gid local_gid{};
        std::uint8_t traffic_class = 0;
        std::uint8_t hop_limit = 64;
        std::array<std::uint8_t, net::kMadSize> last{}; // the MAD resends repeat
        bool resend = false;                            // last is armed
        std::uint32_t retries_left = 0;
        std::uint64_t timeout_ns = 0; // one try
        std::uint64_t deadline = UINT64_MAX;
        std::uint8_t peer_response_timeout = 20; // the REQ's local CM response timeout
        std::uint8_t peer_max_retries = 15;      // the REQ's max CM retries
    };
    struct Pending { // an address being resolved
        net::Ipv4Address ip{};
        std::uint64_t deadline = 0; // told then: resolved if `known`, else failed
        AddressHandler* handler = nullptr;
        std::uint64_t token = 0;
        bool known = false; // resolved to `mac`, waiting to be told
        net::MacAddress mac{};
    };

    Conn* find(std::uint32_t comm_id) noexcept;
    std::uint32_t new_comm_id() noexcept;
    void send_mad(Conn& c, bool arm_resend) noexcept;
    void send_to(const net::Gid& remote, const net::Gid& local, std::uint8_t tclass,
                 std::span<const std::uint8_t, net::kMadSize> mad) noexcept;
    void arm(Conn& c, std::uint64_t timeout_ns, std::uint32_t retries) noexcept;
    void enter_timewait(std::uint32_t comm_id, Conn& c) noexcept;
    void tell(Conn& c, Event& e) noexcept;
    void expire(std::uint32_t comm_id, Conn& c) noexcept;
    void reply_invalid_service(const net::RocePacket& p, const net::MadHeader& h,
                               std::uint32_t remote_id) noexcept;
    void reply(const net::RocePacket& p,
               std::span<const std::uint8_t, net::kMadSize> mad) noexcept {
        send_to(p.sgid, p.dgid, p.traffic_class, mad);
    }
    Conn* find_remote(std::uint32_t remote_id, const net::Gid& remote_gid) noexcept;
    template <class F> void finish_resolves(const net::Ipv4Address& ip, F tell) noexcept;
    // Receive, by message.
    void on_req(const net::RocePacket& p, const net::MadHeader& h, const net::CmReq& m) noexcept;
    void on_rep(const net::MadHeader& h, const net::CmRep& m) noexcept;
    void on_rtu(const net::CmRtu& m) noexcept;
    void on_rej(const net::CmRej& m) noexcept;
    void on_mra(const net::CmMra& m) noexcept;
    void on_dreq(const net::RocePacket& p, const net::MadHeader& h, const net::CmDreq& m) noexcept;
    void send_drep(const net::RocePacket& p, const net::MadHeader& h,
                   const net::CmDreq& m) noexcept;
    void on_drep(const net::CmDrep& m) noexcept;
    void on_sidr_req(const net::RocePacket& p, const net::MadHeader& h,
                     const net::CmSidrReq& m) noexcept;
    void on_sidr_rep(const net::CmSidrRep& m) noexcept;

    RocePort& roce_;
    L2Host& host_;
    const std::uint64_t& clock_;
    std::uint64_t ca_guid_ = 0;
    std::uint8_t response_timeout_ = 20; // CMA_CM_RESPONSE_TIMEOUT
    std::uint8_t max_retries_ = 15;      // CMA_MAX_CM_RETRIES
    std::uint32_t next_id_ = 0x1000;
    std::uint64_t next_tid_ = 1;
    std::uint32_t gsi_psn_ = 0;
    std::unordered_map<std::uint64_t, Handler*> listeners_;
    std::unordered_map<std::uint32_t, Conn> conns_;
    std::vector<Pending> pending_;
    std::vector<Handler*> watchers_;
    std::uint64_t next_deadline_ = UINT64_MAX;
    AgentCounters counters_;
};

} // namespace rdmasim::datapath::cm
