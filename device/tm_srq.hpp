// Tag-matching SRQs (device/README.md, "Tag matching"): the tag list of an
// IBV_SRQT_TM SRQ, ibv_post_srq_ops, and the matching the RC transport asks
// for. Everything here runs under the port lock except post_srq_ops's checks.
#pragma once

#include <cstdint>
#include <vector>

#include "datapath/recv_ring.hpp"
#include "device/objects.hpp"

namespace rdmasim::device {

// tm_caps as mlx5_ib_query_device reports them (device/README.md, "Tag matching").
inline constexpr std::uint32_t kTmMaxNumTags = 127;   // (1 << log_tag_matching_list_sz) - 1
inline constexpr std::uint32_t kTmMaxOps = 32768;     // 1 << log_max_qp_sz
inline constexpr std::uint32_t kTmMaxSge = 1;         // MLX5_TM_MAX_SGE
inline constexpr std::uint32_t kTmMaxRndvHdr = 64;    // MLX5_TM_MAX_RNDV_MSG_SIZE
// mlx5 asks for a sync once this many unexpected messages are unreported
// (MLX5_TM_MAX_SYNC_DIFF).
inline constexpr std::uint32_t kTmMaxSyncDiff = 0x3fff;

struct TagEntry {
    bool posted = false;
    bool in_sync = false;  // added while software had seen every unexpected message
    std::uint64_t seq = 0; // posting order: the oldest match wins
    std::uint64_t tag = 0;
    std::uint64_t mask = 0;
    datapath::Wqe wqe;  // wr_id = recv_wr_id
    datapath::Sge sge{}; // at most kTmMaxSge
};

struct TagList {
    std::vector<TagEntry> entries; // max_num_tags; a handle is an index
    std::uint32_t max_ops = 0;
    std::uint64_t next_seq = 0;
    std::uint32_t hw_unexpected = 0; // unexpected messages delivered (the phase)
    std::uint32_t sw_unexpected = 0; // the count the last IBV_OPS_TM_SYNC reported
};

// ibv_create_srq_ex's TM part: checks tm_cap and the CQ (errno, or 0) and
// makes the list.
int make_tag_list(Srq& srq, const ibv_srq_init_attr_ex& attr, TagList*& out);

int post_srq_ops(ibv_srq* srq, ibv_ops_wr* wr, ibv_ops_wr** bad_wr) noexcept;

// For the transport (port lock held). match_tag consumes the oldest posted
// entry matching `tag` into `wqe` / `sge`; false when none does, or when
// matching waits for a sync. count_unexpected returns whether the
// completion should ask for one (IBV_WC_TM_SYNC_REQ).
bool match_tag(TagList& list, std::uint64_t tag, const datapath::Wqe*& wqe,
               const datapath::Sge*& sge) noexcept;
bool count_unexpected(TagList& list) noexcept;

} // namespace rdmasim::device
