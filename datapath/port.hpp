// The port: where frames enter and leave the HCA (datapath/README.md, "The
// port"). It composes what it holds, each a class of its own: the steering
// table and RSS (SteeringTable), the delay-drop service with the queues it
// services (DelayDrop), the L2 host with ARP, neighbours and RoCE send
// (L2Host), the injected faults it arms (FaultArming), and the RoCE
// transport (RocePort); it owns ingress (the per-frame pipeline), the clock
// and the port counters. Frame sources are pulled by the runtime (sim/),
// which calls ingress(); frame sinks attach here and get what programs send.
//
// The device layer registers and unregisters targets (queues, steering
// entries) as verbs create and destroy WQs, QPs and flows; the port never
// owns them. Locking: every member function but counters() and mutex()
// requires mutex() held by the caller.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>

#include "datapath/cm/agent.hpp"
#include "datapath/counters.hpp"
#include "datapath/delay_drop.hpp"
#include "datapath/fault_arming.hpp"
#include "datapath/l2_host.hpp"
#include "datapath/roce/port.hpp"
#include "datapath/rx_queue.hpp"
#include "datapath/steering.hpp"
#include "net/frame.hpp"
#include "net/frame_sink.hpp"

namespace rdmasim::datapath {

struct PortConfig {
    std::uint64_t delay_drop_timeout_ns = 100'000'000;
    bool delay_drop_rearm = true; // the driver re-arms delay drop after a timeout
    // A frame whose carried FCS is bad goes on (counted in fcs_bad) instead of
    // being dropped as fcs_errors, as a MAC does (caps.deliver_bad_fcs).
    bool deliver_bad_fcs = false;
};

class Port {
public:
    // The RoCE side's frames go out through the L2 host (RocePort::transmit).
    Port() {
        roce_.set_wire({.send = [](void* host, std::span<std::uint8_t> frame, std::uint64_t) noexcept {
                            static_cast<L2Host*>(host)->send_roce(frame); // at the port's clock
                        },
                        .context = &host_,
                        .congested = [](void* host) noexcept { return static_cast<L2Host*>(host)->congested(); },
                        .claim = [](void* host, const net::RocePath& path, std::size_t len) noexcept {
                            return static_cast<L2Host*>(host)->claim_roce(path, len);
                        },
                        .commit = [](void* host, std::size_t len) noexcept {
                            static_cast<L2Host*>(host)->commit_roce(len);
                        },
                        .unread = [](void* host) noexcept { return static_cast<L2Host*>(host)->unread(); }});
        roce_.set_gsi({.receive =
                           [](void* cm, const net::RocePacket& p) noexcept {
                               static_cast<cm::Agent*>(cm)->receive(p);
                           },
                       .context = cm_});
        host_.set_neighbour_listener(cm_);
    }
    ~Port() { delete cm_; }
    Port(const Port&) = delete;
    Port& operator=(const Port&) = delete;

    void configure(const PortConfig& config) noexcept {
        deliver_bad_fcs_ = config.deliver_bad_fcs;
        delay_drop_.configure({.timeout_ns = config.delay_drop_timeout_ns, .rearm = config.delay_drop_rearm});
    }
    [[nodiscard]] std::mutex& mutex() const noexcept { return mutex_; }
    [[nodiscard]] const RxCounters& counters() const noexcept { return counters_; }

    // The L2 host: ARP, neighbours, the sinks, and send_roce, the entry
    // point of what a RoCE transport sends. Under the port lock, as the port.
    [[nodiscard]] L2Host& host() noexcept { return host_; }

    // --- control side (set-up paths: may allocate) ---
    // Also reserves the queue's place in the failed-queue record, so that
    // recording a failure never allocates.
    void attach_queue(RxQueue& queue) { delay_drop_.attach_queue(queue); }
    // The queue stops being serviced; its held frames are discarded.
    void detach_queue(RxQueue& queue) noexcept { delay_drop_.detach_queue(queue, counters_); }
    // Also ends a failure the queue latched and drops it from the record.
    void set_queue_state(RxQueue& queue, QueueState state) noexcept {
        delay_drop_.set_queue_state(queue, state, counters_);
    }
    [[nodiscard]] std::size_t queue_count() const noexcept { return delay_drop_.queue_count(); }
    // A queue that stopped itself on a protection error (RxQueue::failed),
    // already flushed and stopped like QueueState::error, whose owner has not
    // been told yet; each is handed out once, oldest first. nullptr: none.
    [[nodiscard]] RxQueue* take_failed_queue() noexcept { return delay_drop_.take_failed_queue(); }
    // Inserts `entry` in match order and stamps its creation order. The entry
    // must outlive its registration.
    void add_rule(SteeringEntry& entry) { steering_.add_rule(entry); }
    void remove_rule(SteeringEntry& entry) noexcept { steering_.remove_rule(entry); }
    [[nodiscard]] std::size_t rule_count() const noexcept { return steering_.rule_count(); }
    void attach_sink(net::FrameSink& sink) { host_.attach_sink(sink); }
    void detach_sink(net::FrameSink& sink) noexcept { host_.detach_sink(sink); }

    // --- addresses and neighbours (datapath/README.md, "Neighbours") ---
    // The port's MAC and IP addresses; empties the ARP cache. Control path.
    void configure_addresses(const PortAddresses& addresses, const NeighbourConfig& config = {}) {
        host_.configure_addresses(addresses, config);
    }
    [[nodiscard]] const Neighbours& neighbours() const noexcept { return host_.neighbours(); }
    void set_neighbour_listener(NeighbourListener* listener) noexcept { host_.set_neighbour_listener(listener); }
    // A peer's MAC from the cache, or an ARP request on the port's sinks
    // (Neighbours::resolve), at the port's clock.
    [[nodiscard]] Resolution resolve(const net::Ipv4Address& ip) noexcept { return host_.resolve(ip); }

    // --- RoCE (datapath/README.md, "RoCE transport") ---
    // The QPs' transport. A frame from the wire addressed to the port (its
    // MAC, its IPv4 or IPv6 address, UDP 4791) goes there instead of the
    // steering: taken by a QP it counts as delivered, else as
    // roce_undeliverable (RocePortCounters say why).
    [[nodiscard]] RocePort& roce() noexcept { return roce_; }
    // The port's communication manager (datapath/cm/agent.hpp): QP1's MADs.
    [[nodiscard]] cm::Agent& cm() noexcept { return *cm_; }
    [[nodiscard]] const RocePort& roce() const noexcept { return roce_; }
    [[nodiscard]] const ArpWaitCounters& arp_wait_counters() const noexcept { return host_.arp_wait_counters(); }
    // A verb is about to call into a transport at `now_ns`: the port's clock
    // moves there (never back).
    void advance_clock(std::uint64_t now_ns) noexcept { now_ns_ = std::max(now_ns_, now_ns); }
    // The end of a verb's call into a transport: delivers the frames looped
    // back to QPs of this port, and those they cause, and hands the wire
    // what the call staged for it (a sink may batch frames until its
    // flush(): net/README.md, "Batches"). Call it after every call into a
    // transport, once it returned.
    void finish_call() noexcept {
        roce_.drain_loopback(now_ns_);
        tx_waiting_ = host_.flush_sinks();
    }

    // --- lossless links (datapath/README.md, "Lossless links") ---
    // The sinks' backlogs onto their wires as far as they take them, then
    // the requesters that waited for room, while there is room. Returns the
    // frames still waiting (the engine retries while there are some).
    // Part of service(); a verb that sent calls it too.
    std::size_t flush_wire() noexcept {
        tx_waiting_ = host_.flush_sinks();
        if (!roce_.held_empty()) { // responders first, as responses are never held
            roce_.release_held(now_ns_);
            tx_waiting_ = host_.flush_sinks();
        }
        if (!roce_.room_waiters()) return tx_waiting_;
        roce_.resume_waiting(now_ns_);
        if (!roce_.loopback_empty()) roce_.drain_loopback(now_ns_);
        tx_waiting_ = host_.flush_sinks(); // what the resumed requesters left waiting
        return tx_waiting_;
    }
    // Frames that waited for their wire at the last flush_wire().
    [[nodiscard]] std::size_t tx_waiting() const noexcept { return tx_waiting_; }
    // Requesters wait for the next burst only (RocePort::turn_waiters).
    [[nodiscard]] bool tx_ready() const noexcept { return roce_.turn_waiters(); }

    // --- frame side ---
    // One frame arriving at `now_ns`: steering, RSS, the queue's pipeline.
    // `exclude` names an owner that must not receive it (a sender's own QP).
    void ingress(const net::Frame& frame, std::uint64_t now_ns, const void* exclude = nullptr) noexcept {
        (void)ingress_burst({&frame, 1}, &now_ns, exclude);
    }
    // Frames arriving in order, frames[i] at at[i], each as by ingress(), in
    // one call: the first always, each later one only while it arrives before
    // next_deadline_ns() (delay drop, ARP retries, RoCE timers: the caller
    // services the device at that deadline, then goes on with the rest).
    // Returns how many entered: at least one of a non-empty span.
    std::uint32_t ingress_burst(std::span<const net::Frame> frames, const std::uint64_t* at,
                                const void* exclude = nullptr) noexcept;
    // A frame a program sends: looped back to matching entries of this port
    // (never the sender's own), then handed to every attached sink.
    void transmit(const net::Frame& frame, const void* sender) noexcept;
    // Time passes: held frames go to WQEs posted since, delay-drop waits
    // that reached the timeout are dropped (and delay drop is disarmed when
    // the configuration does not re-arm it).
    void service(std::uint64_t now_ns) noexcept { service(now_ns, ExpireNow{}); }
    // An engine burst: the ingress() and service() calls between these two,
    // under the port lock throughout. The completions the queues' CQs get
    // meanwhile become visible together at end_burst(), in order
    // (CqRing::set_batching), rather than one by one: a program polling on
    // another core no longer pulls the CQ's index line across per frame.
    void begin_burst() noexcept {
        delay_drop_.batch_completions(true);
        roce_.new_turn(); // the wire is read now: the requesters' next turn
    }
    void end_burst() noexcept { delay_drop_.batch_completions(false); }

    // --- injected faults (sim/README.md, "Fault injection") ---
    // The delay-drop timer of `queue` (nullptr: of every queue) expires now:
    // service() as if those queues' oldest held frame had waited the timeout
    // (held frames go to WQEs posted since, the rest are dropped as
    // delay_drop_timeouts, delay drop is disarmed unless re-armed). A queue
    // holding nothing has no timer running: nothing happens to it.
    void expire_delay_drop(const RxQueue* queue) noexcept {
        service(now_ns_, ExpireNow{.queue = queue, .all = queue == nullptr});
    }
    // The next `frames` frames steered to a queue (the frame's own outcome,
    // not copies) find that queue's ring empty (RxQueue::starve).
    void starve_next(std::uint32_t frames) noexcept { faults_.starve_next(frames); }
    // The next frame steered to a queue arms it: the next frame that queue
    // completes carries `status` (RxQueue::fail_next).
    void fail_next(std::uint8_t status) noexcept { faults_.fail_next(status); }

    // The latest time the port has seen (frames and services).
    [[nodiscard]] std::uint64_t now_ns() const noexcept { return now_ns_; }
    // The earliest time service() may have a timeout to fire, or UINT64_MAX.
    // O(RoCE QPs); never later than the truth (a release may leave it early: that
    // costs one needless service, no more).
    // Delay-drop timeouts, the neighbours' ARP retries and the RoCE QPs' timers alike.
    [[nodiscard]] std::uint64_t next_deadline_ns() const noexcept {
        return std::min({delay_drop_.next_deadline_ns(), host_.next_deadline_ns(),
                         roce_.next_deadline_ns(), cm_->next_deadline_ns()});
    }
    [[nodiscard]] std::uint64_t held_frames() const noexcept { return delay_drop_.held_frames(); }
    // The balance every frame keeps: frames = delivered + drops + held.
    [[nodiscard]] bool balanced() const noexcept {
        return counters_.frames.get() ==
               counters_.delivered.get() + counters_.drops_total() + held_frames();
    }
    // The attached queue completing as `qp_num`, or nullptr.
    [[nodiscard]] const RxQueue* find_queue(std::uint32_t qp_num) const noexcept {
        return delay_drop_.find_queue(qp_num);
    }
    // The first attached queue for which pred(queue) holds, or nullptr.
    template <class Pred> [[nodiscard]] const RxQueue* find_queue_if(Pred pred) const {
        return delay_drop_.find_queue_if(pred);
    }
    template <class Pred> [[nodiscard]] RxQueue* find_queue_if(Pred pred) { return delay_drop_.find_queue_if(pred); }
    [[nodiscard]] bool delay_drop_armed() const noexcept { return delay_drop_.armed(); }

private:
    // What a burst's frames did on the common path, counted once at its end
    // (three counters less to update per frame). Readers that take the port
    // lock, as the stats and the timeline do, see whole bursts.
    struct BurstTally {
        std::uint64_t bytes = 0;           // wire bytes of every frame that entered
        std::uint64_t delivered_bytes = 0; // byte_len of the deliveries below
        std::uint32_t delivered = 0;       // delivered with a good FCS (others: counted at once)
        bool deadlines_moved = false;      // a frame may have moved next_deadline_ns()
    };
    // ingress() of one frame; inline in ingress_burst's loop, the per-frame
    // path: the pipeline of the steps below (datapath/README.md, "Per-frame
    // order"), each inline too. A step that ends the frame returns false.
    [[gnu::always_inline]] inline void ingress_frame(const net::Frame& frame, std::uint64_t now_ns,
                                                     const void* exclude, BurstTally& tally) noexcept;
    // Steps 1-2: the capture is whole and holds an Ethernet header.
    [[gnu::always_inline]] inline bool check_capture(const net::Frame& frame) noexcept;
    // Step 3: a carried FCS matches.
    [[gnu::always_inline]] inline bool check_fcs(const net::Frame& frame) noexcept;
    // ARP from the wire: the host learns and answers; the frame goes on.
    [[gnu::always_inline]] inline void to_host(net::Bytes bytes, const net::ParsedFrame& parsed,
                                               std::uint64_t now_ns, BurstTally& tally) noexcept;
    // RoCE v2 to the port: the transport takes the frame (returns false).
    [[gnu::always_inline]] inline bool past_roce(net::Bytes bytes, const net::ParsedFrame& parsed,
                                                 std::uint64_t now_ns, BurstTally& tally) noexcept;
    // Step 4: each matching sniffer entry gets a copy.
    [[gnu::always_inline]] inline void copy_to_sniffers(const net::Frame& frame, const net::ParsedFrame& parsed,
                                                        const void* exclude) noexcept;
    // Step 5: the entry whose target takes the frame (DONT_TRAP copies on
    // the way), or nullptr: a steering miss.
    [[gnu::always_inline]] inline const SteeringEntry* steer(const net::Frame& frame, const net::ParsedFrame& parsed,
                                                             const void* exclude) noexcept;
    // Steps 7-17 on the queue RSS picked (step 6): the frame's one outcome,
    // counted by the port.
    [[gnu::always_inline]] inline void deliver_primary(RxQueue& queue, const net::Frame& frame,
                                                       const net::ParsedFrame& parsed, BurstTally& tally) noexcept;
    // Hands `frame` to `queue`; returns what became of it. Inline (with the
    // queue's receive): the frame's one delivery is the per-frame path.
    // Copies (sniffers, DONT_TRAP matches) go through deliver_copy, a call,
    // so that the path is compiled once.
    [[gnu::always_inline]] inline RxOutcome deliver(RxQueue& queue, const net::Frame& frame,
                                                    const net::ParsedFrame& parsed, Delivery how) noexcept;
    [[gnu::noinline]] RxOutcome deliver_copy(const Target& target, const net::Frame& frame,
                                             const net::ParsedFrame& parsed) noexcept;
    // service(); the timeouts `expire` names are reached now.
    void service(std::uint64_t now_ns, ExpireNow expire) noexcept;

    mutable std::mutex mutex_;
    RxCounters counters_; // frames = delivered + drops + held
    std::uint64_t now_ns_ = 0;
    bool deliver_bad_fcs_ = false; // PortConfig::deliver_bad_fcs
    std::size_t tx_waiting_ = 0;   // flush_wire()'s last answer
    FaultArming faults_;
    SteeringTable steering_;
    DelayDrop delay_drop_;
    RocePort roce_;
    L2Host host_{roce_, now_ns_};
    // Behind a pointer: the agent is polymorphic (it listens to the
    // neighbours), and the port must stay standard-layout (device/objects.hpp).
    // Owned, but not a std::unique_ptr: clang does not count libstdc++'s
    // unique_ptr as standard-layout (its deleter lives in a base class).
    cm::Agent* const cm_ = new cm::Agent(roce_, host_, now_ns_);
};

} // namespace rdmasim::datapath
