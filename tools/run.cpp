#include "tools/run.hpp"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <string>
#include <string_view>
#include <vector>

#include "net/socket_dir.hpp"
#include "net/vde_wire.hpp"
#include "sim/config.hpp"
#include "tools/device_nodes.hpp"
#include "tools/exit_codes.hpp"
#include "tools/install_paths.hpp"


namespace rdmasim::tools {

namespace {

namespace fs = std::filesystem;

std::string shell_quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

// A ptp://, vde:// or shm:// wire URL with its path made absolute (the
// program may change directory); other values as they are.
std::string absolute_wire(const std::string& url) {
    for (const std::string_view scheme : {"ptp://", "vde://", "shm://"}) {
        if (!url.starts_with(scheme) || url.size() == scheme.size()) continue;
        const std::string path = url.substr(scheme.size());
        return std::string(scheme) + fs::absolute(path).string();
    }
    return url;
}

bool capture_key(const std::string& k) { return k == "pcap" || k.starts_with("pcap."); }

// A ptp:// or shm:// wire's directory, checked as the program's end will check
// it (net/socket_dir.hpp), so that an unsafe one stops `run` itself: the
// error names the directory and why (status 1: the file system, not the
// command, is at fault). The path's length is checked once made absolute.
int check_wires(const sim::Config& config, std::string& error) {
    for (std::size_t i = 0; i < config.wire.size(); ++i) {
        const std::string& url = config.wire[i];
        if (!url.starts_with("ptp://") && !url.starts_with("shm://")) continue;
        const std::string key = i == 0 ? "wire" : fmt::format("wire.{}", i);
        const std::string path = absolute_wire(url).substr(6);
        if (url.starts_with("ptp://") && path.size() > net::VdeWire::kMaxPtpPath) {
            error = fmt::format("configuration: {} = '{}': expected a ptp:// socket path of at most {} bytes "
                                "(made absolute it has {})", key, url, net::VdeWire::kMaxPtpPath, path.size());
            return kExitUsage;
        }
        if (auto r = net::check_socket_directory(net::socket_directory(path)); !r) {
            error = fmt::format("{} = '{}': {}", key, url, r.error().message);
            return kExitRuntime;
        }
    }
    return kExitOk;
}

// The signals `run` passes on to the program when they are sent to rdmasim
// itself; those the terminal sends reach the program directly.
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM};

// Runs the command as a child with the environment set (and, as `config`
// asks, its devices' nodes: tools/device_nodes.hpp), passes signals on, and
// returns its status: its exit code, or 128+N after signal N.
int run_child(const RunOptions& o, const sim::Config& config) {
    sigset_t waited, old;
    sigemptyset(&waited);
    for (int s : kForwarded) sigaddset(&waited, s);
    sigaddset(&waited, SIGCHLD);
    sigprocmask(SIG_BLOCK, &waited, &old);
    const pid_t parent = ::getpid();
    const pid_t child = ::fork();
    if (child < 0) {
        std::fprintf(stderr, "rdmasim run: cannot start %s: fork: %s\n", o.command[0].c_str(), std::strerror(errno));
        return kExitRuntime;
    }
    if (child == 0) {
        // The program does not outlive rdmasim (a SIGKILL cannot be passed on).
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(kExitRuntime);
        sigprocmask(SIG_SETMASK, &old, nullptr);
        if (!apply_device_nodes(config)) ::_exit(kExitRuntime);
        std::vector<char*> argv;
        for (const auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        ::execvp(argv[0], argv.data());
        const int err = errno;
        std::fprintf(stderr, "rdmasim run: cannot run %s: %s\n", argv[0], std::strerror(err));
        ::_exit(err == ENOENT ? 127 : 126); // as a shell says it
    }
    for (;;) {
        siginfo_t info{};
        if (::sigwaitinfo(&waited, &info) < 0) continue; // EINTR
        if (info.si_signo != SIGCHLD) {
            // Sent by a process (kill), not by the terminal to the whole group.
            if (info.si_code != SI_KERNEL) ::kill(child, info.si_signo);
            continue;
        }
        int status = 0;
        const pid_t done = ::waitpid(child, &status, WNOHANG);
        if (done != child) continue;
        if (WIFEXITED(status)) return WEXITSTATUS(status);
        if (WIFSIGNALED(status)) {
            const int sig = WTERMSIG(status);
            if (sig != SIGINT && sig != SIGPIPE) // what a shell says, too
                std::fprintf(stderr, "rdmasim run: %s: %s%s\n", o.command[0].c_str(), strsignal(sig),
                             WCOREDUMP(status) ? " (core dumped)" : "");
            return 128 + sig;
        }
    }
}

// run_environment, with the configuration the program will get in `check`.
int prepare_environment(const RunOptions& o, std::vector<std::pair<std::string, std::string>>& env,
                        std::string& error, sim::Config& check) {
    // The configuration the program will get (RDMASIM_CONFIG, RDMASIM_*, then
    // the options), checked here so that nothing fails once it runs.
    auto config_error = [&](const Error& e) {
        error = e.message;
        return config_error_status(e.code);
    };
    if (auto r = check.apply_environment(); !r) return config_error(r.error());
    for (const auto& [k, v] : o.settings)
        if (auto r = check.set(k, v); !r) return config_error(r.error());
    if (auto r = check.validate(); !r) return config_error(r.error());
    if (check.start == sim::StartTrigger::manual) {
        error = "configuration: start = 'manual': expected first-flow, now or a delay like 250ms (manual waits "
                "for Engine::begin(), which only a program that creates the Simulator itself can call)";
        return kExitUsage;
    }
    if (auto r = check.check_files(); !r) return config_error(r.error());
    if (const int status = check_wires(check, error); status != kExitOk) return status;
    const std::string dir = drop_in_library_dir(error);
    if (dir.empty()) return kExitRuntime;
    std::string path = dir;
    if (const char* old = std::getenv("LD_LIBRARY_PATH"); old && *old) path += std::string(":") + old;
    env.emplace_back("LD_LIBRARY_PATH", path);
    for (const auto& [k, v] : o.settings) {
        // Capture paths are made absolute: the program may change directory.
        // "-" is standard output for stats and report, not a file.
        const bool path = capture_key(k) || k == "tx_capture" || k.starts_with("tx_capture.") || k == "trace" ||
                          ((k == "stats" || k == "report") && v != "-");
        const bool wire = k == "wire" || k.starts_with("wire.");
        env.emplace_back(sim::environment_name(k), path ? fs::absolute(v).string()
                                                   : wire ? absolute_wire(v) : v);
    }
    return kExitOk;
}

} // namespace

int run_environment(const RunOptions& o, std::vector<std::pair<std::string, std::string>>& env,
                    std::string& error) {
    sim::Config config;
    return prepare_environment(o, env, error, config);
}

int run_command(const RunOptions& o) {
    if (o.command.empty()) {
        std::fprintf(stderr, "rdmasim run: no command (usage: rdmasim run [options] -- CMD [ARGS])\n");
        return kExitUsage;
    }
    std::vector<std::pair<std::string, std::string>> env;
    std::string error;
    sim::Config config;
    if (const int status = prepare_environment(o, env, error, config); status != kExitOk) {
        std::fprintf(stderr, "rdmasim run: %s\n", error.c_str());
        return status;
    }
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    std::fflush(nullptr);
    return run_child(o, config);
}

int print_environment(const RunOptions& o) {
    std::vector<std::pair<std::string, std::string>> env;
    std::string error;
    if (const int status = run_environment(o, env, error); status != kExitOk) {
        std::fprintf(stderr, "rdmasim env: %s\n", error.c_str());
        return status;
    }
    for (const auto& [k, v] : env) std::printf("export %s=%s\n", k.c_str(), shell_quote(v).c_str());
    return kExitOk;
}

} // namespace rdmasim::tools
