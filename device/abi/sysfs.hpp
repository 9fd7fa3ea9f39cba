// The emulated sysfs's fixed text, one home for each: its root (every path
// below it belongs to the emulator, sysfs.cpp) and the firmware version, which
// the fw_ver file and ibv_query_device() both report.
#pragma once

namespace rdmasim::device {

// ibv_get_sysfs_path(); a device's ibdev_path and dev_path lie below it.
inline constexpr char sysfs_root[] = "/rdmasim";
// ibv_device_attr.fw_ver and <ibdev_path>/fw_ver.
inline constexpr char firmware_version[] = "rdmasim-0.1.0";

} // namespace rdmasim::device
