// HugeBuffer: a large, zeroed, private buffer the process will touch whole
// (a capture's read window, a tool's receive buffers), asked of the kernel
// in 2 MiB huge pages where transparent huge pages are enabled ("always" or
// "madvise"). Each first touch of a 4 KiB page is a page fault; on the
// benchmark guest one costs ~10 us, so a 2 MiB buffer touched page by page
// cost ~5 ms, against ~0.1 ms for one huge page (tests/bench/RESULTS.md,
// twelfth pass). Where the kernel gives no huge page the buffer is ordinary
// memory: the advice is a hint, never an error.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rdmasim::net {

class HugeBuffer {
public:
    // The huge page's size; a request of at least half of it is rounded up
    // to whole ones (a smaller one gets ordinary pages).
    static constexpr std::size_t kHugePage = std::size_t{2} << 20;

    HugeBuffer() = default;
    // `bytes` zeroed bytes (none for 0), 2 MiB aligned when at least
    // kHugePage / 2; empty() when the memory is not there (ENOMEM).
    explicit HugeBuffer(std::size_t bytes) noexcept;
    ~HugeBuffer();
    HugeBuffer(HugeBuffer&& other) noexcept;
    HugeBuffer& operator=(HugeBuffer&& other) noexcept;
    HugeBuffer(const HugeBuffer&) = delete;
    HugeBuffer& operator=(const HugeBuffer&) = delete;

    [[nodiscard]] std::uint8_t* data() const noexcept { return data_; }
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] bool empty() const noexcept { return data_ == nullptr; }
    // Whether the kernel took the huge-page advice for it (tests, reports).
    [[nodiscard]] bool advised() const noexcept { return advised_; }

private:
    void release() noexcept;

    std::uint8_t* data_ = nullptr;
    std::size_t size_ = 0;   // what was asked
    std::size_t mapped_ = 0; // what is mapped at data_ (whole pages)
    bool advised_ = false;
};

} // namespace rdmasim::net
