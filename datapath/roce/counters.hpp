// RoCE transport accounting (datapath/README.md, "RoCE transport"): every
// RoCE frame handed to a QP's transport ends in exactly one RoceRx outcome,
// counted in the QP's RoceCounters and in the port's (summed as they happen).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "datapath/counters.hpp"

namespace rdmasim::datapath {

enum class RoceRx : std::uint8_t {
    consumed,        // accepted: data placed, a request answered, an ACK or response applied
    duplicate,       // PSN already seen (re-ACKed, or a READ / atomic answered again)
    sequence_error,  // PSN ahead of the expected one (RC: NAK sent once per ePSN)
    rnr,             // no receive WQE (RC: RNR NAK sent)
    not_ready,       // the QP is not in RTR / RTS (or SQD), or in error
    wrong_transport, // an opcode of another transport than the QP's
    invalid_request, // bad opcode sequence, bad length, misaligned atomic (RC: NAK invalid request)
    remote_access,   // rkey / bounds / access check failed (RC: NAK remote access)
    remote_operation, // the responder could not place the data (local protection: NAK remote op)
    length_error,     // the message is longer than the receive WQE (IBV_WC_LOC_LEN_ERR)
    qkey_mismatch,    // UD: DETH Q_Key is not the QP's
    no_receive_wqe,   // UC / UD: no receive WQE posted (rx_out_of_buffer)
    message_dropped,  // UC: a packet of a message a PSN gap or an error cut short
    stale_ack,        // requester: an ACK / response for nothing outstanding, or out of order
    pkey_violation,   // BTH P_Key does not match the QP's (IBA 10.9.3): dropped, nothing answered
    count_
};
inline constexpr std::size_t kRoceRxKinds = kKinds<RoceRx>;
inline constexpr KindNames<RoceRx> kRoceRxNames{
    "consumed",         "duplicate",       "sequence_error",  "rnr",
    "not_ready",        "wrong_transport", "invalid_request", "remote_access",
    "remote_operation", "length_error",    "qkey_mismatch",   "no_receive_wqe",
    "message_dropped",  "stale_ack",       "pkey_violation"};
static_assert(all_named(kRoceRxNames));

[[nodiscard]] constexpr std::string_view roce_rx_name(RoceRx r) noexcept { return kind_name(kRoceRxNames, r); }

struct RoceCounters {
    Counter rx_frames; // frames handed to the transport: = sum(rx)
    KindCounters<RoceRx> rx;
    // Observations, not outcomes:
    Counter tx_packets; // every frame sent (requests, retransmissions, ACKs, responses)
    Counter tx_bytes;
    Counter retransmitted;     // request packets sent again (go-back-N)
    Counter timeouts;          // local ACK timeouts that fired
    Counter ack_timer_holds;   // ACK timeouts restarted: the peer had not read the requests yet
    Counter seq_naks_received; // NAK sequence error
    Counter slow_restarts;     // losses after which fewer PSNs went in flight
                               // (TransportLimits::restart_window)
    Counter rnr_naks_received;
    Counter acks_sent; // ACKs (not NAKs) sent by the responder
    Counter naks_sent; // NAKs of every kind, RNR included
    Counter read_responses_sent;

    void count(RoceRx r) noexcept {
        rx_frames.add();
        rx[static_cast<std::size_t>(r)].add();
    }
    [[nodiscard]] std::uint64_t get(RoceRx r) const noexcept { return kind_count(rx, r); }
};

} // namespace rdmasim::datapath
