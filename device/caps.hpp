// Capabilities: what an emulated device reports and allows. A profile is a
// Capabilities value; configuration can turn any offload off so that a
// program's fallback paths can be tested (device/README.md, "Device and port").
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "net/addresses.hpp"

namespace rdmasim::device {

// The largest indirection table the kernel takes: IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE
// (ib_uverbs_ex_create_rwq_ind_table, kernel drivers/infiniband/core/uverbs_cmd.c).
inline constexpr std::uint32_t kMaxLogIndTableSize = 13;

struct Capabilities {
    // Offloads (raw_packet_caps, device_cap_flags_ex).
    bool cvlan_stripping = true;
    bool scatter_fcs = true;
    bool ip_csum = true;
    bool delay_drop = true;
    bool pci_write_end_padding = true;
    // IBV_WQ_FLAGS_DELAY_DROP needs CAP_SYS_RAWIO (EPERM), as mlx5_ib_create_wq
    // (kernel drivers/infiniband/hw/mlx5/qp.c) asks. Off by default so that an
    // unprivileged program can use delay drop (device/README.md, "Device and port").
    bool delay_drop_needs_rawio = false;
    // A frame whose carried FCS is bad is delivered (and counted in fcs_bad)
    // instead of being dropped by the MAC as fcs_errors: for replaying damaged
    // captures on purpose.
    bool deliver_bad_fcs = false;

    std::uint32_t pad_align = 64;                        // end padding cache line, 64 or 128
    // The port's CM (datapath/cm/agent.hpp): response timeout 4.096 us *
    // 2^N and resends, rdma_cm's CMA_CM_RESPONSE_TIMEOUT and CMA_MAX_CM_RETRIES.
    std::uint8_t cm_response_timeout = 20;
    std::uint8_t cm_max_retries = 15;
    std::uint64_t delay_drop_timeout_ns = 100'000'000;   // 100 us steps, at most 100 ms
    bool delay_drop_rearm = true;                        // the driver re-arms after a timeout
    std::uint32_t hold_frames = 256;                     // delay-drop storage per WQ
    std::uint32_t hold_bytes = 1u << 20;

    // Limits (every one non-zero), each reported and enforced.
    std::uint32_t max_wq = 1024; // max_wq_type_rq: WQs and raw QPs' receive queues
    std::uint32_t max_wr = 32768;
    std::uint32_t max_sge = 16;
    std::uint32_t max_cq = 4096;
    std::uint32_t max_cqe = 1u << 22;
    std::uint32_t max_pd = 4096;
    std::uint32_t max_mr = 16384;
    std::uint64_t max_mr_size = 1ull << 40;
    std::uint32_t max_qp = 4096;
    std::uint32_t max_qp_wr = 32768;
    // SRQs as mlx5 reports them: max_srq_wr one below a power of two (one
    // ring slot stays empty), max_srq_sge one below the QP's SGE limit.
    std::uint32_t max_srq = 4096;
    std::uint32_t max_srq_wr = 32767;
    std::uint32_t max_srq_sge = 15;
    std::uint32_t max_rwq_indirection_tables = 1024;
    std::uint32_t max_rwq_indirection_table_size = 1u << kMaxLogIndTableSize; // entries
    std::uint32_t max_flows = 65536;
    std::uint32_t num_comp_vectors = 4;
    std::uint32_t max_raw_frame = 9216 + 18;                  // jumbo + header and tag
};

// Identity and port addresses of one emulated device, fixed at creation
// (device/README.md, "Device and port").
struct DeviceIdentity {
    std::string name;                     // "rdmasim0"
    std::uint32_t index = 0;
    std::uint64_t node_guid = 0;          // network order, as verbs reports it
    net::MacAddress mac{};                // port MAC
    net::Ipv4Address ipv4{};              // GID 0 is ::ffff:ipv4 (RoCE v2)
    net::Ipv6Address ipv6{};              // GID 1
    std::uint32_t mtu = 1024;             // active_mtu in bytes: 256, 512, 1024, 2048 or 4096
    std::uint32_t vendor_id = 0x1af4;     // reported in ibv_device_attr
    std::uint32_t vendor_part_id = 0x5253; // "RS"
};

} // namespace rdmasim::device
