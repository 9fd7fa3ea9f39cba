// The RoCE v2 transport of one QP (RC, UC or UD): requester (segmentation,
// PSNs, ACK timeout and go-back-N, RNR waits, READ responses and atomic
// results, in-order completions) and responder (ePSN, duplicates, NAKs,
// placement, receive completions). It knows no verbs object: what it needs
// from outside is a TransportHost, an MrTable and the attributes
// modify_qp gives. (datapath/README.md, "RoCE transport")
//
// Threading: every member function is called under one lock (the port's),
// so none of them races with another. post_send copies what it needs; SGE
// memory is read when a packet is (re)sent, as hardware does.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "datapath/cq_ring.hpp"
#include "datapath/mr_table.hpp"
#include "datapath/recv_ring.hpp"
#include "datapath/roce/counters.hpp"
#include "datapath/roce/timers.hpp"
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

// What the transport calls out to. None of these may call back into the
// transport (queue a frame rather than deliver it at once).
class TransportHost {
public:
    virtual ~TransportHost() = default;
    // One frame (no FCS) to the port's send path; bytes valid during the
    // call. The host may rewrite its Ethernet header (the destination MAC
    // ARP found) in place.
    virtual void transmit(std::span<std::uint8_t> frame, std::uint64_t now_ns) noexcept = 0;
    // The QP's next deadline moved earlier (the port services it then).
    virtual void deadline_changed(std::uint64_t deadline_ns) noexcept = 0;
    // The front receive WQE of the QP's RQ or SRQ; false when none is posted.
    virtual bool peek_recv(RecvView& out) noexcept = 0;
    virtual void pop_recv() noexcept = 0; // consumes the front (SRQ: the limit event is the host's)
    virtual void complete_send(const Cqe& cqe) noexcept = 0;
    virtual void complete_recv(const Cqe& cqe) noexcept = 0;
    virtual void event(TransportEvent kind) noexcept = 0;
    // An XRC request names XRC SRQ `srqn`: when it is an SRQ of the QP's XRC
    // domain, the PD its memory is checked against (and peek_recv, pop_recv
    // and complete_recv use that SRQ until the next call); nullptr
    // otherwise (an INI QP, an unknown SRQ, another domain's).
    virtual const void* select_xrc_srq(std::uint32_t /*srqn*/) noexcept { return nullptr; }
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

class RoceQp {
public:
    // `port_counters` (may be null) gets every count the QP's own get.
    RoceQp(TransportHost& host, const MrTable& mrs, const TransportLimits& limits,
           RoceCounters* port_counters = nullptr);

    // Applies attributes and moves to `state` (the device validated both;
    // `attrs` is the QP's whole current set, not only what this call changes).
    // Into RTR: the responder starts at rq_psn. Into RTS (from RTR): the
    // requester starts at sq_psn. Into RESET: everything is forgotten. Into
    // ERROR: posted work is flushed (IBV_WC_WR_FLUSH_ERR).
    void modify(const TransportAttrs& attrs, TransportState state, std::uint64_t now_ns) noexcept;

    // 0, ENOMEM (send queue full) or EINVAL (more SGEs than max_send_sge,
    // inline data over max_inline, an operation the QP type lacks, a
    // message over 1 GiB, mlx5's max_msg_sz). Before RTS the WQE waits. In ERROR
    // the WQE completes at once with IBV_WC_WR_FLUSH_ERR.
    [[nodiscard]] int post_send(const SendWr& wr, std::span<const Sge> sges,
                                std::uint64_t now_ns) noexcept;

    // One received packet addressed to this QP (the port parsed it and
    // matched BTH DestQP). Returns its outcome, also counted.
    RoceRx receive(const net::RocePacket& packet, std::uint64_t now_ns) noexcept;

    // Fires the timers due at `now_ns` (ACK timeout, RNR wait).
    void service(std::uint64_t now_ns) noexcept;
    [[nodiscard]] std::uint64_t next_deadline_ns() const noexcept;

    // Flushes posted receive WQEs (not an SRQ's): the host calls it after a
    // post_recv on a QP in ERROR, as the transport does on entering it.
    void flush_receive_queue() noexcept;

    [[nodiscard]] TransportState state() const noexcept { return state_; }
    [[nodiscard]] const TransportAttrs& attrs() const noexcept { return attrs_; }
    [[nodiscard]] const RoceCounters& counters() const noexcept { return counters_; }
    [[nodiscard]] std::uint32_t send_queue_size() const noexcept { return sq_head_ - sq_tail_ - tm_inflight_; } // the program's WRs
    [[nodiscard]] std::uint32_t expected_psn() const noexcept { return epsn_; }
    [[nodiscard]] std::uint32_t next_send_psn() const noexcept { return next_psn_; }

private:
    struct SendSlot {
        SendWr wr;
        std::uint32_t num_sge = 0;
        std::uint32_t length = 0;    // message bytes (atomics: 8)
        std::uint32_t first_psn = 0; // valid once assigned
        std::uint32_t npkts = 0;     // PSNs the message uses
        std::uint32_t read_done = 0; // READ: bytes placed so far
        bool assigned = false;
        bool done = false; // acknowledged / answered: complete in order
    };
    struct RdAtomicSlot { // a READ or atomic the responder executed, for duplicates
        bool valid = false;
        bool atomic = false;       // CMP_SWP / FETCH_ADD
        bool atomic_write = false; // ATOMIC WRITE (answered by an empty READ RESPONSE)
        std::uint32_t psn = 0;
        std::uint32_t npkts = 0;
        std::uint64_t orig = 0; // atomic: the value returned
        // READ: its RETH; a duplicate is answered only within it.
        std::uint64_t va = 0;
        std::uint32_t rkey = 0;
        std::uint32_t len = 0;
    };

    // requester (roce_requester.cpp)
    [[nodiscard]] SendSlot& slot(std::uint32_t i) noexcept { return slots_[i & sq_mask_]; }
    [[nodiscard]] Sge* slot_sges(std::uint32_t i) noexcept {
        return &sq_sges_[static_cast<std::size_t>(i & sq_mask_) * limits_.max_send_sge];
    }
    [[nodiscard]] std::uint8_t* slot_inline(std::uint32_t i) noexcept {
        return &sq_inline_[static_cast<std::size_t>(i & sq_mask_) * limits_.max_inline];
    }
    void pump(std::uint64_t now_ns) noexcept;
    // Fills the slot at sq_head_ with `wr` (its SGEs, or their bytes copied
    // when inline) and `length`; the caller advances sq_head_.
    void fill_head_slot(const SendWr& wr, std::span<const Sge> sges, std::uint32_t length) noexcept;
    // The oldest READ or atomic not answered yet: answers come back in request
    // order. assigned_ when there is none.
    [[nodiscard]] std::uint32_t oldest_unanswered() noexcept;
    bool send_packet(std::uint32_t idx, std::uint32_t pkt, std::uint64_t now_ns) noexcept;
    bool send_read_request(std::uint32_t idx, std::uint32_t pkt, std::uint64_t now_ns) noexcept;
    bool gather(std::uint32_t idx, std::uint32_t offset, std::uint32_t len) noexcept;
    void go_back(std::uint32_t psn) noexcept;
    void arm_ack_timer(std::uint64_t now_ns, bool restart) noexcept;

    // completer (roce_completer.cpp; READ and atomic answers: roce_responses.cpp)
    RoceRx on_ack(const net::RocePacket& p, std::uint64_t now_ns) noexcept;
    RoceRx on_read_response(const net::RocePacket& p, std::uint64_t now_ns) noexcept;
    RoceRx on_atomic_ack(const net::RocePacket& p, std::uint64_t now_ns) noexcept;
    RoceRx on_atomic_write_response(const net::RocePacket& p, std::uint32_t idx,
                                    std::uint64_t now_ns) noexcept;
    bool ack_through(std::uint32_t psn, std::uint64_t now_ns) noexcept;
    void retire() noexcept;
    void complete_send(SendSlot& s, std::uint8_t status) noexcept;
    void fail_send(std::uint32_t idx, std::uint8_t status) noexcept;
    void enter_error() noexcept; // on its own: flush, and tell the host
    void flush_all() noexcept;

    // responder (roce_responder.cpp, roce_read_atomic.cpp, roce_unreliable.cpp)
    RoceRx rc_request(const net::RocePacket& p, std::uint64_t now_ns) noexcept;
    RoceRx rc_duplicate(const net::RocePacket& p, std::uint64_t now_ns) noexcept;
    RoceRx rc_send(const net::RocePacket& p, std::uint64_t now_ns) noexcept;
    RoceRx rc_write(const net::RocePacket& p, std::uint64_t now_ns) noexcept;
    RoceRx rc_read(const net::RocePacket& p, std::uint64_t now_ns) noexcept;
    RoceRx rc_atomic(const net::RocePacket& p, std::uint64_t now_ns) noexcept;
    RoceRx rc_atomic_write(const net::RocePacket& p, std::uint64_t now_ns) noexcept;
    // RDMA WRITE (RC and UC): the RETH of a FIRST or ONLY is checked over its
    // whole range, and only the key and the range are kept; every packet is
    // translated again (write_piece), so once a verb that revokes the key,
    // the window or the QP's access has returned, the rest of the message
    // touches nothing. False: a remote access error.
    [[nodiscard]] bool start_write(const net::Reth& r, const void* pd) noexcept;
    [[nodiscard]] bool write_piece(const void* pd, std::span<const std::uint8_t> data) noexcept;
    RoceRx responder_fail(RoceRx why, net::NakCode code, std::uint32_t psn,
                          std::uint64_t now_ns) noexcept;
    void send_read_responses(std::uint32_t psn, const std::uint8_t* src, std::uint32_t len,
                             std::uint64_t now_ns) noexcept;
    void send_aeth(std::uint8_t opcode, std::uint8_t syndrome, std::uint32_t psn,
                   std::uint64_t now_ns, const std::uint64_t* atomic_orig = nullptr) noexcept;
    void ack_now(std::uint32_t psn, std::uint64_t now_ns) noexcept;
    void after_accept(const net::RocePacket& p, bool message_end, std::uint64_t now_ns) noexcept;
    RoceRx uc_request(const net::RocePacket& p, std::uint64_t now_ns) noexcept;
    RoceRx ud_request(const net::RocePacket& p, std::uint64_t now_ns) noexcept;
    bool take_recv_wqe() noexcept; // copies the front receive WQE and consumes it
    bool place(std::uint32_t offset, std::span<const std::uint8_t> data) noexcept;
    void complete_recv(std::uint8_t status, std::uint8_t opcode, std::uint32_t byte_len,
                       std::uint32_t wc_flags, std::uint32_t imm_host, std::uint32_t src_qp,
                       bool solicited = false) noexcept;
    // A completion of this QP, now, for WR `wr_id`: the fields every one of
    // its CQEs sets; the caller adds the rest.
    [[nodiscard]] Cqe make_cqe(std::uint64_t wr_id, std::uint8_t status, std::uint8_t opcode) const noexcept {
        Cqe c;
        c.wr_id = wr_id;
        c.timestamp_ns = now_ns_;
        c.qp_num = attrs_.qpn;
        c.status = status;
        c.opcode = opcode;
        return c;
    }
    void reset_responder() noexcept;

    // tag matching (roce_tag_matching.cpp)
    enum class TmMsg : std::uint8_t { none, no_tag, unexpected, eager, rndv };
    // First packet of a SEND on a TM QP: takes the tagged buffer or the
    // ordinary WQE; false when neither is there (RNR).
    bool tm_take(const net::RocePacket& p) noexcept;
    [[nodiscard]] std::uint8_t tm_wc_opcode() const noexcept;
    [[nodiscard]] std::uint32_t tm_wc_flags() const noexcept;
    void tm_start_rndv(std::uint64_t now_ns) noexcept; // the matched RNDV's READ
    void tm_send_done(const SendSlot& s, std::uint8_t status) noexcept;
    bool post_internal(const SendWr& wr, std::span<const Sge> sges) noexcept;

    void transmit(const net::RocePath& path, const net::RoceHeaders& h,
                  std::span<const std::span<const std::uint8_t>> payload,
                  std::uint64_t now_ns) noexcept;
    void count(RoceRx r) noexcept;

    TransportHost& host_;
    const MrTable& mrs_;
    TransportLimits limits_;
    RoceCounters counters_;
    RoceCounters* port_counters_;
    TransportAttrs attrs_;
    TransportState state_ = TransportState::reset;
    std::uint64_t now_ns_ = 0; // the clock at the current entry point (completion timestamps)
    std::vector<std::uint8_t> tx_buf_;
    std::vector<std::span<const std::uint8_t>> pieces_; // gather list of one packet

    // requester
    std::vector<SendSlot> slots_;
    std::vector<Sge> sq_sges_;
    std::vector<std::uint8_t> sq_inline_;
    std::uint32_t sq_mask_ = 0;
    std::uint32_t sq_head_ = 0;  // next slot to post
    std::uint32_t sq_tail_ = 0;  // oldest not completed
    std::uint32_t assigned_ = 0; // first slot without PSNs
    std::uint32_t send_idx_ = 0; // next slot to (re)transmit
    std::uint32_t send_pkt_ = 0; // its next packet
    std::uint32_t next_psn_ = 0; // PSN of the next new packet
    std::uint32_t una_ = 0;      // oldest PSN not acknowledged (== next_psn_: nothing in flight)
    std::uint32_t sent_psn_ = 0; // after the highest PSN ever sent (older ones are retransmissions)
    std::uint32_t rd_in_flight_ = 0;
    std::uint8_t retry_left_ = 7;
    std::uint8_t rnr_left_ = 7;
    std::uint64_t ack_deadline_ = kNoDeadline;
    std::uint64_t rnr_deadline_ = kNoDeadline; // sending waits for it
    std::uint32_t read_gap_psn_ = 0;           // a READ re-request was made for this PSN
    bool read_gap_pending_ = false;
    bool drain_pending_ = false; // in SQD, SQ_DRAINED not raised yet

    // responder
    const void* resp_pd_ = nullptr; // remote accesses are checked against it (attrs_.pd; XRC: the SRQ's)
    std::uint32_t epsn_ = 0;
    std::uint32_t msn_ = 0;
    bool seq_nak_sent_ = false;
    bool comm_est_ = false;
    enum class InMsg : std::uint8_t { none, send, write } in_msg_ = InMsg::none;
    bool uc_drop_ = false;  // UC: drop until a FIRST or ONLY
    bool have_wqe_ = false; // a receive WQE taken for the message in progress
    std::uint64_t rwqe_id_ = 0;
    std::uint32_t rwqe_len_ = 0;
    std::uint32_t rwqe_nsge_ = 0;
    std::vector<Sge> rwqe_sges_;
    std::uint32_t msg_off_ = 0; // bytes of the message placed so far
    std::uint64_t write_va_ = 0;   // RETH of the WRITE in progress: its VA,
    std::uint32_t write_rkey_ = 0; // its key
    std::uint32_t write_len_ = 0;  // and its DMA length
    std::uint32_t unacked_ = 0;   // packets accepted since the last ACK
    std::vector<RdAtomicSlot> rd_slots_;
    std::uint32_t rd_next_ = 0;

    // tag matching
    std::uint32_t user_cap_ = 0;    // send slots the program may fill (max_send_wr rounded)
    std::uint32_t tm_inflight_ = 0; // rendezvous WRs posted, not retired
    TmMsg tm_msg_ = TmMsg::none;    // the SEND in progress on a TM QP
    bool tm_sync_req_ = false;
    std::uint32_t tm_skip_ = 0; // header bytes not placed (a matched EAGER's TMH)
    std::uint32_t tm_priv_ = 0;
    std::uint64_t tm_tag_ = 0;
    std::uint64_t tm_va_ = 0; // a matched RNDV's RVH
    std::uint32_t tm_rkey_ = 0;
    std::uint32_t tm_len_ = 0;
    std::array<std::uint8_t, 16> tm_fin_{}; // the FIN's TMH (sent from the inline buffer)
};

} // namespace rdmasim::datapath
