#include "sim/family_bus.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <type_traits>
#include <variant>

#include <fmt/format.h>

#include "datapath/roce/port.hpp"
#include "net/cm_mad.hpp"
#include "net/roce_frame.hpp"

namespace rdmasim::sim {

// Which member listens to which service ID. Shared by the whole family
// (MAP_SHARED, inherited across fork); a short spin lock orders its
// writers and readers, none of which makes a system call while holding it.
struct FamilyBus::Table {
    static constexpr std::size_t kEntries = 256;
    struct Entry {
        std::uint64_t service_id;
        std::uint32_t member_plus_one; // 0: free
    };
    std::atomic<std::uint32_t> lock;
    Entry entries[kEntries];

    void acquire() noexcept {
        while (lock.exchange(1, std::memory_order_acquire) != 0)
            while (lock.load(std::memory_order_relaxed) != 0) {
            }
    }
    void release() noexcept { lock.store(0, std::memory_order_release); }
};
static_assert(std::atomic<std::uint32_t>::is_always_lock_free); // across processes

Result<std::unique_ptr<FamilyBus>> FamilyBus::create(const std::string& tmpdir) {
    std::string dir = tmpdir + "/rdmasim-family-XXXXXX";
    if (::mkdtemp(dir.data()) == nullptr) {
        const int err = errno;
        return make_error(err,
                          fmt::format("family bus: mkdtemp in {}: {}", tmpdir, std::strerror(err)));
    }
    void* mem =
        ::mmap(nullptr, sizeof(Table), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        const int err = errno;
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
        return make_error(err, fmt::format("family bus: mmap: {}", std::strerror(err)));
    }
    // The segment is made by the first child to join (net::shm::Segment::open
    // settles a race between two): a program that forks only to exec pays
    // a directory and one page.
    return std::unique_ptr<FamilyBus>(new FamilyBus(std::move(dir), new (mem) Table{}));
}

FamilyBus::FamilyBus(std::string dir, Table* table) noexcept
    : dir_(std::move(dir)), url_("shm://" + dir_ + "/bus"), table_(table), creator_(::getpid()) {}

FamilyBus::~FamilyBus() {
    if (::getpid() == creator_) {
        std::error_code ec; // a child still running keeps its mapping; its next open fails
        std::filesystem::remove_all(dir_, ec);
    }
    ::munmap(table_, sizeof(Table));
}

Result<std::unique_ptr<net::ShmWire>> FamilyBus::join() {
    net::ShmWireOptions options;
    options.route = [this](std::span<const std::uint8_t> frame) { return route(frame); };
    // Most children exec at once and never use the bus: mapping the ring
    // cost each fork 4.5 ms here (a fork with a device open, 15.3-15.9 ms
    // against 11.1 ms without the bus). A child that talks to its siblings
    // pays the faults of the first lap instead.
    options.prefault = false;
    auto wire = net::ShmWire::open(url_, options);
    if (!wire) return wire.error();
    member_ = wire.value()->host() + 1;
    wire_ = wire.value().get();
    table_->acquire(); // what a member that died in this slot left listening
    for (Table::Entry& e : table_->entries)
        if (e.member_plus_one == member_ + 1) e.member_plus_one = 0;
    table_->release();
    return wire;
}

int FamilyBus::listener(std::uint64_t service_id) const noexcept {
    int member = -1;
    table_->acquire();
    for (const Table::Entry& e : table_->entries)
        if (e.member_plus_one != 0 && e.service_id == service_id) {
            member = static_cast<int>(e.member_plus_one - 1);
            break;
        }
    table_->release();
    return member;
}

void FamilyBus::listen(std::uint64_t service_id, bool on) noexcept {
    table_->acquire();
    Table::Entry* free = nullptr;
    for (Table::Entry& e : table_->entries) {
        if (e.member_plus_one == member_ + 1 && e.service_id == service_id) {
            if (!on) e.member_plus_one = 0;
            table_->release();
            return;
        }
        if (e.member_plus_one == 0 && free == nullptr) free = &e;
    }
    if (on && free != nullptr) *free = Table::Entry{service_id, member_ + 1}; // full: REQs get REJ
    table_->release();
}

int FamilyBus::owner(std::span<const std::uint8_t> frame) const noexcept {
    net::RocePacket p;
    if (net::parse_roce_frame(frame, p) != net::RoceDrop::none) return static_cast<int>(member_);
    return owner_of(p);
}

int FamilyBus::owner_of(const net::RocePacket& p) const noexcept {
    if (net::is_multicast_gid(p.dgid)) return -1;
    const std::uint32_t qpn = p.headers.bth.dest_qp;
    if (qpn != datapath::RocePort::kGsiQpn) return static_cast<int>(datapath::qpn_member(qpn));
    net::ParsedCmMad mad;
    if (net::parse_cm_mad(p.payload, mad) != net::CmMadError::none)
        return static_cast<int>(member_);
    const std::uint32_t id = std::visit(
        [&](const auto& m) -> std::uint32_t {
            using M = std::decay_t<decltype(m)>;
            if constexpr (std::is_same_v<M, net::CmReq> || std::is_same_v<M, net::CmSidrReq>) {
                const int l = listener(m.service_id); // nobody: this member's CM rejects it
                return static_cast<std::uint32_t>(l < 0 ? member_ : static_cast<std::uint32_t>(l))
                       << datapath::kCommIdMemberShift;
            } else if constexpr (std::is_same_v<M, net::CmSidrRep>) {
                return m.request_id;
            } else {
                return m.remote_comm_id;
            }
        },
        mad.message);
    return static_cast<int>(datapath::comm_id_member(id));
}

int FamilyBus::route(std::span<const std::uint8_t> frame) const noexcept {
    net::RocePacket p;
    if (net::parse_roce_frame(frame, p) != net::RoceDrop::none)
        return net::kRouteDrop; // ARP: no other host here
    if (net::is_multicast_gid(p.dgid)) return net::kRouteFlood;
    if (p.sgid != p.dgid) return net::kRouteDrop; // to another host: the bus reaches none
    const int m = owner_of(p);
    return m <= 0 ? net::kRouteDrop : m - 1; // member 0 reads no bus
}

bool FamilyBus::forward(std::span<const std::uint8_t> frame, std::uint64_t now_ns) noexcept {
    if (wire_ == nullptr) return false;
    wire_->send(frame, now_ns);
    return true;
}

} // namespace rdmasim::sim
