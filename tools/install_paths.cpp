#include "tools/install_paths.hpp"

#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <string_view>
#include <vector>

#if !defined(RDMASIM_INSTALLED_LIBDIR_FROM_EXE) || !defined(RDMASIM_BUILD_LIBDIR_FROM_EXE) || \
    !defined(RDMASIM_INSTALLED_LIBDIR) || !defined(RDMASIM_INSTALLED_SAMPLE_FROM_EXE) ||       \
    !defined(RDMASIM_SOURCE_SAMPLE) || !defined(RDMASIM_INSTALLED_SAMPLE)
#error "tools/meson.build defines where the library and the sample are, relative to the executable"
#endif

namespace rdmasim::tools {

namespace fs = std::filesystem;

std::string drop_in_library_dir(std::string& error) {
    if (const char* d = std::getenv("RDMASIM_LIBDIR"); d && *d) {
        if (fs::exists(fs::path(d) / "libibverbs.so.1")) return d;
        error = fmt::format("no libibverbs.so.1 in {} (RDMASIM_LIBDIR)", d);
        return "";
    }
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    std::vector<fs::path> candidates;
    if (!ec) {
        if (std::string_view(RDMASIM_INSTALLED_LIBDIR_FROM_EXE).size() != 0)
            candidates.push_back(exe.parent_path() / RDMASIM_INSTALLED_LIBDIR_FROM_EXE);
        candidates.push_back(exe.parent_path() / RDMASIM_BUILD_LIBDIR_FROM_EXE);
    }
    candidates.emplace_back(RDMASIM_INSTALLED_LIBDIR);
    for (const fs::path& dir : candidates)
        if (fs::exists(dir / "libibverbs.so.1", ec)) return dir.lexically_normal().string();
    // (fmt, not "..." + std::string: GCC 12 at -O3 warns falsely, -Wrestrict, on that.)
    error = "no libibverbs.so.1 in";
    for (std::size_t i = 0; i < candidates.size(); ++i)
        error += fmt::format("{}{}", i == 0 ? " " : i + 1 == candidates.size() ? " or " : ", ",
                             candidates[i].lexically_normal().string());
    error += fmt::format(" (where an install and a build tree put it relative to {}, then the configured "
                         "install directory; build it with tools/dev build, or set RDMASIM_LIBDIR)",
                         ec ? "this rdmasim, whose path /proc/self/exe does not tell" : exe.string());
    return "";
}

std::string sample_capture() {
    std::error_code ec;
    const fs::path dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
    std::vector<fs::path> candidates;
    if (!ec && std::string_view(RDMASIM_INSTALLED_SAMPLE_FROM_EXE).size() != 0)
        candidates.push_back(dir / RDMASIM_INSTALLED_SAMPLE_FROM_EXE);
    candidates.emplace_back(RDMASIM_SOURCE_SAMPLE);
    candidates.emplace_back(RDMASIM_INSTALLED_SAMPLE);
    for (const fs::path& f : candidates)
        if (fs::exists(f, ec)) return f.lexically_normal().string();
    return candidates.back().string();
}

} // namespace rdmasim::tools
