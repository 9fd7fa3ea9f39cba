#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "sim/config.hpp"
#include "sim/config_reference.hpp"

using rdmasim::sim::Config;

TEST_CASE("config: every key validates its value and names it in the error", "[sim][config]") {
    Config c;
    REQUIRE(c.set("devices", "3"));
    CHECK(c.devices == 3);
    for (auto [k, v] : {std::pair{"devices", "0"}, {"devices", "17"}, {"devices", "x"},
                        {"engine", "fast"}, {"speed", "2"}, {"speed", "-1x"}, {"burst", "0"},
                        {"source_fcs", "2"}, {"caps.delay_drop_timeout_us", "150"},
                        {"caps.delay_drop_timeout_us", "100100"}, {"caps.pad_align", "32"},
                        {"caps.ip_csum", "maybe"}, {"start", "later"}, {"no.such.key", "1"},
                        // Values that would fail only once a program runs (issue 29, item 8).
                        {"wire", "bogus://x"}, {"wire.1", "tap://tap0"}, {"wire", "ptp://"}, {"wire", "vde://"},
                        {"wire", "/tmp/sock"}, {"iface", "a-name-longer-than-15"}, {"iface", "eth/0"},
                        {"pcap_live.2", "eth 0"}, {"filter", "port fourty"}, {"stats", "out/"},
                        {"report", "/tmp/"}, {"trace", "dir/"}, {"tx_capture", "dir/"}}) {
        auto r = c.set(k, v);
        INFO(k << " = " << v);
        REQUIRE_FALSE(r);
        CHECK(r.error().code == EINVAL);
        CHECK(r.error().message.find(k) != std::string::npos);
        CHECK(r.error().message.find(v) != std::string::npos);
    }
    REQUIRE(c.set("speed", "2.5x"));
    CHECK(c.speed == 2.5);
    REQUIRE(c.set("start", "250ms"));
    CHECK(c.start_delay_ns == 250'000'000);
    REQUIRE(c.set("caps.delay_drop_timeout_us", "300"));
    CHECK(c.caps.delay_drop_timeout_ns == 300'000);
    REQUIRE(c.set("caps.cvlan_stripping", "off"));
    CHECK_FALSE(c.caps.cvlan_stripping);
}

TEST_CASE("config: the environment spells the same keys", "[sim][config]") {
    ::setenv("RDMASIM_DEVICES", "2", 1);
    ::setenv("RDMASIM_CAPS_SCATTER_FCS", "off", 1);
    ::setenv("RDMASIM_PCAP_1", "/tmp/x.pcap", 1);
    Config c;
    auto r = c.apply_environment();
    ::unsetenv("RDMASIM_DEVICES");
    ::unsetenv("RDMASIM_CAPS_SCATTER_FCS");
    ::unsetenv("RDMASIM_PCAP_1");
    REQUIRE(r);
    CHECK(c.devices == 2);
    CHECK_FALSE(c.caps.scatter_fcs);
    REQUIRE(c.pcap.size() == 2);
    CHECK(c.pcap[1] == "/tmp/x.pcap");

    ::setenv("RDMASIM_ENGINE", "warp", 1);
    Config d;
    auto bad = d.apply_environment();
    ::unsetenv("RDMASIM_ENGINE");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message.find("RDMASIM_ENGINE") != std::string::npos);
}

TEST_CASE("config: TOML files, with tables for the caps", "[sim][config]") {
    const auto path = std::filesystem::temp_directory_path() / "rdmasim-test-config.toml";
    {
        std::FILE* f = std::fopen(path.c_str(), "w");
        REQUIRE(f);
        std::fputs("devices = 2\nengine = \"inline\"\n[caps]\nip_csum = false\npad_align = 128\n", f);
        std::fclose(f);
    }
    Config c;
    REQUIRE(c.apply_toml_file(path.string()));
    CHECK(c.devices == 2);
    CHECK(c.engine == rdmasim::sim::EngineKind::inline_);
    CHECK_FALSE(c.caps.ip_csum);
    CHECK(c.caps.pad_align == 128);
    {
        std::FILE* f = std::fopen(path.c_str(), "w");
        std::fputs("devices = [1, 2\n", f);
        std::fclose(f);
    }
    auto r = c.apply_toml_file(path.string());
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find(path.string()) != std::string::npos);
    std::filesystem::remove(path);
}

TEST_CASE("config: a bad wire value names the key and the accepted forms", "[sim][config]") {
    Config c;
    auto r = c.set("wire", "bogus://x");
    REQUIRE_FALSE(r);
    CHECK(r.error().message == "configuration: wire = 'bogus://x': expected ptp://PATH, vde://PATH, "
                               "vxvde://GROUP or shm://PATH (libvdeplug's other schemes are refused)");
    CHECK_FALSE(c.set("wire", "shm://"));
    CHECK(c.set("wire", "shm:///tmp/dir/seg"));
    r = c.set("wire", "ptp:///" + std::string(106, 'x'));
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("at most 106 bytes") != std::string::npos);
    CHECK(c.set("wire", "ptp:///" + std::string(105, 'x')));
    CHECK(c.set("wire", "vxvde://"));
    CHECK(c.set("filter", "vlan 7 and udp port 4791"));
    CHECK(c.set("stats", "-"));
    CHECK(c.set("report", "-"));
}

TEST_CASE("config: check_files wants readable captures and an output file's directory", "[sim][config]") {
    const std::string dir =
        (std::filesystem::temp_directory_path() / ("rdmasim-files-" + std::to_string(::getpid()))).string();
    std::filesystem::create_directory(dir);
    auto fails = [](Config& c, int code, const std::string& key) {
        auto r = c.check_files();
        REQUIRE_FALSE(r);
        INFO(r.error().message);
        CHECK(r.error().code == code);
        CHECK(r.error().message.find("configuration: " + key + " = ") == 0);
    };
    {
        Config c;
        REQUIRE(c.set("stats", "-"));
        REQUIRE(c.set("report", dir + "/report.html"));
        CHECK(c.check_files());
        REQUIRE(c.set("stats", dir + "/missing/stats.json"));
        fails(c, ENOENT, "stats");
        REQUIRE(c.set("stats", dir));
        fails(c, EISDIR, "stats");
    }
    {
        Config c;
        REQUIRE(c.set("pcap", dir + "/none.pcap"));
        fails(c, ENOENT, "pcap");
        REQUIRE(c.set("pcap", dir));
        fails(c, EISDIR, "pcap");
    }
    {
        Config c;
        REQUIRE(c.set("devices", "2"));
        REQUIRE(c.set("tx_capture.1", dir + "/no/such/dir.pcap"));
        fails(c, ENOENT, "tx_capture.1");
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("config: a pcap for a device that does not exist is refused", "[sim][config]") {
    Config c;
    REQUIRE(c.set("pcap.3", "/tmp/a.pcap"));
    auto r = c.validate();
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("pcap.3") != std::string::npos);
}

TEST_CASE("config: per-device sources, one per device, and links between devices",
          "[sim][config]") {
    Config c;
    REQUIRE(c.set("devices", "3"));
    REQUIRE(c.set("iface", "veth0"));
    REQUIRE(c.set("wire.1", "ptp:///tmp/w"));
    REQUIRE(c.set("tx_capture.2", "/tmp/out.pcap"));
    REQUIRE(c.set("promisc", "on"));
    CHECK(c.iface == std::vector<std::string>{"veth0"});
    CHECK(c.wire.size() == 2);
    CHECK(c.wire[1] == "ptp:///tmp/w");
    CHECK(c.promisc);
    CHECK(c.validate());

    SECTION("two sources for one device are refused, naming both") {
        REQUIRE(c.set("pcap", "/tmp/a.pcap"));
        auto r = c.validate();
        REQUIRE_FALSE(r);
        CHECK(r.error().message.find("iface = 'veth0'") != std::string::npos);
        CHECK(r.error().message.find("pcap = '/tmp/a.pcap'") != std::string::npos);
    }
    SECTION("a link is a source for both ends") {
        REQUIRE(c.set("link", "rdmasim2:rdmasim0"));
        CHECK(c.links == std::vector<std::pair<std::uint32_t, std::uint32_t>>{{2, 0}});
        auto r = c.validate();
        REQUIRE_FALSE(r);
        CHECK(r.error().message.find("link rdmasim2:rdmasim0") != std::string::npos);
    }
    SECTION("a key for a device that does not exist") {
        REQUIRE(c.set("pcap_live.5", "lo"));
        auto r = c.validate();
        REQUIRE_FALSE(r);
        CHECK(r.error().message.find("pcap_live.5") != std::string::npos);
    }
    for (const char* bad : {"rdmasim0", "rdmasim0:rdmasim0", "rdmasim0:eth0", "rdmasim0:rdmasim16", ""}) {
        INFO(bad);
        CHECK_FALSE(c.set("link", bad));
    }
    CHECK_FALSE(c.set("iface.x", "veth0"));
    CHECK_FALSE(c.set("promisc", "maybe"));

    ::setenv("RDMASIM_WIRE_2", "vde:///tmp/sw", 1);
    Config e;
    auto r = e.apply_environment();
    ::unsetenv("RDMASIM_WIRE_2");
    REQUIRE(r);
    REQUIRE(e.wire.size() == 3);
    CHECK(e.wire[2] == "vde:///tmp/sw");
}

TEST_CASE("config: wire_mode, octal with owner read and write, in its three spellings", "[sim][config]") {
    Config c;
    CHECK(c.wire_mode == 0600); // the owner's only, unless widened
    REQUIRE(c.set("wire_mode", "0660"));
    CHECK(c.wire_mode == 0660);
    REQUIRE(c.set("wire_mode", "666"));
    CHECK(c.wire_mode == 0666);
    for (const char* bad : {"", "0400", "0200", "0800", "1777", "rw", "-600", "+600", "00600x"}) {
        INFO(bad);
        auto r = c.set("wire_mode", bad);
        REQUIRE_FALSE(r);
        CHECK(r.error().message.find("wire_mode") != std::string::npos);
        CHECK(r.error().message.find("owner read and write") != std::string::npos);
    }

    ::setenv("RDMASIM_WIRE_MODE", "0640", 1);
    Config e;
    auto r = e.apply_environment();
    ::unsetenv("RDMASIM_WIRE_MODE");
    REQUIRE(r);
    CHECK(e.wire_mode == 0640);

    const auto path = std::filesystem::temp_directory_path() /
                      ("rdmasim-test-wire-mode-" + std::to_string(::getpid()) + ".toml");
    {
        std::FILE* f = std::fopen(path.c_str(), "w");
        REQUIRE(f);
        std::fputs("wire = \"ptp:///tmp/w\"\nwire_mode = \"0660\"\n", f);
        std::fclose(f);
    }
    Config t;
    auto tr = t.apply_toml_file(path.string());
    std::filesystem::remove(path);
    REQUIRE(tr);
    CHECK(t.wire_mode == 0660);
    CHECK(t.wire == std::vector<std::string>{"ptp:///tmp/w"});
}

TEST_CASE("config: every key of the reference table, in its three spellings", "[sim][config]") {
    using rdmasim::sim::KeyInfo;
    const auto path = std::filesystem::temp_directory_path() /
                      ("rdmasim-test-spellings-" + std::to_string(::getpid()) + ".toml");
    for (const KeyInfo& info : Config::keys()) {
        const std::string key = rdmasim::sim::example_key(info);
        const std::string value(info.example);
        INFO(info.key << ": " << key << " = " << value);
        REQUIRE(Config::find_key(key) == &info);
        CHECK_FALSE(info.values.empty());
        CHECK_FALSE(info.default_value.empty());
        CHECK_FALSE(info.description.empty());
        CHECK((info.flag.empty() || info.flag.starts_with("--")));

        Config by_set; // --set KEY=VALUE and every dedicated option
        auto s = by_set.set(key, value);
        CHECK(s);

        const std::string name = rdmasim::sim::environment_name(key);
        ::setenv(name.c_str(), value.c_str(), 1);
        Config by_env;
        auto e = by_env.apply_environment();
        ::unsetenv(name.c_str());
        CHECK(e);

        {
            std::FILE* f = std::fopen(path.c_str(), "w");
            REQUIRE(f);
            std::fprintf(f, "%s\n", rdmasim::sim::toml_spelling(info).c_str());
            std::fclose(f);
        }
        Config by_toml;
        auto t = by_toml.apply_toml_file(path.string());
        CHECK(t);
        if (!s || !e || !t)
            FAIL_CHECK((!s ? s.error().message : !e ? e.error().message : t.error().message));
    }
    std::filesystem::remove(path);

    // A key outside the table is refused, whatever set() would make of it.
    CHECK(Config::find_key("pcap.x") == Config::find_key("pcap.N"));
    for (const char* unknown : {"caps", "pcapx", "pcap.", "caps.hold_frames", "deterministic.1"}) {
        INFO(unknown);
        CHECK(Config::find_key(unknown) == nullptr);
        auto r = Config{}.set(unknown, "1");
        REQUIRE_FALSE(r);
        CHECK(r.error().message.find("unknown key") != std::string::npos);
    }
}

TEST_CASE("config: the reference table has one row per key, each spelling named", "[sim][config]") {
    const std::string table = rdmasim::sim::reference_markdown();
    std::size_t rows = 0;
    for (std::size_t at = 0; (at = table.find('\n', at)) != std::string::npos; ++at) ++rows;
    CHECK(rows == Config::keys().size() + 2);
    CHECK(table.find("| `caps.pad_align` | 64, 128 | 64 | `caps.pad_align = 128` | "
                     "`RDMASIM_CAPS_PAD_ALIGN=128` | `--set caps.pad_align=128` |") != std::string::npos);
    CHECK(table.find("`--faults 'seed=7; drop:p=0.01'`, `--set 'faults=seed=7; drop:p=0.01'`") !=
          std::string::npos);
    CHECK(table.find("| `pcap.N` |") != std::string::npos);
    CHECK(table.find("`RDMASIM_PCAP_1=capture.pcap`") != std::string::npos);
    CHECK(table.find("`--promisc`, `--set promisc=on`") != std::string::npos);
    CHECK(table.find("`promisc = true`") != std::string::npos);
}
