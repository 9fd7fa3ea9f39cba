#include "net/huge_buffer.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <utility>

namespace rdmasim::net {

namespace {

std::size_t round_up(std::size_t n, std::size_t to) noexcept { return (n + to - 1) / to * to; }

} // namespace

HugeBuffer::HugeBuffer(std::size_t bytes) noexcept {
    if (bytes == 0) return;
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    // Half a huge page or more: whole huge pages, aligned to one (a huge
    // page needs an aligned range). mmap aligns to a page only, so map the
    // slack as well and give back what lies outside the aligned range.
    const bool huge = bytes >= kHugePage / 2;
    const std::size_t align = huge ? kHugePage : page;
    const std::size_t len = round_up(bytes, align);
    const std::size_t slack = align - page;
    void* p = ::mmap(nullptr, len + slack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    const auto base = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t aligned = round_up(base, align);
    if (aligned > base) ::munmap(p, aligned - base);
    if (const std::size_t tail = base + slack - aligned; tail > 0)
        ::munmap(reinterpret_cast<void*>(aligned + len), tail);
    data_ = reinterpret_cast<std::uint8_t*>(aligned);
    size_ = bytes;
    mapped_ = len;
    advised_ = huge && ::madvise(data_, len, MADV_HUGEPAGE) == 0;
}

HugeBuffer::~HugeBuffer() { release(); }

HugeBuffer::HugeBuffer(HugeBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, 0)), advised_(std::exchange(other.advised_, false)) {}

HugeBuffer& HugeBuffer::operator=(HugeBuffer&& other) noexcept {
    if (this != &other) {
        release();
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
        mapped_ = std::exchange(other.mapped_, 0);
        advised_ = std::exchange(other.advised_, false);
    }
    return *this;
}

void HugeBuffer::release() noexcept {
    if (data_ != nullptr) ::munmap(data_, mapped_);
    data_ = nullptr;
    size_ = mapped_ = 0;
    advised_ = false;
}

} // namespace rdmasim::net
