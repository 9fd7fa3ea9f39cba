// The RoCE v2 transport of one QP (RC, UC or UD), in the stages of Linux's
// rxe (datapath/README.md, "RoCE transport"):
//   requester  (requester.cpp)       posting, segmentation, PSNs, the window, go-back-N
//   completer  (completer.cpp,       ACKs, NAKs, timers, in-order completions, errors;
//               read_responses.cpp)  READ responses and atomic ACKs
//   responder  (responder.cpp,       the RC responder: PSNs, duplicates, SEND, WRITE;
//               read_atomic.cpp,     READ, atomics, ATOMIC WRITE;
//               unreliable.cpp,      UC and UD;
//               tag_matching.cpp)    tag matching
//   receive    (recv.cpp)            the one dispatch of a received packet to its stage
// Each stage keeps its own state (state.hpp: req_, comp_, resp_, tm_; the
// send queue sq_ is the requester's to fill and the completer's to retire).
// The QP sends its frames through its RocePort and writes its completions
// into the CQ rings it was given; from the device it needs only receive
// WQEs and a place for its events (TransportHost).
//
// Threading: every member function is called under one lock (the port's),
// so none of them races with another. post_send copies what it needs; SGE
// memory is read when a packet is (re)sent, as hardware does.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "datapath/cq_ring.hpp"
#include "datapath/mr_table.hpp"
#include "datapath/roce/counters.hpp"
#include "datapath/roce/state.hpp"
#include "datapath/roce/types.hpp"
#include "net/roce_frame.hpp"

namespace rdmasim::datapath {

class RocePort;

// What a receive completion reports beyond its WQE (success only; a failed
// receive reports its status and opcode, nothing else).
struct RecvDone {
    std::uint8_t opcode = 0;     // enum ibv_wc_opcode
    std::uint32_t byte_len = 0;
    std::uint32_t wc_flags = 0;  // IBV_WC_WITH_IMM, IBV_WC_WITH_INV, IBV_WC_GRH, TM flags
    std::uint32_t imm_host = 0;  // the ImmDt (host order), or the invalidated R_Key
    std::uint32_t src_qp = 0;    // UD
    bool solicited = false;
    bool ipv6 = false; // the packet's network header (the CQE's sl: responder.cpp)
};

class RoceQp {
public:
    // Registers nothing: the device attaches the QP to `port` (RocePort::attach)
    // once it is built. Every count goes to the QP's counters and the port's.
    RoceQp(TransportHost& host, RocePort& port, const MrTable& mrs, const TransportLimits& limits,
           QpRings rings);

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

    // Fires the timers due at `now_ns` (ACK timeout, RNR wait). With
    // `peer_unread` (the wire says the other end has not yet read all that
    // was sent: RoceWire::unread), a due ACK timeout restarts instead of
    // firing, counted in ack_timer_holds, for up to kMaxAckHold: the
    // requests are still on their way, as on a paused link.
    static constexpr std::uint64_t kMaxAckHold = 1'000'000'000; // ns
    void service(std::uint64_t now_ns, bool peer_unread = false) noexcept;
    [[nodiscard]] std::uint64_t next_deadline_ns() const noexcept;

    // Flushes posted receive WQEs (not an SRQ's): the host calls it after a
    // post_recv on a QP in ERROR, as the transport does on entering it.
    void flush_receive_queue() noexcept;

    // Lossless links (RocePort::wait_for_room): the requester stopped on a
    // congested wire; resume() goes on once it has room.
    [[nodiscard]] bool waiting_for_room() const noexcept { return req_.waiting_room; }
    void set_waiting_for_room(bool waiting) noexcept { req_.waiting_room = waiting; }
    void resume(std::uint64_t now_ns) noexcept { pump(now_ns); }
    // Requests of this QP the port holds (RocePort, "held requests"); the port's to keep.
    [[nodiscard]] std::uint32_t held_requests() const noexcept { return held_requests_; }
    void add_held_requests(std::int32_t n) noexcept {
        held_requests_ += static_cast<std::uint32_t>(n);
    }

    [[nodiscard]] TransportState state() const noexcept { return state_; }
    [[nodiscard]] const TransportAttrs& attrs() const noexcept { return attrs_; }
    [[nodiscard]] const RoceCounters& counters() const noexcept { return counters_; }
    [[nodiscard]] std::uint32_t send_queue_size() const noexcept { return sq_.user_size(); }
    [[nodiscard]] std::uint32_t expected_psn() const noexcept { return resp_.epsn; }
    [[nodiscard]] std::uint32_t next_send_psn() const noexcept { return req_.next_psn; }

private:
    std::uint32_t held_requests_ = 0; // add_held_requests
    // Helpers marked always_inline are called only from their stage's own
    // file (the per-packet path keeps the calls it had as one function).
    // The QP as a whole (qp.cpp): counting, framing, completions, errors.
    // Every count goes to the QP's counters and the port's, in one call.
    void count(RoceRx r) noexcept {
        counters_.count(r);
        port_counters_->count(r);
    }
    void note(Counter RoceCounters::*counter, std::uint64_t n = 1) noexcept {
        (counters_.*counter).add(n);
        (port_counters_->*counter).add(n);
    }
    void transmit(const net::RocePath& path, const net::RoceHeaders& h,
                  std::span<const std::span<const std::uint8_t>> payload,
                  std::uint64_t now_ns) noexcept;
    void timer_armed(std::uint64_t deadline_ns) noexcept; // the port's next deadline follows
    // A completion of this QP, now, for WR `wr_id`: the fields every one of
    // its CQEs sets; the caller adds the rest.
    [[nodiscard]] Cqe make_cqe(std::uint64_t wr_id, std::uint8_t status, std::uint8_t opcode) const noexcept;
    void push_send_cqe(const Cqe& c) noexcept;
    void push_recv_cqe(const Cqe& c) noexcept;
    void enter_error() noexcept; // on its own: flush, and tell the host
    void flush_all() noexcept;

    // receive dispatch (recv.cpp)
    [[gnu::always_inline]] [[nodiscard]] inline std::optional<RoceRx> check_packet(const net::RocePacket& p) noexcept;
    [[gnu::always_inline]] inline RoceRx to_completer(const net::RocePacket& p, std::uint64_t now_ns) noexcept;
    [[gnu::always_inline]] inline RoceRx to_responder(const net::RocePacket& p, std::uint64_t now_ns) noexcept;

    // requester (requester.cpp)
    [[gnu::always_inline]] [[nodiscard]] inline int check_send(const SendWr& wr, std::span<const Sge> sges,
                                 std::uint64_t& total) const noexcept;
    void pump(std::uint64_t now_ns) noexcept;
    // False, and the QP waits for room, when the wire is congested.
    [[gnu::always_inline]] inline bool wire_has_room() noexcept;
    enum class Admit : std::uint8_t { go, wait, failed };
    [[gnu::always_inline]] inline Admit assign_psns(SendSlot& s, std::uint32_t mtu) noexcept;
    [[gnu::always_inline]] inline bool send_data_packets(SendSlot& s, std::uint64_t now_ns) noexcept;
    // Fills the slot at sq_.head with `wr` (its SGEs, or their bytes copied
    // when inline) and `length`; the caller advances sq_.head.
    void fill_head_slot(const SendWr& wr, std::span<const Sge> sges, std::uint32_t length) noexcept;
    bool send_packet(std::uint32_t idx, std::uint32_t pkt, std::uint64_t now_ns) noexcept;
    bool send_read_request(std::uint32_t idx, std::uint32_t pkt, std::uint64_t now_ns) noexcept;
    void note_sent(std::uint32_t psn, std::uint32_t after) noexcept; // counts a retransmission
    bool gather(std::uint32_t idx, std::uint32_t offset, std::uint32_t len,
                std::uint8_t* bounce) noexcept;
    void go_back(std::uint32_t psn) noexcept;
    // A loss: go_back(psn), and no more than restart_window PSNs in flight
    // until ACKs open the window again (advance_una).
    void restart_after_loss(std::uint32_t psn) noexcept;
    // comp_.una becomes `una`; what that acknowledges widens a cut window.
    void advance_una(std::uint32_t una) noexcept;
    // PSNs that may be in flight now (RC).
    [[nodiscard]] std::int32_t in_flight_limit() const noexcept {
        return static_cast<std::int32_t>(std::min(limits_.window, req_.cwnd));
    }
    void arm_ack_timer(std::uint64_t now_ns, bool restart) noexcept;

    // completer (completer.cpp; READ and atomic answers: read_responses.cpp)
    RoceRx on_ack(const net::RocePacket& p, std::uint64_t now_ns) noexcept;
    RoceRx on_rnr_nak(const net::RocePacket& p, std::uint64_t now_ns) noexcept;
    RoceRx on_nak(const net::RocePacket& p, std::uint64_t now_ns) noexcept;
    bool nak_in_flight(std::uint32_t psn, std::uint64_t now_ns) noexcept;
    RoceRx on_read_response(const net::RocePacket& p, std::uint64_t now_ns) noexcept;
    RoceRx on_atomic_ack(const net::RocePacket& p, std::uint64_t now_ns) noexcept;
    RoceRx on_atomic_write_response(const net::RocePacket& p, std::uint32_t idx,
                                    std::uint64_t now_ns) noexcept;
    // The answer to slot `idx` (a READ, atomic or ATOMIC WRITE) is not the
    // next one expected: before it, a duplicate; after it, this one's was
    // lost and is asked for again. nullopt: it is the one expected.
    [[nodiscard]] std::optional<RoceRx> answer_out_of_order(const net::RocePacket& p,
                                                            std::uint32_t idx,
                                                            std::uint64_t now_ns) noexcept;
    void answered(std::uint32_t idx, std::uint64_t now_ns) noexcept; // a one-packet answer came
    RoceRx answer_lost_buffer(std::uint32_t idx) noexcept; // the local SGE failed: QP to error
    [[nodiscard]] std::uint32_t oldest_unanswered() noexcept;
    bool ack_through(std::uint32_t psn, std::uint64_t now_ns) noexcept;
    void retire() noexcept;
    void complete_send(SendSlot& s, std::uint8_t status) noexcept;
    void fail_send(std::uint32_t idx, std::uint8_t status) noexcept;
    void fail_and_stop(std::uint32_t idx, std::uint8_t status) noexcept; // fail_send, enter_error

    // responder (responder.cpp, read_atomic.cpp, unreliable.cpp)
    RoceRx rc_request(const net::RocePacket& p, std::uint64_t now_ns) noexcept;
    [[gnu::always_inline]] [[nodiscard]] inline std::optional<RoceRx> rc_check_psn(const net::RocePacket& p,
                                                     std::uint64_t now_ns) noexcept;
    [[gnu::always_inline]] [[nodiscard]] inline std::optional<RoceRx> rc_check_request(const net::RocePacket& p,
                                                         std::uint64_t now_ns) noexcept;
    [[gnu::always_inline]] inline RoceRx rc_execute(const net::RocePacket& p, std::uint64_t now_ns) noexcept;
    RoceRx rc_duplicate(const net::RocePacket& p, std::uint64_t now_ns) noexcept;
    void rc_duplicate_read(const net::RocePacket& p, std::uint64_t now_ns) noexcept;
    RoceRx rc_send(const net::RocePacket& p, std::uint64_t now_ns) noexcept;
    RoceRx rc_send_end(const net::RocePacket& p, std::uint8_t opcode, std::uint64_t now_ns) noexcept;
    RoceRx rc_write(const net::RocePacket& p, std::uint64_t now_ns) noexcept;
    RoceRx rc_read(const net::RocePacket& p, std::uint64_t now_ns) noexcept;
    RoceRx rc_atomic(const net::RocePacket& p, std::uint64_t now_ns) noexcept;
    RoceRx rc_atomic_write(const net::RocePacket& p, std::uint64_t now_ns) noexcept;
    // The target of a remote READ, atomic or ATOMIC WRITE: the QP allows
    // `qp_access` (an IBV_ACCESS_REMOTE_* bit) and the key covers the range
    // with `kind`; host nullptr otherwise. An ODP target is checked readable
    // too (kRemoteRead; datapath/README.md, "On-demand paging").
    [[nodiscard]] MrRef remote_target(std::uint32_t qp_access, std::uint32_t rkey, std::uint64_t va,
                                      std::uint32_t len, RemoteAccess kind) const noexcept;
    // A READ or atomic was executed: kept for duplicates, the PSNs it used
    // are taken and ACK coalescing starts over (its answer acknowledges).
    void keep_rd_atomic(const RdAtomicSlot& done) noexcept;
    // RDMA WRITE (RC and UC): the RETH of a FIRST or ONLY is checked over its
    // whole range, and only the key and the range are kept; every packet is
    // translated again (write_piece), so once a verb that revokes the key,
    // the window or the QP's access has returned, the rest of the message
    // touches nothing. False: a remote access error.
    [[nodiscard]] bool start_write(const net::Reth& r, const void* pd) noexcept;
    [[nodiscard]] bool write_piece(const void* pd, std::span<const std::uint8_t> data) noexcept;
    RoceRx responder_fail(RoceRx why, net::NakCode code, std::uint32_t psn,
                          std::uint64_t now_ns) noexcept;
    void send_read_responses(std::uint32_t psn, MrRef src, std::uint32_t len,
                             std::uint64_t now_ns) noexcept;
    void send_aeth(std::uint8_t opcode, std::uint8_t syndrome, std::uint32_t psn,
                   std::uint64_t now_ns, const std::uint64_t* atomic_orig = nullptr) noexcept;
    void send_rnr_nak(std::uint32_t psn, std::uint64_t now_ns) noexcept;
    void ack_now(std::uint32_t psn, std::uint64_t now_ns) noexcept;
    void after_accept(const net::RocePacket& p, bool message_end, std::uint64_t now_ns) noexcept;
    RoceRx uc_request(const net::RocePacket& p) noexcept;
    RoceRx uc_send(const net::RocePacket& p, bool cont, bool end) noexcept;
    RoceRx uc_write(const net::RocePacket& p, bool cont, bool end) noexcept;
    RoceRx uc_drop(RoceRx why, bool end) noexcept;
    RoceRx ud_request(const net::RocePacket& p) noexcept;
    bool take_recv_wqe() noexcept; // copies the front receive WQE and consumes it
    void hold_wqe(const RecvView& v) noexcept; // the message in progress takes WQE `v`
    bool place(std::uint32_t offset, std::span<const std::uint8_t> data) noexcept;
    void recv_done(const RecvDone& d) noexcept;                   // the held WQE, successfully
    void recv_failed(std::uint8_t status, std::uint8_t opcode) noexcept; // the held WQE, in error
    void reset_responder() noexcept;

    // tag matching (tag_matching.cpp)
    // First packet of a SEND on a TM QP: takes the tagged buffer or the
    // ordinary WQE; false when neither is there (RNR).
    bool tm_take(const net::RocePacket& p) noexcept;
    bool tm_take_matched(const net::RocePacket& p, std::uint64_t tag, const RecvView& v) noexcept;
    [[nodiscard]] std::uint8_t tm_wc_opcode() const noexcept;
    [[nodiscard]] std::uint32_t tm_wc_flags() const noexcept;
    void tm_start_rndv(std::uint64_t now_ns) noexcept; // the matched RNDV's READ
    void tm_send_done(const SendSlot& s, std::uint8_t status) noexcept;
    bool post_internal(const SendWr& wr, std::span<const Sge> sges) noexcept;

    // What every stage shares.
    TransportHost& host_;
    RocePort& port_;
    const MrTable& mrs_;
    TransportLimits limits_;
    QpRings rings_;
    RoceCounters counters_;
    RoceCounters* port_counters_;
    TransportAttrs attrs_;
    TransportState state_ = TransportState::reset;
    std::uint64_t now_ns_ = 0; // the clock at the current entry point (completion timestamps)
    std::vector<std::uint8_t> tx_buf_;

    // Each stage's own.
    SendQueue sq_;
    ReqState req_;
    CompState comp_;
    RespState resp_;
    TmState tm_;
};

} // namespace rdmasim::datapath
