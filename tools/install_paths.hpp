#pragma once
// Where rdmasim finds what it ships, relative to its own executable first, so
// that a build tree, an install and a moved install all work
// (README.md, "Install"). tools/meson.build defines the relative paths.
#include <string>

namespace rdmasim::tools {

// The directory of the drop-in libibverbs.so.1: RDMASIM_LIBDIR if set, else
// the first that holds one of <exe>/<bindir->libdir>/rdmasim (an install),
// <exe>/../sim (the build tree), the configured install directory.
// "" with `error` naming every place looked.
std::string drop_in_library_dir(std::string& error);

// The bundled sample capture: <exe>/<bindir->datadir>/rdmasim/sample.pcap
// (an install), then the source tree's tests/data/sample.pcap, then the
// configured install directory's; the last one when none exists (the replay
// then reports that path as missing).
std::string sample_capture();

} // namespace rdmasim::tools
