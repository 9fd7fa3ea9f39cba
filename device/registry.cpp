#include "device/registry.hpp"

#include <algorithm>
#include <mutex>

namespace rdmasim::device {

namespace {

struct Registry {
    std::mutex lock;
    std::vector<Device*> devices;
    DeviceProvider provider = nullptr;
    bool provided = false;
    int provider_error = 0;
};

Registry& registry() {
    static Registry r;
    return r;
}

} // namespace

void set_device_provider(DeviceProvider provider) noexcept {
    std::lock_guard lock(registry().lock);
    registry().provider = provider;
    registry().provided = false;
}

void register_device(Device* dev) {
    std::lock_guard lock(registry().lock);
    registry().devices.push_back(dev);
}

void unregister_device(Device* dev) noexcept {
    std::lock_guard lock(registry().lock);
    std::erase(registry().devices, dev);
}

int current_devices(std::vector<Device*>& out) {
    DeviceProvider provider = nullptr;
    {
        std::lock_guard lock(registry().lock);
        if (registry().provider && !registry().provided) {
            registry().provided = true;
            provider = registry().provider;
        }
    }
    // Outside the lock: the provider registers devices itself.
    if (provider) {
        const int err = provider();
        std::lock_guard lock(registry().lock);
        registry().provider_error = err;
    }
    std::lock_guard lock(registry().lock);
    if (registry().provider_error != 0) return registry().provider_error;
    out = registry().devices;
    return 0;
}

} // namespace rdmasim::device
