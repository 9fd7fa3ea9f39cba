// How sysfs spells a GUID and a GID, for the library's emulated sysfs
// (sysfs.cpp) and the tree `rdmasim run` mounts (sim/device_sysfs.cpp): the
// kernel's node_guid ("0011:2233:4455:6677") and gids/N (eight groups of four
// hex digits) formats.
#pragma once

#include <endian.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace rdmasim::device {

// `guid` in network order, as verbs reports it.
[[nodiscard]] inline std::string sysfs_guid_text(std::uint64_t guid) {
    const std::uint64_t g = be64toh(guid);
    char text[20];
    std::snprintf(text, sizeof text, "%04x:%04x:%04x:%04x", static_cast<unsigned>(g >> 48 & 0xffff),
                  static_cast<unsigned>(g >> 32 & 0xffff), static_cast<unsigned>(g >> 16 & 0xffff),
                  static_cast<unsigned>(g & 0xffff));
    return text;
}

// The 16 bytes of a GID.
[[nodiscard]] inline std::string sysfs_gid_text(const std::uint8_t* raw) {
    std::string text;
    for (int i = 0; i < 16; i += 2) {
        char group[6];
        std::snprintf(group, sizeof group, "%s%02x%02x", i ? ":" : "", raw[i], raw[i + 1]);
        text += group;
    }
    return text;
}

} // namespace rdmasim::device
