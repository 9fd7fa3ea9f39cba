// The roles a QP plays, each with its own state and its own verbs, chosen
// at create (device/README.md, "Raw-packet QPs", "Indirection tables and RSS
// QPs", "RC, UC and UD queue pairs"):
//
//   RawQp  a plain raw-packet QP: its own receive queue and a send queue of
//          frames (qp_raw.cpp);
//   RssQp  a raw-packet QP that hashes into an indirection table's WQs
//          (qp_rss.cpp);
//   IbQp   an RC, UC, UD or XRC QP: the RoCE transport (qp_ib*.cpp).
//
// Each is a Qp (device/objects.hpp) first, so the ibv_qp a program holds
// converts back with from_verbs(), and from there to the role with the
// role's own cast (static_cast: a Qp is only ever created as one of these).
// qp.cpp's verbs call the role through Qp::ops and never ask which role a
// QP plays.
#pragma once

#include <cstdint>
#include <vector>

#include "datapath/port.hpp"
#include "datapath/rss.hpp"
#include "device/objects.hpp"

namespace rdmasim::device {

// A role's verbs. qp.cpp has checked the arguments for NULL, the injected
// faults, and for destroy that no flow names the QP.
struct QpOps {
    int (*modify)(Qp& qp, ibv_qp_attr& attr, int mask) noexcept;
    void (*query)(Qp& qp, ibv_qp_attr& attr, ibv_qp_init_attr& init) noexcept;
    int (*destroy)(Qp& qp) noexcept;
    int (*post_send)(Qp& qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) noexcept;
    int (*post_recv)(Qp& qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept;
    // The steering target of a flow naming the QP; left empty (nullptr),
    // ibv_create_flow on the QP is EINVAL.
    datapath::Target (*flow_target)(Qp& qp) noexcept;
};

struct RawQp : Qp {
    Cq* recv_cq = nullptr;
    Cq* send_cq = nullptr;
    std::uint32_t max_send_wr = 0;
    std::uint32_t max_send_sge = 1;
    std::uint32_t max_inline = 0;
    bool sq_sig_all = false;
    // The send queue's frame buffer (caps.max_raw_frame bytes, allocated at
    // creation: ibv_post_send never allocates), and the lock that lets one
    // thread at a time build frames in it, as mlx5 serialises its SQ.
    SpinLock send_lock;
    std::vector<std::uint8_t> send_buf;
    RecvQueue recv; // also guards the QP state (post lock)
};

struct RssQp : Qp {
    IndTable* table = nullptr;
    datapath::RssGroup rss_group; // the steering target its flows name
};

// RC, UC, UD, XRC INI and TGT: the transport (which holds the send queue),
// the receive queue (unused with an SRQ), the SRQ. The transport's
// attributes come from Qp::attr (set by ibv_modify_qp).
struct IbQp : Qp {
    Cq* recv_cq = nullptr; // XRC TGT QPs have no CQs
    Cq* send_cq = nullptr;
    std::uint32_t max_send_wr = 0;
    std::uint32_t max_send_sge = 1;
    std::uint32_t max_inline = 0;
    bool sq_sig_all = false;
    bool block_self_mcast = false;    // IBV_QP_CREATE_BLOCK_SELF_MCAST_LB
    QpTransport* transport = nullptr; // the RoCE transport: owned, deleted by destroy
    WrBuilder* wr_builder = nullptr;  // extended QPs (ibv_wr_*): owned, device/qp_ex.hpp
    WorkRecvQueue rq;
    Srq* srq = nullptr;
    Xrcd* xrcd = nullptr; // XRC TGT QP (IBV_QPT_XRC_RECV): its domain; it has no PD, no CQs
};

inline RawQp& raw_qp(Qp& qp) noexcept { return static_cast<RawQp&>(qp); }
inline RssQp& rss_qp(Qp& qp) noexcept { return static_cast<RssQp&>(qp); }
inline IbQp& ib_qp(Qp& qp) noexcept { return static_cast<IbQp&>(qp); }
inline const IbQp& ib_qp(const Qp& qp) noexcept { return static_cast<const IbQp&>(qp); }
// An RC, UC, UD or XRC QP from the pointer a program holds.
inline IbQp* ib_qp(ibv_qp* q) noexcept { return static_cast<IbQp*>(from_verbs(q)); }

// Creating each role, after qp.cpp's common checks (context, comp_mask, the
// type, the PD or XRC domain). NULL + errno on failure.
ibv_qp* create_raw_qp(Context& ctx, ibv_qp_init_attr_ex& attr) noexcept;  // qp_raw.cpp
ibv_qp* create_rss_qp(Context& ctx, ibv_qp_init_attr_ex& attr) noexcept;  // qp_rss.cpp
ibv_qp* create_ib_qp(Context& ctx, ibv_qp_init_attr_ex& attr) noexcept;   // qp_ib_create.cpp

// ---------------------------------------------------------------------------
// What the roles share (qp.cpp).

// A new QP's verbs part and common fields: zeroed, then its context, PD,
// handle, number (the device's next), RESET, `type`, its mutex and
// condition; `ops` its role's. The role fills in the rest.
void init_qp(Qp& qp, Context& ctx, const ibv_qp_init_attr_ex& attr, ibv_qp_type type,
             const QpOps& ops) noexcept;

// ibv_query_qp's answer from `attr` (what the QP stores) and the verbs part.
void fill_query(const Qp& qp, const ibv_qp_attr& attr, bool sq_sig_all, ibv_qp_attr& out,
                ibv_qp_init_attr& init) noexcept;

// The destroy steps every role takes after its own teardown: an unread
// event of the QP goes with it, a read one must be acked first
// (ib_uverbs_release_uevent, ibv_cmd_destroy_qp) ...
void wait_for_qp_events(Qp& qp) noexcept;
// ... and, once the role let go of the objects it held, the context loses
// an object and the verbs part its mutex and condition.
void end_qp(Qp& qp) noexcept;

// Raw-packet QPs, plain and RSS (mlx5's rules, not the IB table: "Raw-packet
// QPs"). The attribute bits ibv_modify_qp knows for them.
inline constexpr int kPacketQpAttrBits = IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_PORT |
                                         IBV_QP_PKEY_INDEX | IBV_QP_QKEY | IBV_QP_RATE_LIMIT;
// The checks of a modify (the bits are known): the current state, the port,
// the target and whether the move is legal. The state it moves to into
// `next` (the current one without IBV_QP_STATE). Caller holds the locks
// that guard the QP's state.
[[nodiscard]] int packet_qp_transition(const Qp& qp, const ibv_qp_attr& attr, int mask,
                                       ibv_qp_state& next) noexcept;
// Then the state and what the mask sets (P_Key index, Q_Key) are stored.
void store_packet_qp(Qp& qp, const ibv_qp_attr& attr, int mask, ibv_qp_state next) noexcept;

} // namespace rdmasim::device
