// XRC domains (device/README.md, "XRC"): ibv_open_xrcd / ibv_close_xrcd,
// and the lookup an XRC TGT QP's requests use to find the XRC SRQ their
// XRCETH names.
#pragma once

#include "device/objects.hpp"

namespace rdmasim::device {

// ibv_open_xrcd(3): comp_mask must carry IBV_XRCD_INIT_ATTR_FD and _OFLAGS
// (EINVAL). fd -1 with O_CREAT: a private domain; a file's domain is
// shared by every open of that file on the device: O_CREAT makes it when
// missing, O_EXCL refuses an existing one (EINVAL); without O_CREAT a
// missing domain is EAGAIN (as ib_uverbs_open_xrcd). A bad fd: EBADF.
ibv_xrcd* open_xrcd(ibv_context* context, ibv_xrcd_init_attr* attr) noexcept;
// EBUSY while XRC SRQs or XRC TGT QPs created with this handle live.
int close_xrcd(ibv_xrcd* xrcd) noexcept;

// An XRC SRQ joins (0 or ENOMEM) / leaves its domain's SRQs (takes the port lock).
[[nodiscard]] int add_xrc_srq(Srq& srq) noexcept;
void remove_xrc_srq(Srq& srq) noexcept;

// The XRC SRQ numbered `srqn` in `domain`, or nullptr. Port lock held.
[[nodiscard]] Srq* find_xrc_srq(const XrcDomain& domain, std::uint32_t srqn) noexcept;

} // namespace rdmasim::device
