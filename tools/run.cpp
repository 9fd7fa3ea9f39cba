#include "tools/run.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>

#include "sim/config.hpp"

#ifndef RDMASIM_LIBDIR
#error "RDMASIM_LIBDIR must name the directory of the built libibverbs.so.1"
#endif

namespace rdmasim::tools {

namespace {

// Where libibverbs.so.1 is: RDMASIM_LIBDIR, else the build tree this tool came from.
std::string library_dir() {
    if (const char* d = std::getenv("RDMASIM_LIBDIR"); d && *d) return d;
    return RDMASIM_LIBDIR;
}

std::string shell_quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

// A ptp:// or vde:// wire URL with its socket path made absolute (the
// program may change directory); other values as they are.
std::string absolute_wire(const std::string& url) {
    for (const std::string_view scheme : {"ptp://", "vde://"}) {
        if (!url.starts_with(scheme) || url.size() == scheme.size()) continue;
        const std::string path = url.substr(scheme.size());
        return std::string(scheme) + std::filesystem::absolute(path).string();
    }
    return url;
}

} // namespace

bool run_environment(const RunOptions& o, std::vector<std::pair<std::string, std::string>>& env,
                     std::string& error) {
    sim::Config check; // validate here, so a typo fails before the program starts
    for (const auto& [k, v] : o.settings) {
        if (auto r = check.set(k, v); !r) {
            error = r.error().message;
            return false;
        }
    }
    if (auto r = check.validate(); !r) {
        error = r.error().message;
        return false;
    }
    const std::string dir = library_dir();
    if (!std::filesystem::exists(std::filesystem::path(dir) / "libibverbs.so.1")) {
        error = "no libibverbs.so.1 in " + dir + " (build it with tools/dev build, or set RDMASIM_LIBDIR)";
        return false;
    }
    std::string path = dir;
    if (const char* old = std::getenv("LD_LIBRARY_PATH"); old && *old) path += std::string(":") + old;
    env.emplace_back("LD_LIBRARY_PATH", path);
    for (const auto& [k, v] : o.settings) {
        // Capture paths are made absolute: the program may change directory.
        const bool path = k == "pcap" || k.starts_with("pcap.") || k == "tx_capture" ||
                          k.starts_with("tx_capture.") || k == "trace" || k == "stats";
        const bool wire = k == "wire" || k.starts_with("wire.");
        env.emplace_back(sim::environment_name(k), path ? std::filesystem::absolute(v).string()
                                                   : wire ? absolute_wire(v) : v);
    }
    return true;
}

int run_command(const RunOptions& o) {
    if (o.command.empty()) {
        std::fprintf(stderr, "rdmasim run: no command (usage: rdmasim run [options] -- CMD [ARGS])\n");
        return 2;
    }
    std::vector<std::pair<std::string, std::string>> env;
    std::string error;
    if (!run_environment(o, env, error)) {
        std::fprintf(stderr, "rdmasim run: %s\n", error.c_str());
        return 2;
    }
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> argv;
    for (const auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "rdmasim run: cannot run %s: %s\n", argv[0], std::strerror(errno));
    return errno == ENOENT ? 127 : 126;
}

int print_environment(const RunOptions& o) {
    std::vector<std::pair<std::string, std::string>> env;
    std::string error;
    if (!run_environment(o, env, error)) {
        std::fprintf(stderr, "rdmasim env: %s\n", error.c_str());
        return 2;
    }
    for (const auto& [k, v] : env) std::printf("export %s=%s\n", k.c_str(), shell_quote(v).c_str());
    return 0;
}

} // namespace rdmasim::tools
