// A verb run on a thread of its own, for tests that check that a call blocks
// (ibv_destroy_cq waiting for an ack) and then returns. Bounded: a test asks
// finished_within(), it never waits without a limit, so a call that never
// returns fails the test instead of hanging the suite.
#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <thread>
#include <utility>

namespace rdmasim::test {

class Background {
public:
    explicit Background(std::function<int()> call) {
        std::packaged_task<int()> task(std::move(call));
        result_ = task.get_future();
        thread_ = std::thread(std::move(task));
    }
    ~Background() {
        // A call still blocked after its test gave up on it stays blocked: leave
        // it (the test has failed already) rather than hang the suite on join().
        if (!result_.valid() || finished_within(std::chrono::milliseconds(0)))
            thread_.join();
        else
            thread_.detach();
    }
    Background(const Background&) = delete;
    Background& operator=(const Background&) = delete;

    // True once the call has returned; waits at most `limit` for it.
    [[nodiscard]] bool finished_within(std::chrono::milliseconds limit) const {
        return result_.wait_for(limit) == std::future_status::ready;
    }
    // The call's return value; only after finished_within() said true.
    [[nodiscard]] int result() {
        if (result_.valid()) value_ = result_.get();
        return value_;
    }

private:
    std::future<int> result_;
    int value_ = -1;
    std::thread thread_;
};

// How long a call that must block is watched before the test calls it blocked,
// and how long one that must return is given.
inline constexpr std::chrono::milliseconds kStillBlocked{100};
inline constexpr std::chrono::milliseconds kReturns{10'000};

} // namespace rdmasim::test
