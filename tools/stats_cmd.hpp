// `rdmasim stats FILE [--json]`: a --stats document (sim/README.md,
// "Statistics") as aligned tables, per device: the source, the port's
// counters, each receive queue's delivered and dropped frames, the non-zero
// drop reasons, what was sent, the faults injected by kind and the failed
// verbs.
#pragma once

#include <string>

namespace rdmasim::tools {

struct StatsOptions {
    std::string file;
    bool json = false; // print the document itself (after checking it)
};

// 0 printed; 1 the file is missing, unreadable, not JSON, of another schema
// or not shaped as schema 1 says (the message names the file and the field).
int run_stats(const StatsOptions& options);

} // namespace rdmasim::tools
