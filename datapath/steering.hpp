// The port's steering table and RSS dispatch (datapath/README.md, "The
// port"): the entries by kind and priority, filed by protocol class, the
// sniffers, and the walk that finds a frame's primary entry and its DONT_TRAP
// copies. The walk is inline (header): it is on the per-frame path.
//
// The device layer registers and unregisters entries (ibv_create_flow,
// ibv_destroy_flow); the table never owns them. Locking: the port's mutex.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "datapath/flow_rule.hpp"
#include "datapath/rss.hpp"
#include "net/frame.hpp"

namespace rdmasim::datapath {

class RxQueue;

// Where a steering entry sends the frames it matches: one receive queue, or
// an RSS group that picks one. Exactly one of the two is set.
struct Target {
    RxQueue* queue = nullptr;
    const RssGroup* rss = nullptr;

    // RSS dispatch: the queue that gets `frame` (datapath/README.md, "RSS").
    [[gnu::always_inline]] [[nodiscard]] RxQueue& pick(net::Bytes frame,
                                                       const net::ParsedFrame& parsed) const noexcept {
        return queue ? *queue : rss->pick(frame, parsed);
    }
};

// verbs' flow attribute types, in the order they are matched (mlx5 keeps the
// defaults in later tables). Sniffers are not matched in order: each gets a copy.
enum class RuleKind : std::uint8_t { normal, mc_default, all_default, sniffer };

struct SteeringEntry {
    FlowRule rule;
    CompiledRule compiled; // of `rule`, set by add_rule: what a frame's parse decides
    Target target;
    RuleKind kind = RuleKind::normal;
    std::uint16_t priority = 0;  // lower first, within a kind
    // IBV_FLOW_ATTR_FLAGS_DONT_TRAP: the target gets the frame and the frame
    // goes on to the entries after this one. Ranks before the trapping
    // entries of its priority (mlx5: ib_prio_to_core_prio).
    bool dont_trap = false;
    const void* owner = nullptr; // who receives (a QP): never gets its own sends back
    std::uint64_t seq = 0;       // creation order, set by add_rule
};

class SteeringTable {
public:
    // Inserts `entry` in match order and stamps its creation order. The entry
    // must outlive its registration. Control path: may allocate.
    void add_rule(SteeringEntry& entry);
    void remove_rule(SteeringEntry& entry) noexcept;
    [[nodiscard]] std::size_t rule_count() const noexcept { return rules_.size() + sniffers_.size(); }

    // Calls copy(entry) for every sniffer entry matching the frame, in
    // order. `exclude` names an owner whose entries are skipped (a sender's
    // own QP; nullptr: none).
    template <class Copy>
    [[gnu::always_inline]] void each_sniffer(net::Bytes bytes, const net::ParsedFrame& parsed,
                                             const void* exclude, Copy&& copy) const noexcept {
        for (const SteeringEntry* e : sniffers_)
            if (eligible(e, exclude) && compiled_matches(e->compiled, e->rule, bytes, parsed)) copy(*e);
    }

    // The walk in match order: the entry whose delivery is the frame's one
    // outcome, or nullptr (a steering miss). A DONT_TRAP entry's target gets
    // the frame and the walk goes on: the outcome is the trapping entry's,
    // or with none the last DONT_TRAP entry's; each other DONT_TRAP match is
    // handed to copy(entry) (counted by its queue only, as a sniffer's), when
    // the next match is found, knowing by then that it was not the last.
    template <class Copy>
    [[gnu::always_inline]] [[nodiscard]] const SteeringEntry*
    walk(net::Bytes bytes, const net::ParsedFrame& parsed, const void* exclude, Copy&& copy) const noexcept {
        const SteeringEntry* pending = nullptr; // a DONT_TRAP match not delivered yet
        // Only the entries whose protocols the frame has: the rest cannot match.
        for (const SteeringEntry* e : by_class_[protocol_class(parsed.l3, parsed.l4)]) {
            if (!eligible(e, exclude) || (e->compiled.masked && !flow_matches(e->rule, bytes, parsed)))
                continue;
            if (pending != nullptr) [[unlikely]]
                copy(*pending);
            pending = nullptr;
            if (e->dont_trap) [[unlikely]] {
                pending = e;
                continue;
            }
            return e;
        }
        return pending;
    }

private:
    static constexpr std::size_t kProtocolClasses = 9; // L3Kind x L4Kind

    // A frame's protocol class: its L3 and L4 kinds (an IP fragment's parse
    // has L4 none: compiled_matches' fragment check holds by construction).
    static constexpr std::size_t protocol_class(net::L3Kind l3, net::L4Kind l4) noexcept {
        return static_cast<std::size_t>(l3) * 3 + static_cast<std::size_t>(l4);
    }
    // The sender's own entries never see its frame (exclude is null for
    // frames from a source: nothing is excluded).
    [[gnu::always_inline]] static bool eligible(const SteeringEntry* e, const void* exclude) noexcept {
        return exclude == nullptr || e->owner != exclude;
    }

    std::vector<SteeringEntry*> rules_; // NORMAL / defaults, in match order
    // rules_ split by the protocols a frame's parse finds (protocol_class):
    // each list holds, in match order, the entries whose compiled L3 and L4
    // requirements such a frame meets, so the walk skips the rest unread.
    std::array<std::vector<SteeringEntry*>, kProtocolClasses> by_class_;
    std::vector<SteeringEntry*> sniffers_; // each gets a copy
    std::uint64_t next_seq_ = 0;
};

} // namespace rdmasim::datapath
