// `rdmasim replay`'s poll loop (tools/replay.cpp runs it once the receiver
// is set up): polls the CQ, writes the capture, shows the first frames,
// re-posts the WQEs, and tells when the capture is done.
#pragma once

#include <infiniband/verbs.h>

#include <algorithm>
#include <array>
#include <cstdint>

#include "net/pcap_writer.hpp"
#include "sim/simulator.hpp"
#include "tools/replay.hpp"
#include "tools/replay_html.hpp"
#include "tools/replay_receiver.hpp"
#include "tools/replay_stop.hpp"

namespace rdmasim::tools {

// What the completions said.
struct Tally {
    std::uint64_t completions = 0;
    std::uint64_t errors = 0;
    std::array<std::uint64_t, 64> statuses{}; // completions by ibv_wc_status (the last: any larger)

    void count(ibv_wc_status s) noexcept {
        ++statuses[std::min<std::size_t>(static_cast<std::size_t>(s), statuses.size() - 1)];
    }
    [[nodiscard]] StatusCounts status_counts() const {
        StatusCounts out;
        for (std::size_t s = 0; s < statuses.size(); ++s)
            if (statuses[s] != 0)
                out.emplace_back(s + 1 < statuses.size() ? ibv_wc_status_str(static_cast<ibv_wc_status>(s))
                                                         : "other",
                                 statuses[s]);
        return out;
    }
};

// Polls, captures, shows and re-posts until the capture is done: the source
// drained or stopped, nothing held, and the CQ empty twice in a row. Throws
// ReplayFailure (tools/replay_fail.hpp) when a re-post fails.
Tally receive(const ReplayOptions& o, sim::Simulator& sim, Receiver& rx, net::PcapWriter* writer,
              ReplayStop& stop);

} // namespace rdmasim::tools
