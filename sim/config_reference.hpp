// The configuration reference, generated from Config::keys(): every key in
// its three spellings (a TOML file, the environment, the command line) and
// the Markdown table README.md holds ("Configuration reference"; printed by
// `rdmasim config --reference`).
#pragma once

#include <string>

#include "sim/config.hpp"

namespace rdmasim::sim {

// The key the spellings use: "pcap.N" -> "pcap.1", others as they are.
[[nodiscard]] std::string example_key(const KeyInfo& info);
// `caps.pad_align = 128` (dotted keys; numbers bare, on/off as booleans, text quoted).
[[nodiscard]] std::string toml_spelling(const KeyInfo& info);
// `RDMASIM_CAPS_PAD_ALIGN=128`, the value shell-quoted when it needs it.
[[nodiscard]] std::string environment_spelling(const KeyInfo& info);
// `--set caps.pad_align=128`, shell-quoted when it needs it.
[[nodiscard]] std::string set_spelling(const KeyInfo& info);
// `--pcap capture.pcap`, `--promisc` for a switch; "" for a key without an option.
[[nodiscard]] std::string flag_spelling(const KeyInfo& info);

// The Markdown table: one row per key, a header row first, '\n' after each.
[[nodiscard]] std::string reference_markdown();

} // namespace rdmasim::sim
