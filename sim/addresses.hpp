// Each device's identity and port addresses, from the configuration or
// derived (sim/README.md, "Addresses"): configured keys win; otherwise a
// random locally administered MAC per process (the inline engine: a stable
// one from the device index), an RFC 3927 IPv4 address and an EUI-64 IPv6
// link-local address from the MAC, MTU 1024.
#pragma once

#include <cstdint>

#include "device/caps.hpp"
#include "sim/config.hpp"

namespace rdmasim::sim {

// Device `index`'s identity: rdmasimN, its MAC, node GUID (the MAC's EUI-64),
// IPv4 and IPv6 addresses and MTU. The same configuration gives the same
// answer throughout one process (the random part is drawn once per process);
// the default IPv4 addresses of the devices of one process all differ.
[[nodiscard]] device::DeviceIdentity device_identity(const Config& config, std::uint32_t index);

// Whether device `index`'s MAC (and so its node GUID, and the addresses
// derived from it) is drawn at random per process: no `mac` set, and not the
// inline engine's stable default.
[[nodiscard]] bool mac_drawn_at_random(const Config& config, std::uint32_t index);

} // namespace rdmasim::sim
