// What the RoCE v2 transport of one QP (RC, UC or UD) works on: its type,
// attributes and limits, the send work requests it takes, the events it
// raises, and the TransportHost through which the device lends it receive
// WQEs and hears its events. It knows no verbs object. (datapath/README.md,
// "RoCE transport")
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "datapath/cq_ring.hpp"
#include "datapath/recv_ring.hpp"
#include "net/roce_frame.hpp"

namespace rdmasim::datapath {
enum class QpTransport : std::uint8_t { rc, uc, ud };

// The largest frame a QP builds: its headers (Ethernet, tag, IPv6, UDP, BTH,
// extension headers, ICRC) rounded up to 128 bytes, and a 4096-byte payload
// with its pad.
inline constexpr std::size_t kMaxRoceFrame = 128 + 4096 + 4;

// The longest message either side takes: mlx5's max_msg_sz (the port's
// ibv_port_attr.max_msg_sz). Its PSNs stay within half the PSN space even at
// MTU 256. A longer RETH DMA length is an invalid request.
inline constexpr std::uint64_t kMaxMessage = 1ull << 30;

// The QP state as far as the transport cares (the device's modify_qp sets it).
enum class TransportState : std::uint8_t { reset, init, rtr, rts, sqd, error };

// What modify_qp gives (RTR and RTS attributes; the rest at creation).
struct TransportAttrs {
    QpTransport type = QpTransport::rc;
    std::uint32_t qpn = 0;
    std::uint32_t dest_qpn = 0; // RC / UC
    std::uint32_t sq_psn = 0;   // first PSN the requester sends (RTS)
    std::uint32_t rq_psn = 0;   // first PSN the responder expects (RTR)
    net::PathMtu mtu = net::PathMtu::mtu1024;
    std::uint8_t timeout = 14;           // local ACK timeout 4.096 us * 2^timeout; 0 = infinite
    std::uint8_t retry_cnt = 7;          // retries after a timeout or a NAK sequence error
    std::uint8_t rnr_retry = 7;          // retries after an RNR NAK; 7 = for ever
    std::uint8_t min_rnr_timer = 12;     // the code the responder's RNR NAKs carry
    std::uint8_t max_rd_atomic = 1;      // READs / atomics in flight as requester
    std::uint8_t max_dest_rd_atomic = 1; // READs / atomics kept for duplicates (at most 16)
    std::uint32_t qkey = 0;              // UD
    std::uint32_t access = 0;            // IBV_ACCESS_REMOTE_WRITE / _READ / _ATOMIC the QP allows
    const void* pd = nullptr;            // MRs must belong to it (XRC TGT: the SRQ's, per request)
    bool srq = false;                    // receive WQEs come from an SRQ
    // XRC (type rc): an INI QP's requests and a TGT QP's responses use the
    // XRC opcodes; an INI request names its receive's SRQ in an XRCETH, which
    // the TGT's host resolves (TransportHost::select_xrc_srq).
    bool xrc = false;
    // UD: datagrams it sends to a group it is attached to do not come back
    // to it (IBV_QP_CREATE_BLOCK_SELF_MCAST_LB; RocePort's multicast).
    bool block_self_mcast = false;
    std::uint16_t pkey = net::kDefaultPkey;
    net::RocePath path; // RC / UC: the frame addressing both ways
};

// Sizes fixed at creation (storage is allocated once, in the constructor).
struct TransportLimits {
    std::uint32_t max_send_wr = 64; // rounded up to a power of two
    std::uint32_t max_send_sge = 4;
    std::uint32_t max_inline = 256;
    std::uint32_t max_recv_sge = 4; // at least the RQ's or SRQ's max_sge (a WQE is copied whole)
    std::uint32_t window = 512;     // request PSNs in flight before the requester waits for ACKs
    // After a loss (a timeout, a sequence NAK, a lost READ response) the
    // requester resends at most this many PSNs, and each PSN acknowledged
    // lets one more go, up to `window` (slow restart, as a ConnectX's
    // roce_slow_restart): a switch that dropped a burst is not flooded again.
    std::uint32_t restart_window = 32;
    std::uint32_t ack_every = 32;   // the responder ACKs at least every this many packets
    // Send slots beyond max_send_wr that only the responder's rendezvous
    // (tag matching: an RDMA READ and its FIN each) may take; 0 without a TM SRQ.
    std::uint32_t tm_reserve = 0;
};

// `local`: a WR that sends nothing (a memory window bind or a local
// invalidate, which the device carried out when it was posted): it completes
// in posting order with its own opcode and status; an error status fails it
// and moves the QP to ERROR once everything before it has completed.
enum class SendOp : std::uint8_t {
    send,
    send_imm,
    send_inv,
    write,
    write_imm,
    read,
    cmp_swp,
    fetch_add,
    atomic_write, // RC: 8 bytes (compare_add's) placed at once, answered like a READ
    local,
};

// What takes a READ / atomic credit and is answered by a response (an
// ATOMIC WRITE by an empty READ RESPONSE ONLY).
constexpr bool is_read_or_atomic(SendOp op) noexcept {
    return op == SendOp::read || op == SendOp::cmp_swp || op == SendOp::fetch_add ||
           op == SendOp::atomic_write;
}

// One send work request, already decoded from ibv_send_wr / ibv_wr_*.
struct SendWr {
    std::uint64_t wr_id = 0;
    SendOp op = SendOp::send;
    bool signaled = true;
    bool solicited = false;
    bool fence = false;       // wait for earlier READs / atomics before starting
    bool inline_data = false; // SGE addresses are process addresses, copied at post
    std::uint32_t imm = 0;    // ImmDt as a host-order number (be32toh of ibv_send_wr.imm_data)
    std::uint64_t remote_addr = 0;
    std::uint32_t rkey = 0; // send_inv: the R_Key the IETH carries
    // CMP_SWP: compare; FETCH_ADD: the addend; ATOMIC_WRITE: the 8 bytes to
    // write, as the program's memory holds them.
    std::uint64_t compare_add = 0;
    std::uint64_t swap = 0;
    // UD only: the address handle's path, the destination QP and Q_Key
    // (a Q_Key with the high bit set means "use the QP's").
    net::RocePath ud_path;
    std::uint32_t remote_qpn = 0;
    std::uint32_t remote_qkey = 0;
    std::uint32_t xrc_srqn = 0; // XRC INI: the remote XRC SRQ the request's receive lands in
    // local only: the completion's enum ibv_wc_opcode and enum ibv_wc_status.
    std::uint8_t local_opcode = 0;
    std::uint8_t local_status = 0;
    // Tag matching (datapath/README.md, "Tag matching"): a WR the responder
    // posted for a matched rendezvous, never completed on the send CQ. rndv_read
    // reads the sender's buffer into the tagged buffer (wr_id: the tagged
    // buffer's recv_wr_id, compare_add: the tag, imm: app_ctx); fin is the
    // 16-byte TMH (opcode FIN) sent once the data is in.
    enum class Tm : std::uint8_t { none, rndv_read, fin } tm = Tm::none;
};

// A posted receive WQE as the host lends it (its RQ's or SRQ's front).
struct RecvView {
    const Wqe* wqe = nullptr;
    const Sge* sges = nullptr;
};

enum class TransportEvent : std::uint8_t {
    comm_est,         // IBV_EVENT_COMM_EST: first packet received in RTR
    last_wqe_reached, // IBV_EVENT_QP_LAST_WQE_REACHED: an SRQ QP entered error
    qp_fatal,         // IBV_EVENT_QP_FATAL: the responder could not place data (remote op error)
    qp_req_err,       // IBV_EVENT_QP_REQ_ERR: the responder got an invalid request
    qp_access_err,    // IBV_EVENT_QP_ACCESS_ERR: the responder refused a remote access
    entered_error,    // the QP moved itself to ERR (its state must follow)
    sq_drained,       // IBV_EVENT_SQ_DRAINED: in SQD, every WQE started before it completed
};

// What the device supplies to a QP's transport: receive WQEs (its RQ, its
// SRQ, or for an XRC TGT QP the SRQ a request names), tag matching, window
// invalidation, and where its events go. Frames, timers and completions
// never come this way: the transport hands frames to its RocePort and
// writes CQEs into the CQ rings it was given (QpRings). None of these may
// call back into the transport.
class TransportHost {
public:
    virtual ~TransportHost() = default;
    // The front receive WQE of the QP's RQ or SRQ; false when none is posted.
    virtual bool peek_recv(RecvView& out) noexcept = 0;
    virtual void pop_recv() noexcept = 0; // consumes the front (SRQ: the limit event is the host's)
    virtual void event(TransportEvent kind) noexcept = 0;
    // An XRC request names XRC SRQ `srqn`: when it is an SRQ of the QP's XRC
    // domain, the PD its memory is checked against (and peek_recv, pop_recv
    // and xrc_recv_cq use that SRQ until the next call); nullptr
    // otherwise (an INI QP, an unknown SRQ, another domain's).
    virtual const void* select_xrc_srq(std::uint32_t /*srqn*/) noexcept { return nullptr; }
    // XRC TGT: the CQ ring of the SRQ the current request named, looked up
    // when its completion is written (the SRQ may be gone: nullptr, the
    // completion is lost with its WQEs).
    virtual CqRing* xrc_recv_cq() noexcept { return nullptr; }
    // Tag matching (an RC QP on a tag-matching SRQ; datapath/README.md, "Tag
    // matching"). tag_matching(): SENDs start with an ibv_tmh. match_tag: the
    // first posted tagged buffer whose (tag & mask) == its tag, consumed and
    // lent as a WQE (wr_id = its recv_wr_id); false when none matches (or
    // matching waits for a sync). unexpected_tag: a tagged message went to the
    // SRQ's ordinary WQE; true asks for IBV_WC_TM_SYNC_REQ on its completion.
    virtual bool tag_matching() noexcept { return false; }
    virtual bool match_tag(std::uint64_t /*tag*/, RecvView& /*out*/) noexcept { return false; }
    virtual bool unexpected_tag() noexcept { return false; }
    // A SEND with invalidate arrived whole on this QP: invalidate the window
    // `rkey` names. False (nothing changed) when it is not a window this QP
    // may invalidate; a host without windows has none.
    virtual bool invalidate_rkey(std::uint32_t /*rkey*/) noexcept { return false; }
};

// The CQ rings a QP's completions go to (either may be null: an XRC TGT QP
// sends nothing, its receives complete on its SRQ's CQ). The rings outlive
// the QP: a CQ in use cannot be destroyed.
struct QpRings {
    CqRing* send_cq = nullptr;
    CqRing* recv_cq = nullptr;
};

} // namespace rdmasim::datapath
