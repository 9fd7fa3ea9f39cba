#include "device/recv.hpp"

#include <mutex>

#include "device/device.hpp"

namespace rdmasim::device {

int post_recv_list(datapath::RecvRing& ring, std::uint32_t max_sge, std::uint32_t max_post,
                   ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept {
    for (; wr != nullptr; wr = wr->next) {
        if (wr->num_sge < 0 || static_cast<std::uint32_t>(wr->num_sge) > max_sge ||
            (wr->num_sge > 0 && wr->sg_list == nullptr)) {
            *bad_wr = wr;
            return EINVAL;
        }
        if (ring.full() || ring.size() >= max_post) {
            *bad_wr = wr;
            return ENOMEM;
        }
        datapath::Wqe& wqe = ring.next_wqe();
        datapath::Sge* sges = ring.next_sges();
        wqe.wr_id = wr->wr_id;
        wqe.num_sge = 0;
        wqe.total_len = 0;
        for (int i = 0; i < wr->num_sge; ++i) {
            const ibv_sge& s = wr->sg_list[i];
            if (s.length == 0) continue; // zero-length SGEs are skipped
            sges[wqe.num_sge++] = {s.addr, s.length, s.lkey};
            wqe.total_len += s.length;
        }
        ring.publish();
    }
    return 0;
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
