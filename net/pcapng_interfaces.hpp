// What the interface description blocks of a pcapng file say, read before
// libpcap opens it (net/README.md, "Captures"): libpcap 1.10 checks later
// interfaces only when it meets them and ignores if_fcslen, so
// PcapFileSource::open scans them itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rdmasim::net {

// One interface description block as the file has it.
struct PcapngInterface {
    std::uint16_t linktype = 0; // LINKTYPE_ value, as in the file
    std::optional<int> fcs_len; // if_fcslen in bytes, when present
};

// True when the file starts with a pcapng section header block.
[[nodiscard]] bool is_pcapng(const std::string& path);

// Every IDB within the first MiB of a pcapng file, in file order (all
// sections); stops quietly at anything malformed (libpcap reports that when
// it gets there). Empty for a file that is not pcapng.
[[nodiscard]] std::vector<PcapngInterface> pcapng_interfaces(const std::string& path);

} // namespace rdmasim::net
