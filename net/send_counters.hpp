// What a live sink did with the frames a port handed it: sent, or refused by
// the kernel without waiting (net/README.md, "Live interfaces"). Written by
// whichever thread sends (under the port lock), read by any: relaxed atomics.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <string>

namespace rdmasim::net {

struct SendCounters {
    std::atomic<std::uint64_t> frames{0};      // handed to the kernel
    std::atomic<std::uint64_t> bytes{0};
    std::atomic<std::uint64_t> would_block{0}; // EAGAIN / EWOULDBLOCK: socket buffer full
    std::atomic<std::uint64_t> no_buffers{0};  // ENOBUFS: the device queue is full
    std::atomic<std::uint64_t> too_big{0};     // EMSGSIZE: larger than the interface's MTU
    std::atomic<std::uint64_t> other{0};       // any other errno (ENETDOWN, ENXIO, ...)

    void sent(std::uint64_t len) noexcept {
        frames.fetch_add(1, std::memory_order_relaxed);
        bytes.fetch_add(len, std::memory_order_relaxed);
    }
    void failed(int err) noexcept {
        auto& c = err == EAGAIN || err == EWOULDBLOCK ? would_block
                  : err == ENOBUFS                    ? no_buffers
                  : err == EMSGSIZE                   ? too_big
                                                      : other;
        c.fetch_add(1, std::memory_order_relaxed);
    }
    [[nodiscard]] std::uint64_t failures() const noexcept {
        return would_block.load(std::memory_order_relaxed) +
               no_buffers.load(std::memory_order_relaxed) +
               too_big.load(std::memory_order_relaxed) + other.load(std::memory_order_relaxed);
    }
    // "12 frames sent (1500 bytes), 3 not sent: EAGAIN 1, ENOBUFS 0, EMSGSIZE 2, other 0".
    [[nodiscard]] std::string text() const {
        auto v = [](const std::atomic<std::uint64_t>& a) {
            return std::to_string(a.load(std::memory_order_relaxed));
        };
        std::string s = v(frames) + " frames sent (" + v(bytes) + " bytes)";
        if (failures() != 0)
            s += ", " + std::to_string(failures()) + " not sent: EAGAIN " + v(would_block) +
                 ", ENOBUFS " + v(no_buffers) + ", EMSGSIZE " + v(too_big) + ", other " + v(other);
        return s;
    }
};

} // namespace rdmasim::net
