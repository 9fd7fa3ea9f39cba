// libFuzzer target: configuration from untrusted text. The input is used
// twice: split at the first '=' into Config::set(key, value), and written
// whole to a per-process temporary file for Config::apply_toml_file. Every
// outcome must be a value (ok, or an error with a message), never a crash or
// an escaping exception.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "sim/config.hpp"
#include "tests/fuzz/scratch_file.hpp"

namespace {

using namespace rdmasim;

void check(bool ok) {
    if (!ok) __builtin_trap();
}

void check_result(const Result<void>& r) {
    if (!r) check(r.error().code != 0 && !r.error().message.empty());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    {
        sim::Config config;
        const auto eq = text.find('=');
        const std::string_view key = eq == std::string_view::npos ? text : text.substr(0, eq);
        const std::string_view value =
            eq == std::string_view::npos ? std::string_view{} : text.substr(eq + 1);
        const auto r = config.set(key, value);
        check_result(r);
        if (r) check_result(config.validate());
        check(config.devices >= 1 && config.devices <= 16);
        check(config.burst >= 1 && config.burst <= 4096);
        check(config.pcap.size() <= 16);
    }
    static const fuzz::ScratchFile file("rdmasim_fuzz_config", ".toml"); // removed at exit
    if (!file.write(data, size)) return 0;
    sim::Config config;
    const auto r = config.apply_toml_file(file.path());
    check_result(r);
    if (r) check_result(config.validate());
    check(config.caps.pad_align == 64 || config.caps.pad_align == 128);
    return 0;
}
