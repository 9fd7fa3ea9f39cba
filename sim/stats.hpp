// Counters as JSON and as a human table: per port and per receive queue.
#pragma once

#include <nlohmann/json.hpp>

#include "datapath/counters.hpp"
#include "sim/faulty_source.hpp"

namespace rdmasim::sim {

// {"frames", "bytes", "delivered", "delivered_bytes", "drops": {reason: n}, ...}
[[nodiscard]] nlohmann::json counters_json(const datapath::RxCounters& c);
// The drops object alone: every reason, zero or not, so the schema is stable.
[[nodiscard]] nlohmann::json drops_json(const datapath::RxCounters& c);
// Faults injected, by kind in the plan's spelling: every kind, zero or not.
[[nodiscard]] nlohmann::json faults_json(const FaultCounts& c);

} // namespace rdmasim::sim
