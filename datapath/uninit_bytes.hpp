// An owned byte buffer that is not zeroed: its pages cost nothing until
// first written. For the large staging areas a port reserves at set-up
// (RoCE loopback, ARP wait), which most runs never touch; zeroing them was
// most of `rdmasim replay`'s start-up. A plain owning pointer, not a
// std::unique_ptr: see Port::host_out_ (the Device embedding a Port must stay
// standard-layout).
#pragma once

#include <cstddef>
#include <cstdint>

namespace rdmasim::datapath {

class UninitBytes {
public:
    explicit UninitBytes(std::size_t size) : data_(new std::uint8_t[size]), size_(size) {}
    UninitBytes(const UninitBytes&) = delete;
    UninitBytes& operator=(const UninitBytes&) = delete;
    ~UninitBytes() { delete[] data_; }

    [[nodiscard]] std::uint8_t* data() noexcept { return data_; }
    [[nodiscard]] const std::uint8_t* data() const noexcept { return data_; }
    [[nodiscard]] std::size_t size() const noexcept { return size_; }

private:
    std::uint8_t* data_;
    std::size_t size_;
};

} // namespace rdmasim::datapath
