#include "sim/rank.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "sim/config_parse.hpp"

namespace rdmasim::sim {

namespace {

// `bytes` as one big-endian number plus `add`; false when it carries out.
template <std::size_t N>
bool add_be(std::array<std::uint8_t, N>& bytes, std::size_t from, std::uint64_t add) {
    for (std::size_t i = N; i-- > from && add != 0;) {
        const std::uint64_t sum = bytes[i] + (add & 0xff);
        bytes[i] = static_cast<std::uint8_t>(sum);
        add = (add >> 8) + (sum >> 8);
    }
    return add == 0;
}

// "dir/stats.json" -> "dir/stats.rank2.json"; "-" (standard output) stays.
std::string ranked(const std::string& path, std::uint32_t rank) {
    if (path.empty() || path == "-") return path;
    const std::filesystem::path p(path);
    return (p.parent_path() /
            fmt::format("{}.rank{}{}", p.stem().string(), rank, p.extension().string()))
        .string();
}

Result<void> bad_move(std::string_view key, std::uint32_t rank) {
    return make_error(EINVAL,
                      fmt::format("configuration: {} moved by rank {} leaves the valid range "
                                  "(set rank = off, or addresses further from the top)",
                                  key, rank));
}

} // namespace

std::optional<std::uint32_t> launcher_local_rank() {
    for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
        const char* v = std::getenv(name);
        if (v == nullptr) continue;
        if (auto n = config_parse::parse_uint<std::uint32_t>(v, 0, kMaxRank)) return *n;
    }
    return std::nullopt;
}

std::optional<std::uint32_t> process_rank(const Config& config) {
    if (config.rank_auto) return launcher_local_rank();
    return config.rank;
}

Result<void> apply_rank(Config& config) {
    const auto rank = process_rank(config);
    if (!rank) return {};
    const std::uint64_t shift = std::uint64_t{*rank} * config.devices;
    for (std::size_t i = 0; i < config.ports.size(); ++i) {
        PortSettings& port = config.ports[i];
        const std::string n = i == 0 ? "" : fmt::format(".{}", i);
        if (port.mac && !add_be(*port.mac, 0, shift)) return bad_move("mac" + n, *rank);
        if (port.ip && (!add_be(*port.ip, 0, shift) || (*port.ip)[0] >= 224))
            return bad_move("ip" + n, *rank);
        if (port.ip6 && !add_be(*port.ip6, 12, shift)) return bad_move("ip6" + n, *rank);
    }
    for (auto& path : config.tx_capture)
        path = ranked(path, *rank);
    for (std::string* path : {&config.trace, &config.stats, &config.report})
        *path = ranked(*path, *rank);
    return {};
}

} // namespace rdmasim::sim
