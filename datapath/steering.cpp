#include "datapath/steering.hpp"

#include <algorithm>

namespace rdmasim::datapath {

namespace {

// Match order (datapath/README.md, "The port"): NORMAL before MC_DEFAULT
// before ALL_DEFAULT; within a kind, lower priority value first; within a
// priority, DONT_TRAP entries first (mlx5 puts a DONT_TRAP rule of priority p
// at core priority 2p, a trapping one at 2p + 1: ib_prio_to_core_prio in the
// kernel's drivers/infiniband/hw/mlx5/fs.c); then creation order.
bool before(const SteeringEntry* a, const SteeringEntry* b) noexcept {
    if (a->kind != b->kind) return a->kind < b->kind;
    if (a->priority != b->priority) return a->priority < b->priority;
    if (a->dont_trap != b->dont_trap) return a->dont_trap;
    return a->seq < b->seq;
}

// Whether a frame of class (l3, l4) meets `c`'s protocol requirements (the
// first two checks of compiled_matches).
bool meets(const CompiledRule& c, net::L3Kind l3, net::L4Kind l4) noexcept {
    return (c.l3 == net::L3Kind::none || c.l3 == l3) && (c.l4 == net::L4Kind::none || c.l4 == l4);
}

// Room for one more entry, growing geometrically (reserve alone would not).
void room_for_one(std::vector<SteeringEntry*>& list) {
    if (list.size() == list.capacity()) list.reserve(std::max<std::size_t>(8, 2 * list.capacity()));
}

// Calls f(l3, l4) for every protocol class.
template <class F> void each_class(F&& f) {
    for (auto l3 : {net::L3Kind::none, net::L3Kind::ipv4, net::L3Kind::ipv6})
        for (auto l4 : {net::L4Kind::none, net::L4Kind::tcp, net::L4Kind::udp}) f(l3, l4);
}

} // namespace

void SteeringTable::add_rule(SteeringEntry& entry) {
    const auto insert = [&entry](std::vector<SteeringEntry*>& list) {
        list.insert(std::upper_bound(list.begin(), list.end(), &entry, before), &entry);
    };
    entry.compiled = compile(entry.rule);
    if (entry.kind == RuleKind::sniffer) {
        entry.seq = next_seq_++;
        insert(sniffers_);
        return;
    }
    // Room in every list first, so that no list changes unless all do.
    room_for_one(rules_);
    each_class([&](net::L3Kind l3, net::L4Kind l4) {
        if (meets(entry.compiled, l3, l4)) room_for_one(by_class_[protocol_class(l3, l4)]);
    });
    entry.seq = next_seq_++;
    insert(rules_);
    each_class([&](net::L3Kind l3, net::L4Kind l4) {
        if (meets(entry.compiled, l3, l4)) insert(by_class_[protocol_class(l3, l4)]);
    });
}

void SteeringTable::remove_rule(SteeringEntry& entry) noexcept {
    std::erase(rules_, &entry);
    for (auto& list : by_class_) std::erase(list, &entry);
    std::erase(sniffers_, &entry);
}

} // namespace rdmasim::datapath
