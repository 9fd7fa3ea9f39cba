// An owned array that is not zeroed: its pages cost nothing until first
// written. For the large staging areas a port reserves at set-up (RoCE
// loopback, ARP wait), which most runs never touch; zeroing them was most of
// `rdmasim replay`'s start-up. Elements are indeterminate until written. A
// plain owning pointer, not a std::unique_ptr: see Port::host_out_ (the
// Device embedding a Port must stay standard-layout).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace rdmasim::datapath {

template <class T> class UninitArray {
    static_assert(std::is_trivially_default_constructible_v<T> && std::is_trivially_destructible_v<T>,
                  "new T[n] must write nothing");

public:
    explicit UninitArray(std::size_t size) : data_(new T[size]), size_(size) {}
    UninitArray(const UninitArray&) = delete;
    UninitArray& operator=(const UninitArray&) = delete;
    ~UninitArray() { delete[] data_; }

    [[nodiscard]] T* data() noexcept { return data_; }
    [[nodiscard]] const T* data() const noexcept { return data_; }
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] T& operator[](std::size_t i) noexcept { return data_[i]; }
    [[nodiscard]] const T& operator[](std::size_t i) const noexcept { return data_[i]; }

private:
    T* data_;
    std::size_t size_;
};

using UninitBytes = UninitArray<std::uint8_t>;

} // namespace rdmasim::datapath
