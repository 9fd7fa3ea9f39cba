#include "device/recv.hpp"

#include <algorithm>
#include <mutex>

#include "device/device.hpp"

namespace rdmasim::device {

int post_recv_list(datapath::RecvRing& ring, std::uint32_t max_sge, std::uint32_t max_post,
                   ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept {
    // WQEs are filled past the head and published once, at the end: the ones
    // before a bad WR are posted, as verbs asks.
    const auto room = [&ring, max_post] { // free slots from the head on, within max_post
        const std::uint32_t free = ring.room();
        const std::uint32_t used = ring.capacity() - free;
        return used < max_post ? std::min(free, max_post - used) : 0u;
    };
    std::uint32_t n = 0, free = room();
    int err = 0;
    for (; wr != nullptr; wr = wr->next, ++n) {
        if (wr->num_sge < 0 || static_cast<std::uint32_t>(wr->num_sge) > max_sge ||
            (wr->num_sge > 0 && wr->sg_list == nullptr)) {
            err = EINVAL;
            break;
        }
        if (n == free && (free = room()) == n) { // unless the engine took some since
            err = ENOMEM;
            break;
        }
        datapath::Wqe& wqe = ring.wqe_at(n);
        datapath::Sge* sges = ring.sges_at(n);
        // The usual WR, one buffer: without the walk below (16 instructions a frame fewer).
        if (wr->num_sge == 1 && wr->sg_list[0].length != 0) [[likely]] {
            const ibv_sge& s = wr->sg_list[0];
            sges[0] = {s.addr, s.length, s.lkey};
            wqe = {wr->wr_id, 1, s.length};
            continue;
        }
        wqe.wr_id = wr->wr_id;
        wqe.num_sge = 0;
        wqe.total_len = 0;
        for (int i = 0; i < wr->num_sge; ++i) {
            const ibv_sge& s = wr->sg_list[i];
            if (s.length == 0) continue; // zero-length SGEs are skipped
            sges[wqe.num_sge++] = {s.addr, s.length, s.lkey};
            wqe.total_len += s.length;
        }
    }
    ring.publish(n);
    if (err != 0) *bad_wr = wr;
    return err;
}

int post_receive(Device& dev, RecvQueue& recv, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept {
    int err;
    bool in_error;
    {
        // in_error is read under the post lock, which a state change holds:
        // a move to error after this point flushes what we posted.
        std::lock_guard lock(recv.post_lock);
        err = post_recv_list(recv.rx.ring(), recv.max_sge, recv.rx.ring().capacity(), wr, bad_wr);
        in_error = recv.in_error;
    }
    if (in_error) {
        std::lock_guard port_lock(dev.port.mutex()); // lock order: port, then post
        std::lock_guard lock(recv.post_lock);
        set_rx_state(dev, recv, datapath::QueueState::error);
    }
    if (dev.hooks) dev.hooks->on_post(dev);
    return err;
}

} // namespace rdmasim::device
