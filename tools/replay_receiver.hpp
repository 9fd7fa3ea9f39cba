// The verbs program behind `rdmasim replay`: what a DPDK-style receiver sets
// up on a raw-packet device. Device list -> context -> CQ-ex -> PD -> one
// buffer registered as an MR -> WQs (RDY, filled with WQEs) -> indirection
// tables -> one RSS QP and flow per hash class (as DPDK's mlx5 driver
// installs them).
//
// Every verbs object is owned by a handle whose deleter calls its destroy
// verb, so teardown runs in reverse order of set-up on every path: success,
// a failed set-up step, an exception. A destroy verb that fails is never
// ignored: close() returns it, and when only the destructor ran, it is
// printed to stderr.
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "net/huge_buffer.hpp"
#include "net/result.hpp"

namespace rdmasim::tools {

// The RSS hash input: which fields of a frame the Toeplitz hash covers.
struct HashInputs {
    bool src_ip = false;
    bool dst_ip = false;
    bool src_port = false;
    bool dst_port = false;
};

struct ReceiverSettings {
    std::uint32_t wqs = 4;      // receive WQs, 1..1024
    std::uint32_t ring = 256;   // WQEs per WQ
    std::uint32_t buf = 2048;   // bytes per WQE
    std::uint32_t wq_flags = 0; // IBV_WQ_FLAGS_* at creation
    HashInputs hash;
};

class Receiver {
public:
    // Opens the first device and sets everything up; on failure, what was set
    // up is torn down again and the error names the verb (and any destroy
    // verb that failed on the way back).
    [[nodiscard]] static Result<std::unique_ptr<Receiver>> open(const ReceiverSettings& settings);
    ~Receiver();
    Receiver(const Receiver&) = delete;
    Receiver& operator=(const Receiver&) = delete;

    // Tears down in reverse order of set-up. Every destroy verb runs, failed
    // or not; the error names each one that failed. Idempotent.
    Result<void> close();

    [[nodiscard]] ibv_cq_ex* cq() const noexcept { return cq_.get(); }
    [[nodiscard]] std::uint32_t wq_count() const noexcept {
        return static_cast<std::uint32_t>(wqs_.size());
    }
    [[nodiscard]] std::uint32_t wq_num(std::uint32_t wq) const noexcept { return wqs_[wq]->wq_num; }

    // A completion's wr_id names its buffer: the WQ in the high 32 bits, the
    // slot in the low ones (no division per frame: a 32-bit one by --ring
    // was the poll loop's longest latency).
    [[nodiscard]] static std::uint64_t wr_id_of(std::uint32_t wq, std::uint32_t slot) noexcept {
        return std::uint64_t{wq} << 32 | slot;
    }
    [[nodiscard]] static std::uint32_t wq_of(std::uint64_t wr_id) noexcept {
        return static_cast<std::uint32_t>(wr_id >> 32);
    }
    [[nodiscard]] static std::uint32_t slot_of(std::uint64_t wr_id) noexcept {
        return static_cast<std::uint32_t>(wr_id);
    }
    // Buffer wq * ring + slot.
    [[nodiscard]] const std::uint8_t* data(std::uint64_t wr_id) const noexcept {
        return mem_.data() + (std::size_t{wq_of(wr_id)} * settings_.ring + slot_of(wr_id)) * stride_;
    }
    // Where buffer k starts: k * stride. The stride is `buf` rounded up to
    // an odd number of cache lines: at a power of two (2 KiB) every buffer's
    // first line fell in the same few cache sets, and each frame's write
    // missed the caches that held the others (DPDK's mbufs are 2176 bytes
    // apart for the same reason).
    [[nodiscard]] static std::size_t stride_of(std::uint32_t buf) noexcept {
        const std::size_t lines = (std::size_t{buf} + 63) / 64;
        return 64 * (lines | 1);
    }
    // Posts buffer `slot` of WQ `wq` (again).
    Result<void> post(std::uint32_t wq, std::uint32_t slot) { return post_chain(wq, {&slot, 1}); }
    // Posts buffers `slots` (at most kMaxChain) of WQ `wq` in that order,
    // as one chain of work requests: one ibv_post_wq_recv.
    static constexpr std::size_t kMaxChain = 64;
    Result<void> post_chain(std::uint32_t wq, std::span<const std::uint32_t> slots);
    // The WQs hold frames for WQEs (IBV_WQ_FLAGS_DELAY_DROP).
    [[nodiscard]] bool delay_drop() const noexcept {
        return (settings_.wq_flags & IBV_WQ_FLAGS_DELAY_DROP) != 0;
    }

private:
    // post_chain's work requests, built in place (no allocation per call).
    std::array<ibv_sge, kMaxChain> chain_sges_{};
    std::array<ibv_recv_wr, kMaxChain> chain_wrs_{};
    // Destroy verbs, one overload per object type; a failure is recorded in
    // `failures` (the Receiver's, declared before every handle, so it outlives them).
    struct Destroy {
        std::vector<Error>* failures; // no initializer: Owned<T> needs Destroy{} here
        // ibv_close_device(3): 0, or -1 with errno. The others: 0 or an errno value.
        void operator()(ibv_context* c) const noexcept {
            report("ibv_close_device", ibv_close_device(c) == 0 ? 0 : errno);
        }
        void operator()(ibv_cq_ex* cq) const noexcept {
            report("ibv_destroy_cq", ibv_destroy_cq(ibv_cq_ex_to_cq(cq)));
        }
        void operator()(ibv_pd* pd) const noexcept { report("ibv_dealloc_pd", ibv_dealloc_pd(pd)); }
        void operator()(ibv_mr* mr) const noexcept { report("ibv_dereg_mr", ibv_dereg_mr(mr)); }
        void operator()(ibv_wq* wq) const noexcept { report("ibv_destroy_wq", ibv_destroy_wq(wq)); }
        void operator()(ibv_rwq_ind_table* t) const noexcept {
            report("ibv_destroy_rwq_ind_table", ibv_destroy_rwq_ind_table(t));
        }
        void operator()(ibv_qp* qp) const noexcept { report("ibv_destroy_qp", ibv_destroy_qp(qp)); }
        void operator()(ibv_flow* f) const noexcept {
            report("ibv_destroy_flow", ibv_destroy_flow(f));
        }
        void report(const char* verb, int err) const noexcept;
    };
    template <class T> using Owned = std::unique_ptr<T, Destroy>;
    // One hash class: its RSS QP and the flow that steers to it (the flow is
    // declared last, so it goes first).
    struct HashClass {
        Owned<ibv_qp> qp;
        Owned<ibv_flow> flow;
    };

    explicit Receiver(const ReceiverSettings& settings) : settings_(settings) {}
    // Takes what a create verb returned into `owner`; nullptr is an error naming the verb.
    template <class T> Result<void> own(Owned<T>& owner, T* object, const char* verb);
    Result<void> set_up();
    Result<void> create_wqs();
    Result<void> create_hash_classes();
    void tear_down() noexcept;

    ReceiverSettings settings_;
    std::size_t stride_ = 0; // bytes from one buffer to the next (stride_of)
    bool closed_ = false;
    std::vector<Error> failures_; // destroy verbs that failed, "verb: reason"
    // In order of set-up; tear_down() walks this list backwards.
    Owned<ibv_context> ctx_;
    Owned<ibv_cq_ex> cq_;
    Owned<ibv_pd> pd_;
    net::HugeBuffer mem_; // every WQE's buffer, registered as mr_
    Owned<ibv_mr> mr_;
    std::vector<Owned<ibv_wq>> wqs_;
    Owned<ibv_rwq_ind_table> table_;     // over every WQ
    Owned<ibv_rwq_ind_table> one_entry_; // WQ 0 only: frames with no hash class
    std::vector<HashClass> classes_;
};

} // namespace rdmasim::tools
