// The ops table: the ibv_context.ops and verbs_context slots that verbs.h's
// inline wrappers call, filled here for every context; for most extended slots
// left NULL the wrapper answers EOPNOTSUPP (device/README.md, "The library seen by a program").
#pragma once

#include <infiniband/verbs.h>

namespace rdmasim::device {

// Fills the slots the device model implements into `v` (zeroed by the caller);
// writes nothing else.
void install_ops(verbs_context& v) noexcept;

} // namespace rdmasim::device
