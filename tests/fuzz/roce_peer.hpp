// A hostile RoCE v2 peer against RC, UC, UD and XRC target QPs of one
// emulated device (inline engine), driven through the verbs API as a program
// would: the engine of fuzz_roce_peer and of its regression tests.
//
// Input: byte 0 configures (bits 0-2: the RC QP lacks remote WRITE / READ /
// ATOMIC; bits 3-4: the XRC TGT QP lacks WRITE / READ; bit 5: the UC QP
// lacks WRITE; bit 7: receive PSNs start just below the 24-bit wrap), then
// steps of kStepLen bytes, at most kMaxSteps. A step is a hand-built frame
// injected at the port (valid ICRC; opcode, PSN, rkey, VA, length and
// payload from its bytes), or a verb: post_recv, dereg_mr, reg_mr,
// rereg_mr, bind_mw (type 1 and 2), LOCAL_INV, dealloc / alloc_mw, modify to
// ERR, destroy and re-create a QP (roce_peer.cpp, "Steps").
//
// Invariants checked after every step (a broken one is the finding run()
// returns):
// * no byte of the areas (roce_peer_memory.hpp) changed unless the step was a
//   frame and the model grants that byte for the frame's kind on its QP: a
//   live MR or bound window with the right, on a QP with the right, or a
//   posted receive buffer for a SEND; every other byte is a canary;
// * memory a verb revoked is refilled by the program and never changes again;
// * a READ response carries only bytes of memory the request's rkey made
//   readable, and exactly those bytes; an atomic ACK comes only for an
//   atomic the model granted, with the memory's value before it ran.
// The PROT_NONE guard pages turn a wild copy into a crash. A finding ends
// with its class ("frame to RC, opcode 0x08 after ibv_dereg_mr", "... outside its
// grants", "sent: ..."); ROCE_PEER_KNOWN="a;b" tolerates the
// classes containing a or b, to look past a known bug. ROCE_PEER_TRACE=1
// prints every step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace rdmasim::test {

class RocePeerHarness {
public:
    static constexpr std::size_t kStepLen = 8;
    static constexpr std::size_t kMaxSteps = 48;

    // One device, its guarded areas, an XRC domain; the peer in the ARP cache.
    RocePeerHarness();
    ~RocePeerHarness();
    RocePeerHarness(const RocePeerHarness&) = delete;
    RocePeerHarness& operator=(const RocePeerHarness&) = delete;

    // Runs one input on fresh verbs objects (all destroyed before it
    // returns): "" when every invariant held, else what broke, naming the step.
    [[nodiscard]] std::string run(std::span<const std::uint8_t> input);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace rdmasim::test
