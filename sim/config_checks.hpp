// The checks of a configuration beyond numbers and switches: the forms of
// the string values (Config::set calls these, so a value that would fail
// only once a program runs is refused where it is set, EINVAL naming the key
// and the accepted forms), and what the file system must hold for the paths
// (Config::check_files, errno values: a runtime error, not a usage one).
#pragma once

#include <string_view>

#include "net/result.hpp"

namespace rdmasim::sim {

// A per-device value ("" = none): `wire` a ptp://PATH (PATH at most 106
// bytes), vde://PATH or vxvde://GROUP URL; `iface`, `pcap_live` an interface
// name (1..15 bytes, no '/', no blank); `pcap`, `tx_capture` a file name.
Result<void> check_device_value(std::string_view key, std::string_view value);
// `trace`, `stats`, `report`: a file name, not a directory's ("dir/");
// `stats` and `report` also take "-", standard output.
Result<void> check_output_file(std::string_view key, std::string_view value);
// `filter`: a BPF expression libpcap compiles for Ethernet frames.
Result<void> check_filter(std::string_view key, std::string_view value);

} // namespace rdmasim::sim
