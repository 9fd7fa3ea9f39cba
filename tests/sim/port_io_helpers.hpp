// What the wire, link and tx-capture tests share: a program's context on a
// device named by its index, numbered frames, and frames sent on a
// raw-packet QP as a program sends them (ibv_post_send, signaled, the
// completion awaited).
#pragma once

#include <infiniband/verbs.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/device/verbs_helpers.hpp"

namespace rdmasim::test {

// A context and PD on device `rdmasimN`, whatever else is registered.
class NamedDevice {
public:
    explicit NamedDevice(unsigned index) {
        const std::string name = "rdmasim" + std::to_string(index);
        int n = 0;
        ibv_device** list = ibv_get_device_list(&n);
        REQUIRE(list != nullptr);
        for (int i = 0; i < n && ctx == nullptr; ++i)
            if (name == ibv_get_device_name(list[i])) ctx = ibv_open_device(list[i]);
        ibv_free_device_list(list);
        REQUIRE(ctx != nullptr);
        pd = ibv_alloc_pd(ctx);
        REQUIRE(pd != nullptr);
    }
    ~NamedDevice() {
        CHECK(ibv_dealloc_pd(pd) == 0);
        CHECK(ibv_close_device(ctx) == 0);
    }
    NamedDevice(const NamedDevice&) = delete;
    NamedDevice& operator=(const NamedDevice&) = delete;

    ibv_context* ctx = nullptr;
    ibv_pd* pd = nullptr;
};

// A raw-packet QP that sends: each frame is copied into a registered slot,
// posted signaled, and its send completion awaited.
class RawSender {
public:
    explicit RawSender(ibv_pd* pd) : qp_(pd), buf_(pd, 1) {}

    void send(const std::vector<std::uint8_t>& frame) {
        REQUIRE(frame.size() <= MrBuffer::kSlot);
        std::memcpy(const_cast<std::uint8_t*>(buf_.slot(0)), frame.data(), frame.size());
        ibv_sge sge = buf_.sge(0);
        sge.length = static_cast<std::uint32_t>(frame.size());
        ibv_send_wr wr{};
        wr.wr_id = sent_;
        wr.opcode = IBV_WR_SEND;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        ibv_send_wr* bad = nullptr;
        REQUIRE(ibv_post_send(qp_.qp, &wr, &bad) == 0);
        const auto done = drain(qp_.cq);
        REQUIRE(done.size() == 1);
        CHECK(done[0].status == IBV_WC_SUCCESS);
        CHECK(done[0].opcode == IBV_WC_SEND);
        ++sent_;
    }
    [[nodiscard]] ibv_qp* qp() const { return qp_.qp; }

private:
    RawQp qp_;
    MrBuffer buf_;
    std::uint64_t sent_ = 0;
};

// Ethernet to kDstMac, type 0x88b5, `payload` bytes of 0x5a with the number
// `i` in the first two: frames a test can tell apart on the other side.
inline std::vector<std::uint8_t> numbered_frame(unsigned i, std::size_t payload = 46) {
    std::vector<std::uint8_t> f(14 + payload, 0x5a);
    for (std::size_t k = 0; k < 6; ++k) {
        f[k] = kDstMac[k];
        f[6 + k] = kSrcMac[k];
    }
    f[12] = 0x88;
    f[13] = 0xb5;
    f[14] = static_cast<std::uint8_t>(i >> 8);
    f[15] = static_cast<std::uint8_t>(i);
    return f;
}

// Polls `rig` (and reposts) until `n` completions arrived or `timeout` passed.
inline std::vector<std::vector<std::uint8_t>> receive(ReceiveRig& rig, std::size_t n,
                                                      std::chrono::milliseconds timeout =
                                                          std::chrono::milliseconds(5000)) {
    std::vector<std::vector<std::uint8_t>> out;
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (out.size() < n && std::chrono::steady_clock::now() < until) {
        const auto got = rig.poll();
        for (const auto& c : got) {
            CHECK(c.status == IBV_WC_SUCCESS);
            out.emplace_back(c.bytes, c.bytes + c.byte_len);
            rig.repost(c.wr_id);
        }
        if (got.empty()) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return out;
}

} // namespace rdmasim::test
