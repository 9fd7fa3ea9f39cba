// Waiting, in a test, for state another thread produces. A loaded host (a
// sanitizer, the other tests) may give that thread little CPU, so a test
// waits for the state it reads, never for a fixed time; the bound is one no
// healthy run nears, so a lost event or a dead thread still fails.
#pragma once

#include <chrono>
#include <thread>

namespace rdmasim::test {

// Polls `done` until it returns true (then true) or `bound` has passed (then
// its last answer, read after the bound).
template <class Pred>
[[nodiscard]] bool wait_until(Pred&& done, std::chrono::milliseconds bound = std::chrono::seconds(10),
                              std::chrono::microseconds poll = std::chrono::microseconds(200)) {
    const auto until = std::chrono::steady_clock::now() + bound;
    while (!done()) {
        if (std::chrono::steady_clock::now() > until) return done();
        std::this_thread::sleep_for(poll);
    }
    return true;
}

} // namespace rdmasim::test
