// LinkChannel: one direction of a link between two ports of one process.
#include <catch2/catch.hpp>

#include <poll.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "net/link_channel.hpp"

using namespace rdmasim::net;

namespace {

using Bytes = std::vector<std::uint8_t>;

std::unique_ptr<LinkChannel> make(std::size_t capacity = LinkChannel::kDefaultCapacity) {
    auto ch = LinkChannel::open("link rdmasim0 -> rdmasim1", capacity);
    REQUIRE(ch);
    return std::move(ch.value());
}

bool readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
}

} // namespace

TEST_CASE("a link hands over copies of sent frames in order, with the sender's time", "[net][link]") {
    auto ch = make();
    CHECK(ch->describe() == "link rdmasim0 -> rdmasim1");
    CHECK_FALSE(ch->exhausted());
    Frame f;
    CHECK_FALSE(ch->next(f));
    CHECK_FALSE(readable(ch->wait_fd()));

    Bytes a = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    const Bytes b(1500, 0xab);
    ch->send(a, 111);
    a.assign(a.size(), 0); // the sender's buffer is its own again at once
    ch->send(b, 222);
    CHECK(readable(ch->wait_fd()));

    REQUIRE(ch->next(f));
    CHECK(Bytes(f.data, f.data + f.len) == Bytes{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15});
    CHECK(f.ts_ns == 111);
    CHECK(f.fcs_len == 0);
    CHECK_FALSE(f.truncated());
    REQUIRE(ch->next(f));
    CHECK(Bytes(f.data, f.data + f.len) == b);
    CHECK(f.ts_ns == 222);
    CHECK_FALSE(ch->next(f));
    CHECK_FALSE(readable(ch->wait_fd())); // cleared once the queue is found empty
    CHECK(ch->counters().frames == 2);
    CHECK(ch->counters().bytes == 15 + 1500);
    CHECK(ch->overflow_drops() == 0);
}

TEST_CASE("a full link pauses its sender: frames wait in order, never over the frame being read",
          "[net][link]") {
    auto ch = make(4);
    for (std::uint8_t i = 0; i < 6; ++i) ch->send(Bytes(20, i), i);
    CHECK(ch->overflow_drops() == 0);
    CHECK(ch->backlog_counters()->queued == 2);
    CHECK(ch->flush() == 2); // still full
    Frame f;
    REQUIRE(ch->next(f));
    const std::uint8_t* held = f.data;
    CHECK(held[0] == 0);
    // The slot of the frame being read stays taken until the next next().
    CHECK(ch->flush() == 2);
    ch->send(Bytes(20, 9), 9); // behind the waiting frames, never past them
    CHECK(ch->backlog_counters()->queued == 3);
    CHECK(held[0] == 0);
    for (std::uint8_t want : {1, 2, 3}) {
        REQUIRE(ch->next(f));
        CHECK(f.data[0] == want);
    }
    CHECK(ch->flush() == 0); // room again: all three move
    for (std::uint8_t want : {4, 5, 9}) {
        REQUIRE(ch->next(f));
        CHECK(f.data[0] == want);
    }
    CHECK_FALSE(ch->next(f));
    CHECK(ch->counters().frames == 7);
    CHECK(ch->overflow_drops() == 0);
}

TEST_CASE("a link between two threads loses nothing and wakes its reader", "[net][link]") {
    auto ch = make(64);
    constexpr int kFrames = 20000;
    std::atomic<bool> done{false};
    std::thread sender([&] {
        for (int i = 0; i < kFrames; ++i) {
            (void)ch->flush(); // as the sender's port does between sends
            ch->send(Bytes(64, static_cast<std::uint8_t>(i)), static_cast<std::uint64_t>(i));
        }
        while (ch->flush() > 0) std::this_thread::yield();
        done = true;
    });
    std::uint64_t got = 0, last_ts = 0, out_of_order = 0;
    Frame f;
    for (;;) {
        const bool finished = done.load(); // read before the queue: nothing comes after
        if (ch->next(f)) {
            if (got != 0 && f.ts_ns <= last_ts) ++out_of_order;
            last_ts = f.ts_ns;
            ++got;
            continue;
        }
        if (finished) break;
        pollfd p{ch->wait_fd(), POLLIN, 0};
        ::poll(&p, 1, 5);
    }
    sender.join();
    CHECK(out_of_order == 0);
    CHECK(got == kFrames); // every frame delivered
    CHECK(ch->overflow_drops() == 0);
}
