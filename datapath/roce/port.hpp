// A port's RoCE side (datapath/README.md, "RoCE transport"): the QPs by
// number, the frame -> QP demultiplexing, their timers, and the port's
// RoCE counters. A RoCE frame the port hands over ends here in exactly one
// outcome: a parse drop (net::RoceDrop), `unknown_qp`, or the QP's RoceRx.
// Same threading as RoceQp: every call under the port lock.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "datapath/family.hpp"
#include "datapath/roce/frame_ring.hpp"
#include "datapath/roce/multicast.hpp"
#include "datapath/roce/qp.hpp"
#include "net/roce_frame.hpp"

namespace rdmasim::datapath {

struct RocePortCounters {
    RoceCounters qps; // the sum of every attached QP's counters (each QP adds as it counts)
    Counter frames;   // RoCE frames offered: = parse drops + unknown_qp + qps.rx_frames
                      //   - mcast_copies + requests_held_overflow + held_now() + gsi_mads
                      //   + family_out
    std::array<Counter, net::kRoceDropCount> parse_drops; // by net::RoceDrop (index 0 unused)
    Counter unknown_qp; // BTH DestQP names no attached QP (the port answers nothing)
    Counter gsi_mads;   // datagrams for QP1, handed to the port's CM (datapath/cm/agent.hpp)
    Counter family_out; // looped back, owned by another member of the family: sent on its bus
    // Multicast (datapath/README.md, "Multicast"): a datagram to a group
    // reaches each attached QP, counted in qps.rx_frames once per QP.
    Counter mcast_frames;   // datagrams to a group that reached at least one QP
    Counter mcast_copies;   // of their receives, those beyond each datagram's first
    Counter mcast_loopback; // datagrams sent to a group with QPs on this port: queued for them too
    // Loopback (observations: a looped frame is counted again in `frames` when drained).
    Counter loopback_frames;   // frames queued for a QP of this port
    Counter loopback_overflow; // frames lost because the loopback queue was full
    // Held requests (observations: a held frame reaches its QP, and its
    // outcome, when it is let go; `frames` counted it once, on arrival).
    Counter requests_held;          // requests that waited for the wire to have room
    Counter requests_held_overflow; // lost: the hold queue was full (RC resends them)
    // To the wire (L2Host::send_roce; frames that waited for ARP are ArpWaitCounters').
    Counter tx_wire;        // frames handed to the port's sinks at once
    Counter tx_unroutable;  // frames for an address the port cannot reach (dropped)
};

// Where a port's RoCE frames go out (the port's L2 host: its own address
// looped back, ARP resolution or wait, the wire). Called under the port
// lock; it may rewrite the frame's Ethernet header in place. A function and
// its context rather than an interface: the objects that hold a port stay
// standard-layout (device/objects.hpp).
struct RoceWire {
    void (*send)(void* context, std::span<std::uint8_t> frame, std::uint64_t now_ns) noexcept = nullptr;
    void* context = nullptr;
    // True while the wire's transmit backlog is above its high watermark
    // (net::FrameSink::congested): requesters wait. nullptr: never.
    bool (*congested)(void* context) noexcept = nullptr;
    // Optional, one copy (net::FrameSink::claim): room for a `len`-byte
    // frame along `path` in the wire's own storage, or empty (send it).
    // Room granted is handed over with commit, next. nullptr: never.
    std::span<std::uint8_t> (*claim)(void* context, const net::RocePath& path, std::size_t len) noexcept = nullptr;
    void (*commit)(void* context, std::size_t len) noexcept = nullptr;
    // True while frames sent have not all been read by the other end (a
    // backlog, a socket's queue, a peer's ring: net::FrameSink::unread).
    // Asked on a live wire when an ACK timer falls due. nullptr: never.
    bool (*unread)(void* context) noexcept = nullptr;
};

// Where datagrams for QP1 (the GSI: CM MADs) go: the port's CM. A function
// and its context, as RoceWire.
struct GsiSink {
    void (*receive)(void* context, const net::RocePacket& packet) noexcept = nullptr;
    void* context = nullptr;
};

class RocePort {
public:
    // The loopback queue's storage (allocated here, once): `bytes` of frame
    // data and at most `frames` frames.
    explicit RocePort(std::size_t loopback_bytes = 8u << 20, std::uint32_t loopback_frames = 16384);
    // The hold queue's storage: see "held requests" below.
    static constexpr std::size_t kHeldBytes = 8u << 20;
    static constexpr std::uint32_t kHeldFrames = 16384;

    // The counters a QP of this port must be constructed with (RoceQp's port_counters).
    [[nodiscard]] RoceCounters* qp_counters() noexcept { return &counters_.qps; }

    static constexpr std::uint32_t kGsiQpn = 1;
    // The BTH destination QP of a datagram to a multicast group.
    static constexpr std::uint32_t kMcastQpn = 0xffffff;
    // The groups this port's UD QPs are attached to (set-up: the device's
    // attach and detach verbs; a QP detached leaves them all).
    [[nodiscard]] McastGroups& mcast() noexcept { return mcast_; }
    [[nodiscard]] const McastGroups& mcast() const noexcept { return mcast_; }
    // QP1's datagrams; until it is set, they count as unknown_qp.
    void set_gsi(const GsiSink& gsi) noexcept { gsi_ = gsi; }
    // The family this port's device is shared with after a fork (set by the
    // fork handler; nullptr: none). A looped-back frame another member owns
    // (Family::owner) goes to it instead of a QP or the CM of this port.
    void set_family(Family* family) noexcept { family_ = family; }
    [[nodiscard]] Family* family() const noexcept { return family_; }
    // The port's way out; until it is set, frames are dropped (tx_unroutable).
    void set_wire(const RoceWire& wire) noexcept { wire_ = wire; }
    // A frame one of this port's QPs sends (no FCS; bytes valid during the call).
    void transmit(std::span<std::uint8_t> frame, std::uint64_t now_ns) noexcept {
        if (wire_.send != nullptr) [[likely]]
            wire_.send(wire_.context, frame, now_ns);
        else
            counters_.tx_unroutable.add();
    }

    // A frame one of this port's QPs sends, built straight into the wire's
    // room when the wire grants one (the payload copied once, from the MR);
    // its length, or 0: build it elsewhere and transmit() it. Only for
    // payloads of kInPlaceMin bytes and more: a smaller one costs less to
    // copy than building in a slot whose reader polls it (shm://: the
    // slot's first cache line holds its stamp; ib_send_lat -s 8 measured
    // 1.7-1.9 us copied against 1.9-2.0 us built in place).
    static constexpr std::size_t kInPlaceMin = 1024;
    std::size_t transmit_in_place(const net::RocePath& path, const net::RoceHeaders& h,
                                  std::span<const std::span<const std::uint8_t>> payload) noexcept;

    // Whether the wire is congested: a requester takes no WQE then, and
    // waits for room (wait_for_room) instead (datapath/README.md, "Lossless links").
    [[nodiscard]] bool tx_congested() const noexcept {
        return wire_.congested != nullptr && wire_.congested(wire_.context);
    }
    // The requesters' turn (datapath/README.md, "Lossless links"): between
    // two reads of the wire they send at most kTurnPackets request packets,
    // so a port sending a large window still reads its peer's ACKs and
    // requests in between. new_turn() starts one (each engine or poll burst).
    static constexpr std::uint32_t kTurnPackets = 64;
    void new_turn() noexcept { turn_left_ = kTurnPackets; }
    // Turn left and the wire not congested.
    [[nodiscard]] bool turn_open() const noexcept { return turn_left_ != 0 && !tx_congested(); }
    // `qp`'s requester may send its next packet: the turn is open and no
    // QP waits before it (the waiting go first, oldest first: a QP woken
    // by an ACK does not take the turn of one stopped without AckReq).
    [[nodiscard]] bool requester_may_send(const RoceQp& qp) const noexcept {
        return turn_open() && (room_waiters_.empty() || resuming_ == &qp);
    }
    // A request packet left (a first send or a resend).
    void request_sent() noexcept {
        if (turn_left_ != 0) --turn_left_;
    }
    // The packet about to go ends the turn: it asks for an ACK, so that
    // what the QP sent so far is acknowledged while it waits.
    [[nodiscard]] bool turn_ending() const noexcept { return turn_left_ == 1; }
    // Requesters wait only for the next turn, not for the wire: a new
    // burst resumes them at once (sim/README.md, "Progress").
    [[nodiscard]] bool turn_waiters() const noexcept {
        return !room_waiters_.empty() && turn_left_ == 0 && !tx_congested();
    }
    // `qp`'s requester stopped on a congested wire or an ended turn:
    // resume_waiting pumps it once both allow. Once per stop (the QP's flag); never allocates.
    void wait_for_room(RoceQp& qp) noexcept;
    // Pumps the waiting requesters, oldest first, while the wire is not
    // congested and the turn lasts. Called by the port's service after the wire's flush.
    void resume_waiting(std::uint64_t now_ns) noexcept;
    [[nodiscard]] bool room_waiters() const noexcept { return !room_waiters_.empty(); }

    // Attaching allocates (set-up only); false when the QPN is taken.
    bool attach(RoceQp& qp);
    void detach(std::uint32_t qpn) noexcept;

    // One frame (no FCS) the port classified as RoCE v2 (UDP 4791): parsed,
    // handed to the QP its BTH names. Returns the QP's outcome, or nullopt
    // for a parse drop or an unknown QP (counted here). A held request
    // (below) returns consumed: the port took it; the QP's outcome comes
    // when it is let go; one the hold queue cannot take returns nullopt.
    std::optional<RoceRx> ingress(std::span<const std::uint8_t> frame,
                                  std::uint64_t now_ns) noexcept;

    // Fires every attached QP's timers due at `now_ns`; O(1) when none is
    // due (nothing is scanned before the earliest deadline). On a live wire,
    // due at the clock timers_clock() gives, and an ACK timeout waits while
    // the wire says the peer has not read what was sent (RoceQp::service).
    void service(std::uint64_t now_ns) noexcept;

    // A live wire's timers expire only up to the last time the wire was
    // found empty (wire_drained): an ACK that arrived before its deadline
    // and waits unread in the socket or ring (the process was not
    // scheduled) stops the timer, as it would have on a NIC. At most
    // kMaxTimerDefer late. The engine turns it on for a live, unpaced
    // source; off (replays, unit tests), timers expire at `now_ns`.
    static constexpr std::uint64_t kMaxTimerDefer = 100'000'000; // ns
    void set_live_wire(bool live) noexcept { live_wire_ = live; }
    [[nodiscard]] bool live_wire() const noexcept { return live_wire_; }
    // A read of the wire found it empty at `at_ns` or later: all that came before is in.
    void wire_drained(std::uint64_t at_ns) noexcept { drained_at_ns_ = std::max(drained_at_ns_, at_ns); }
    [[nodiscard]] std::uint64_t timers_clock(std::uint64_t now_ns) const noexcept {
        if (!live_wire_ || drained_at_ns_ >= now_ns) return now_ns;
        return std::max(drained_at_ns_, now_ns > kMaxTimerDefer ? now_ns - kMaxTimerDefer : 0);
    }
    // A QP's timer moved earlier: the port's next deadline follows.
    void deadline_changed(std::uint64_t deadline_ns) noexcept {
        next_deadline_ = std::min(next_deadline_, deadline_ns);
    }
    // The earliest deadline over the attached QPs, or kNoDeadline. O(1);
    // never later than the truth (a cancelled timer may leave it early:
    // that costs one needless service).
    [[nodiscard]] std::uint64_t next_deadline_ns() const noexcept { return next_deadline_; }

    // A frame a QP of this port sends to a QP of this port (the caller
    // decides from its addresses). A transport may not be re-entered from
    // its own transmit, so the frame waits here, copied, until
    // drain_loopback. False (counted in loopback_overflow: RC recovers as
    // from any loss) when the queue is full. `to_group`: a datagram to a
    // group some of this port's QPs are attached to, which goes to the wire
    // as well: counted in mcast_loopback, not loopback_frames, so that each
    // frame sent is counted once on the way out.
    bool queue_loopback(std::span<const std::uint8_t> frame, bool to_group = false) noexcept;
    // Ingresses the queued frames in order, and those they cause, until the
    // queue is empty. Call it after every call into a transport of this
    // port (post_send, service, ingress, modify) once it has returned; a
    // call made while draining returns at once.
    void drain_loopback(std::uint64_t now_ns) noexcept;
    [[nodiscard]] bool loopback_empty() const noexcept { return loopback_.empty(); }

    // Held requests: a READ request that arrives while the wire is
    // congested (its responses would pile up in the transmit backlog; a
    // NIC's responder is paused by the link) waits here, copied, and so do
    // the requests of its QP that follow it, in order, until
    // release_held() finds room: responses, ACKs and other QPs' requests
    // go on meanwhile, so the port keeps receiving. A request the queue
    // cannot take is lost (requests_held_overflow; RC resends it).
    void release_held(std::uint64_t now_ns) noexcept;
    [[nodiscard]] bool held_empty() const noexcept { return held_.empty(); }
    [[nodiscard]] std::uint32_t held_now() const noexcept { return held_.size(); }

    [[nodiscard]] const RocePortCounters& counters() const noexcept { return counters_; }
    void count_tx_wire() noexcept { counters_.tx_wire.add(); }
    void count_tx_unroutable() noexcept { counters_.tx_unroutable.add(); }
    [[nodiscard]] RoceQp* find(std::uint32_t qpn) const noexcept;

private:
    std::unordered_map<std::uint32_t, RoceQp*> qps_;
    std::vector<std::uint32_t> room_waiters_; // QPNs, oldest first; capacity reserved at attach
    std::uint32_t turn_left_ = kTurnPackets;  // request packets left in this turn
    const RoceQp* resuming_ = nullptr;         // the waiter resume_waiting pumps now
    bool live_wire_ = false;                   // set_live_wire
    std::uint64_t drained_at_ns_ = 0;          // wire_drained
    RoceWire wire_;
    GsiSink gsi_;
    McastGroups mcast_;
    // A datagram for kMcastQpn: one receive per QP attached to its group.
    std::optional<RoceRx> to_group(const net::RocePacket& p, std::uint64_t now_ns) noexcept;
    RocePortCounters counters_;
    std::uint64_t next_deadline_ = kNoDeadline;
    // Whether a parsed frame for `qp` is held (copied into held_), lost (the
    // hold queue full), or goes to the QP now.
    enum class Hold : std::uint8_t { no, held, lost };
    Hold hold(RoceQp& qp, const net::RocePacket& p, std::span<const std::uint8_t> frame) noexcept;
    // A looped-back frame (draining_) another member owns: forwarded, counted.
    bool to_sibling(std::span<const std::uint8_t> frame, std::uint64_t now_ns) noexcept;
    Family* family_ = nullptr;
    FrameRing loopback_;
    bool draining_ = false;
    FrameRing held_;
    bool releasing_ = false;
};

} // namespace rdmasim::datapath
