// Where the runtime hears of a receive queue leaving its port (sim/README.md,
// "Statistics"): a WQ or a raw-packet QP destroyed takes its counters with it,
// so the runtime that writes statistics when it stops plugs a StatsHook into
// the device and keeps what each queue counted. Without --stats the hook is
// null: one branch per destroy.
#pragma once

#include "datapath/rx_queue.hpp"

namespace rdmasim::device {

class StatsHook {
public:
    virtual ~StatsHook() = default;
    // `queue` has just left the port (its held frames counted as discarded):
    // its counters are final. Called under the port lock, from the thread
    // that destroys the WQ or QP; the queue's owner is still alive.
    virtual void queue_detached(const datapath::RxQueue& queue) noexcept = 0;
};

} // namespace rdmasim::device
