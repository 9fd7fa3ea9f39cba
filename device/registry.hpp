// The devices programs can see through ibv_get_device_list. The runtime
// fills it: directly (a Simulator in the same program) or through a provider
// that the first ibv_get_device_list call runs (the drop-in library, which
// builds devices from the environment).
#pragma once

#include <vector>

#include "device/objects.hpp"

namespace rdmasim::device {

// Returns 0, or an errno after logging why (bad configuration, say).
using DeviceProvider = int (*)();

void set_device_provider(DeviceProvider provider) noexcept;
void register_device(Device* dev);
void unregister_device(Device* dev) noexcept;
// Runs the provider once if one is set; then the registered devices. Errno on failure.
[[nodiscard]] int current_devices(std::vector<Device*>& out);

} // namespace rdmasim::device
