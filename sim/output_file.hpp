// Writing a finished document (--stats, --report) to where the user asked
// (sim/README.md, "Statistics"): a regular file (or a new one) is replaced
// atomically, so a reader never sees half a document; a FIFO or a character
// device (/dev/null, a terminal) is written in place and stays what it is;
// "-" is standard output.
#pragma once

#include <string>
#include <string_view>

#include "net/result.hpp"

namespace rdmasim::sim {

// Writes `text` to `path`. Regular or absent: a temporary file beside it
// (created 0644, written, fsync'ed, renamed over it); on failure the
// temporary file is removed and `path` left as it was. A FIFO or character
// device: opened for writing (a FIFO waits for its reader) and written
// whole. "-": standard output, flushed. Anything else (a directory, a
// socket, a block device) is refused. Errors start with `what` and `path`
// ("stats out.json: ...").
Result<void> write_output_file(std::string_view what, const std::string& path, std::string_view text);

} // namespace rdmasim::sim
