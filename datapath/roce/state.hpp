// The state of one QP's transport, split by the stage that owns it, as
// Linux's rxe splits its QP into req, comp and resp (datapath/README.md,
// "RoCE transport"): the send queue the requester fills and the completer
// retires, and each stage's own variables. Plain data: the stage functions
// (requester.cpp, completer.cpp, responder.cpp, ...) are RoceQp's.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "datapath/recv_ring.hpp"
#include "datapath/roce/timers.hpp"
#include "datapath/roce/types.hpp"

namespace rdmasim::datapath {

// One posted send WR and how far the transport got with it.
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

// The send queue: a ring of slots, each with room for max_send_sge SGEs and
// max_inline bytes, allocated once. Posting fills `head`; the completer
// retires from `tail`.
struct SendQueue {
    std::vector<SendSlot> slots;
    std::vector<Sge> sges;
    std::vector<std::uint8_t> inline_bytes;
    std::uint32_t max_sge = 1;
    std::uint32_t max_inline = 0;
    std::uint32_t mask = 0;
    std::uint32_t head = 0;        // next slot to post
    std::uint32_t tail = 0;        // oldest not completed
    std::uint32_t user_cap = 0;    // slots the program may fill (max_send_wr rounded)
    std::uint32_t tm_inflight = 0; // rendezvous WRs the responder posted, not retired

    [[nodiscard]] SendSlot& slot(std::uint32_t i) noexcept { return slots[i & mask]; }
    [[nodiscard]] Sge* sges_of(std::uint32_t i) noexcept {
        return &sges[static_cast<std::size_t>(i & mask) * max_sge];
    }
    [[nodiscard]] std::uint8_t* inline_of(std::uint32_t i) noexcept {
        return &inline_bytes[static_cast<std::size_t>(i & mask) * max_inline];
    }
    // The program's WRs in the queue (rendezvous WRs apart).
    [[nodiscard]] std::uint32_t user_size() const noexcept { return head - tail - tm_inflight; }
};

// The requester (rxe's qp->req): what goes out next.
struct ReqState {
    std::uint32_t assigned = 0; // first slot without PSNs
    std::uint32_t send_idx = 0; // next slot to (re)transmit
    std::uint32_t send_pkt = 0; // its next packet
    std::uint32_t next_psn = 0; // PSN of the next new packet
    std::uint32_t sent_psn = 0; // after the highest PSN ever sent (older ones are retransmissions)
    std::uint32_t rd_in_flight = 0;
    std::uint32_t cwnd = ~0u; // PSNs in flight allowed now: the window, or fewer after a loss
    std::uint64_t rnr_deadline = kNoDeadline;   // sending waits for it
    bool waiting_room = false;                  // stopped on a congested wire (RocePort::wait_for_room)
    std::vector<std::span<const std::uint8_t>> pieces; // gather list of one packet
};

// The completer (rxe's qp->comp): what came back, and the ACK timer.
struct CompState {
    std::uint32_t una = 0; // oldest PSN not acknowledged (== req.next_psn: nothing in flight)
    std::uint8_t retry_left = 7;
    std::uint8_t rnr_left = 7;
    std::uint64_t ack_deadline = kNoDeadline;
    // The first time the ACK timer fell due while the peer had not read what
    // was sent (RoceQp::service); kNoDeadline when it is not held.
    std::uint64_t held_since = kNoDeadline;
    std::uint32_t read_gap_psn = 0; // a READ re-request was made for this PSN
    bool read_gap_pending = false;
    bool drain_pending = false; // in SQD, SQ_DRAINED not raised yet
};

// A READ or atomic the responder executed, kept for duplicates.
struct RdAtomicSlot {
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

// The responder (rxe's qp->resp): the expected PSN and the message in progress.
struct RespState {
    const void* pd = nullptr; // remote accesses are checked against it (attrs.pd; XRC: the SRQ's)
    std::uint32_t epsn = 0;
    std::uint32_t msn = 0;
    bool seq_nak_sent = false;
    bool comm_est = false;
    enum class InMsg : std::uint8_t { none, send, write } in_msg = InMsg::none;
    bool uc_drop = false;  // UC: drop until a FIRST or ONLY
    bool have_wqe = false; // a receive WQE taken for the message in progress
    std::uint64_t wqe_id = 0;
    std::uint32_t wqe_len = 0;
    std::uint32_t wqe_nsge = 0;
    std::vector<Sge> wqe_sges;
    std::uint32_t msg_off = 0;    // bytes of the message placed so far
    std::uint64_t write_va = 0;   // RETH of the WRITE in progress: its VA,
    std::uint32_t write_rkey = 0; // its key
    std::uint32_t write_len = 0;  // and its DMA length
    std::uint32_t unacked = 0;    // packets accepted since the last ACK
    std::vector<RdAtomicSlot> rd_slots;
    std::uint32_t rd_next = 0;

    // Forgets the message in progress (not the PSNs).
    void reset_message() noexcept {
        in_msg = InMsg::none;
        uc_drop = false;
        have_wqe = false;
        msg_off = 0;
        write_va = 0;
        write_rkey = 0;
        write_len = 0;
        unacked = 0;
    }
};

// Tag matching on the responder (datapath/README.md, "Tag matching").
struct TmState {
    enum class Msg : std::uint8_t { none, no_tag, unexpected, eager, rndv };
    Msg msg = Msg::none; // the SEND in progress on a TM QP
    bool sync_req = false;
    std::uint32_t skip = 0; // header bytes not placed (a matched EAGER's TMH)
    std::uint32_t priv = 0;
    std::uint64_t tag = 0;
    std::uint64_t va = 0; // a matched RNDV's RVH
    std::uint32_t rkey = 0;
    std::uint32_t len = 0;
    std::array<std::uint8_t, 16> fin{}; // the FIN's TMH (sent from the inline buffer)
};

} // namespace rdmasim::datapath
