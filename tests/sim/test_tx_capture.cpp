// tx_capture: every frame a raw-packet QP sends lands in the pcap file,
// byte for byte, in order (read back through libpcap).
#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include "net/pcap_file_source.hpp"
#include "sim/simulator.hpp"
#include "tests/net/temp_dir.hpp"
#include "tests/sim/port_io_helpers.hpp"

using namespace rdmasim;
using net::test::TempDir;

TEST_CASE("tx_capture records a raw QP's sends byte for byte", "[sim][tx_capture]") {
    TempDir dir;
    const std::string out = dir / "sent.pcap";
    std::vector<std::vector<std::uint8_t>> sent;
    {
        sim::Config c;
        c.engine = sim::EngineKind::inline_;
        REQUIRE(c.set("tx_capture", out));
        auto s = sim::Simulator::create(c);
        REQUIRE(s);
        test::NamedDevice dev(0);
        test::RawSender tx(dev.pd);
        for (unsigned i = 0; i < 25; ++i) {
            auto f = i % 3 == 0 ? test::vlan_frame(static_cast<std::uint16_t>(0x2000 | i), 0x0800, 60 + i * 40)
                                : test::ipv4_tcp_frame(0xc0a80001, 0xc0a80100 + i, 4000 + i, 443,
                                                       test::kDstMac, i * 57);
            sent.push_back(f);
            tx.send(f);
        }
    } // the Simulator's end closes the file

    auto src = net::PcapFileSource::open(out, {});
    INFO((src ? std::string() : src.error().message));
    REQUIRE(src);
    std::vector<std::vector<std::uint8_t>> got;
    std::uint64_t last_ts = 0;
    net::Frame f;
    while (src.value()->next(f)) {
        got.emplace_back(f.data, f.data + f.len);
        CHECK(f.fcs_len == 0);
        CHECK_FALSE(f.truncated());
        CHECK(f.ts_ns >= last_ts); // the port's clock, never backwards
        last_ts = f.ts_ns;
    }
    CHECK(src.value()->failure().empty());
    CHECK(got == sent);
}
