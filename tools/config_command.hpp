// `rdmasim config`: the configuration reference, and a check of the
// configuration a program under `rdmasim run` would get.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace rdmasim::tools {

// Prints the Markdown table of every key (README.md, "Configuration reference").
int print_config_reference();

// Applies RDMASIM_CONFIG, the RDMASIM_* variables and then `settings` (from
// --set) as the drop-in library would, and validates the result. Prints
// "configuration ok" or the error; returns its exit status (tools/exit_codes.hpp).
int check_config(const std::vector<std::pair<std::string, std::string>>& settings);

} // namespace rdmasim::tools
