// Internals of RocePeerHarness (roce_peer.hpp), shared by roce_peer.cpp (the
// verbs objects, the model of what is granted, the run), roce_peer_steps.cpp
// (decoding and carrying out steps) and roce_peer_checks.cpp (what the
// device sent).
// The model is the program's view: it changes only on what a verb returned
// or a completion said, never on the device's internals.
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "net/frame_sink.hpp"
#include "net/roce_frame.hpp"
#include "tests/fuzz/roce_peer.hpp"
#include "tests/fuzz/roce_peer_memory.hpp"
#include "tests/support/sim_fixture.hpp"

namespace rdmasim::test::roce_peer {

inline constexpr int kQps = 4; // RC, UC, UD, XRC TGT (its receives: the XRC SRQ)
inline constexpr int kRc = 0, kUc = 1, kUd = 2, kXrc = 3;
inline constexpr int kMrSlots = 4;
inline constexpr std::uint32_t kMtu = 256;
inline constexpr std::uint32_t kQkey = 0x11111111;
inline constexpr std::uint32_t kPeerQpn = 0xabc00;

// What the port sends, kept for the step's checks.
struct CaptureSink final : net::FrameSink {
    std::vector<std::vector<std::uint8_t>> frames;
    void send(std::span<const std::uint8_t> frame, std::uint64_t) noexcept override {
        frames.emplace_back(frame.begin(), frame.end());
    }
};

struct MrModel {
    ibv_mr* mr = nullptr;  // null: deregistered (or never)
    std::uint32_t key = 0; // current, or the last one (dead) when mr is null
    std::uint8_t* addr = nullptr;
    std::size_t len = 0;
    int access = 0;
    bool foreign = false; // moved to the foreign PD by rereg
};
struct MwModel {
    ibv_mw* mw = nullptr;
    ibv_mw_type type = IBV_MW_TYPE_1;
    std::uint32_t key = 0, prev_key = 0;
    bool bound = false;
    int mr = 0;               // the MR slot it was bound through
    std::uint32_t mr_key = 0; // and that MR's key then (a new MR in the slot grants nothing)
    std::uint8_t* addr = nullptr;
    std::size_t len = 0;
    int access = 0;
    std::uint32_t qpn = 0; // type 2: the QP it serves
};
struct QpModel {
    ibv_qp* qp = nullptr;
    int access = 0;        // its qp_access_flags
    bool open = false;     // not moved to ERR by us, not destroyed
    std::uint32_t psn = 0; // the peer's next PSN toward it
    // What WRITEs (with FIRST or ONLY) and atomics to it named with a key
    // that granted it: a write must land in one of these too (no rkey mix-up).
    std::vector<std::pair<std::uint8_t*, std::size_t>> targets;
    std::vector<std::uint32_t> atomic_psns; // PSNs of atomics sent with a granting key
};
struct RecvModel {
    std::uint64_t wr_id;
    int qp; // kXrc: posted on the SRQ
    std::uint8_t* addr;
    std::uint32_t len;
    std::uint32_t lkey;
};
// What a frame step asked, for the checks of what the device answered.
struct Request {
    int qp = -1;
    std::uint8_t op = 0; // RC numbering (without the transport prefix)
    std::uint32_t psn = 0, rkey = 0, dma_len = 0;
    std::uint64_t va = 0;
    bool readable = false;   // the model lets rkey read [va, va + dma_len) on qp
    bool fresh = false;      // no atomic was sent at its PSN before: not a duplicate
    bool orig_known = false; // an atomic's 8 bytes before it ran (host order) in orig
    std::uint64_t orig = 0;
};

inline constexpr const char* kQpNames[kQps] = {"RC", "UC", "UD", "XRC"};

// The kind of access a frame needs: what it may change.
enum class Need : std::uint8_t { none, recv, write, atomic };

} // namespace rdmasim::test::roce_peer

namespace rdmasim::test {

struct RocePeerHarness::Impl {
    Impl();
    ~Impl();
    std::string run(std::span<const std::uint8_t> input);

    // --- objects (roce_peer.cpp) ---
    void setup(std::uint8_t config);
    void teardown();
    bool create_qp(int q); // created and walked to RTS
    void destroy_qp(int q);
    void drain_cq(); // applies every completion to the model
    // The status of the completion of `wr_id` on the send side, polling for it.
    int wait_send(std::uint64_t wr_id);

    // --- model ---
    [[nodiscard]] bool has(int q, int right) const;
    // What a frame of kind `need` on QP q may change.
    void grants(roce_peer::Mask& m, int q, roce_peer::Need need) const;
    void all_grants(roce_peer::Mask& m) const;
    // The model lets `rkey` give QP q the access `right` (IBV_ACCESS_REMOTE_*) to [va, va + len).
    [[nodiscard]] bool granted(int q, std::uint32_t rkey, std::uint64_t va, std::uint32_t len,
                               int right) const;

    // --- steps (roce_peer_steps.cpp): "" or a finding ---
    // Carries out step `index` (its bytes `s`): `allowed` gets what it may
    // change, `what` names it.
    std::string step(int index, std::span<const std::uint8_t, RocePeerHarness::kStepLen> s,
                     roce_peer::Mask& allowed, const char*& what);
    std::string frame_step(int index, std::span<const std::uint8_t, RocePeerHarness::kStepLen> s,
                           roce_peer::Mask& allowed, const char*& what);
    void verb_step(std::span<const std::uint8_t, RocePeerHarness::kStepLen> s, const char*& what);
    std::string check_sent(int index, const roce_peer::Request& req);
    void trace_step(int index, const char* what) const;
    std::uint32_t pick_key(std::uint8_t sel, std::uint8_t*& lo, std::size_t& len) const;

    SimFixture fx;
    roce_peer::GuardedAreas mem;
    roce_peer::CaptureSink sink;
    int xrcd_fd = -1;
    ibv_xrcd* xrcd = nullptr;
    // Per input:
    ibv_pd* foreign_pd = nullptr;
    ibv_cq* cq = nullptr;
    ibv_srq* srq = nullptr;
    std::uint32_t srqn = 0;
    ibv_mr* foreign_mr = nullptr;
    std::array<roce_peer::QpModel, roce_peer::kQps> qps{};
    std::array<roce_peer::MrModel, roce_peer::kMrSlots> mrs{};
    std::array<roce_peer::MwModel, 2> mws{}; // a type 1 and a type 2 window
    std::vector<roce_peer::RecvModel> recvs;
    std::vector<std::pair<std::uint64_t, int>> send_done; // (wr_id, status) polled
    std::uint64_t next_wr = 1;
    std::uint8_t next_key_byte = 1;
    std::uint32_t start_psn = 0x100;
    std::vector<std::uint8_t> frame;        // the frame being built
    roce_peer::Mask before, after, allowed; // grants before and after a step, the step's own
    bool trace = std::getenv("ROCE_PEER_TRACE") != nullptr;
    std::vector<std::string> names; // names[i]: what step i was
    const char* why_sent = "";      // check_sent's reason, for the finding's class
    std::vector<std::string> known; // ROCE_PEER_KNOWN: classes to tolerate (roce_peer.cpp)
};

} // namespace rdmasim::test
