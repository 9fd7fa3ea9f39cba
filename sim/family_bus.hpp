// A device's family bus (sim/README.md, "Fork"): after a program forks, its
// children share the device with one another, as processes share one HCA.
// The first fork makes, for each device, a private shm:// segment that is
// not a switch (net::ShmWireOptions::route) and a listener table in memory
// mapped shared, so that every later child inherits it. Each child takes a
// slot on the bus: member slot + 1, whose QP numbers and CM communication
// IDs carry that number (datapath/family.hpp). A frame a child sends to the
// device's own address goes to the QP or CM of the member that owns it.
//
// The process that forked first is member 0 and does not read the bus (its
// engine reads its own wire): frames for its QPs from a child are dropped
// (the bus's tx_dropped).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "datapath/family.hpp"
#include "net/result.hpp"
#include "net/roce_frame.hpp"
#include "net/shm_wire.hpp"

namespace rdmasim::sim {

class FamilyBus final : public datapath::Family {
public:
    // The first fork's (prepare handler, before any lock): a private
    // directory under `tmpdir` holding the segment, and the listener table.
    static Result<std::unique_ptr<FamilyBus>> create(const std::string& tmpdir);
    ~FamilyBus() override; // the creator removes the directory; a child keeps it
    FamilyBus(const FamilyBus&) = delete;
    FamilyBus& operator=(const FamilyBus&) = delete;

    // In a forked child (after fork, one thread): takes a slot on the bus.
    // The wire is the child's device's source and sink; `member()` changes.
    Result<std::unique_ptr<net::ShmWire>> join();

    [[nodiscard]] std::uint32_t member() const noexcept override { return member_; }
    [[nodiscard]] int owner(std::span<const std::uint8_t> frame) const noexcept override;
    bool forward(std::span<const std::uint8_t> frame, std::uint64_t now_ns) noexcept override;
    void listen(std::uint64_t service_id, bool on) noexcept override;

    [[nodiscard]] const std::string& url() const noexcept { return url_; }

private:
    struct Table; // the listener table, in the shared mapping
    FamilyBus(std::string dir, Table* table) noexcept;
    // The bus slot a frame goes to (net::ShmWireOptions::route): only frames
    // from the device's address to itself, and datagrams to a group.
    [[nodiscard]] int route(std::span<const std::uint8_t> frame) const noexcept;
    [[nodiscard]] int owner_of(const net::RocePacket& p) const noexcept; // owner(), parsed
    [[nodiscard]] int listener(std::uint64_t service_id) const noexcept;

    std::string dir_;
    std::string url_;
    Table* table_;
    pid_t creator_;
    std::uint32_t member_ = 0;
    net::ShmWire* wire_ = nullptr; // this member's end (the engine owns it); nullptr in member 0
};

} // namespace rdmasim::sim
