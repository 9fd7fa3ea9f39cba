// roce_frames: RoCE v2 frames for an independent check of net/roce_frame.*
// (tests/tools/roce_codec_test.py runs it, scapy and tshark).
//
//   roce_frames write OUT.pcap   every opcode, IPv4 and IPv6, several payload
//                                lengths; one line per frame on stdout:
//                                "N ipv4|ipv6 OPCODE PSN DESTQP PAYLOAD_LEN" (decimal)
//   roce_frames check IN.pcap    parses each frame; one line per frame:
//                                "N DROP OPCODE PSN DESTQP PAYLOAD_LEN" (DROP none when valid)
//   roce_frames bench [N]        builds and parses N (default 2,000,000) IPv4
//                                RC SEND_MIDDLE frames per payload size; prints
//                                ns per build and per parse
//
// Frames are numbered from 1, as tshark numbers them. Exit 0, or 1 with a
// message on stderr when a file cannot be written or read.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "net/frame.hpp"
#include "net/pcap_file_source.hpp"
#include "net/pcap_writer.hpp"
#include "net/roce_frame.hpp"

using namespace rdmasim::net;

namespace {

int write_frames(const std::string& path) {
    auto writer = PcapWriter::open(path);
    if (!writer) {
        std::fprintf(stderr, "roce_frames: %s\n", writer.error().message.c_str());
        return 1;
    }
    std::vector<std::uint8_t> payload(4096 + 3);
    for (std::size_t i = 0; i < payload.size(); ++i)
        payload[i] = static_cast<std::uint8_t>(i * 31 + 7);
    std::vector<std::uint8_t> out(9000);
    std::uint32_t psn = 0xfffff0; // wraps through 0 on the way
    std::uint64_t n = 0;
    const OpcodeInfo* table = opcode_table_begin();
    for (const bool ipv6 : {false, true}) {
        RocePath path;
        path.dst_mac = {0x02, 0, 0, 0, 0, 0x02};
        path.src_mac = {0x02, 0, 0, 0, 0, 0x01};
        if (ipv6) {
            path.sgid = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
            path.dgid = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
            path.flow_label = 0xabcde;
        } else {
            const std::uint8_t a[4] = {192, 0, 2, 1}, b[4] = {192, 0, 2, 2};
            path.sgid = ipv4_mapped_gid(a);
            path.dgid = ipv4_mapped_gid(b);
        }
        path.traffic_class = 0x6a; // DSCP 26, ECN 2 (ECT(0))
        for (std::size_t i = 0; i < opcode_table_size(); ++i) {
            const OpcodeInfo& info = table[i];
            const std::vector<std::size_t> lengths =
                info.has_payload ? std::vector<std::size_t>{0, 1, 2, 3, 4, 1023, 4096}
                                 : std::vector<std::size_t>{0};
            for (const std::size_t len : lengths) {
                RoceHeaders h;
                h.bth.opcode = static_cast<std::uint8_t>(info.opcode);
                h.bth.psn = psn;
                h.bth.dest_qp = static_cast<std::uint32_t>(0x100 + i);
                h.bth.ack_req = info.transport == RoceTransport::rc;
                h.xrceth = {0x000789};
                h.deth = {0x11111111, 0x000456};
                h.reth = {0x7f0000001000 + len, 0x1234, static_cast<std::uint32_t>(len)};
                h.atomic_eth = {0x7f0000002000, 0x5678, 1, 2};
                h.aeth = {Aeth::make_syndrome(AckKind::ack, kCreditsInvalid), psn};
                h.atomic_ack_eth = {0x0102030405060708};
                h.imm = {0xcafe0000u + static_cast<std::uint32_t>(i)};
                h.ieth = {0x00beef00};
                path.udp_src_port = roce_udp_src_port(roce_flow_label(0x11, h.bth.dest_qp));
                const auto r = build_roce_frame(path, h, std::span(payload).first(len), out);
                if (r.error != RoceBuildError::none) {
                    std::fprintf(stderr, "roce_frames: %s %s: %s\n", transport_name(info.transport),
                                 info.name, roce_build_error_name(r.error));
                    return 1;
                }
                (*writer.value())
                    .write(std::span(out).first(r.len), 1'700'000'000'000'000'000ull + n * 1000);
                std::printf("%llu %s %u %u %u %zu\n", static_cast<unsigned long long>(++n),
                            ipv6 ? "ipv6" : "ipv4", h.bth.opcode, psn, h.bth.dest_qp, len);
                psn = psn_add(psn, 1);
            }
        }
    }
    if (auto closed = writer.value()->close(); !closed) {
        std::fprintf(stderr, "roce_frames: %s\n", closed.error().message.c_str());
        return 1;
    }
    return 0;
}

int check_frames(const std::string& path) {
    auto source = PcapFileSource::open(path);
    if (!source) {
        std::fprintf(stderr, "roce_frames: %s\n", source.error().message.c_str());
        return 1;
    }
    Frame frame;
    std::uint64_t n = 0;
    while (source.value()->next(frame)) {
        RocePacket p;
        const RoceDrop drop = parse_roce_frame(frame.payload(), p);
        if (drop == RoceDrop::none)
            std::printf("%llu none %u %u %u %zu\n", static_cast<unsigned long long>(++n),
                        p.headers.bth.opcode, p.headers.bth.psn, p.headers.bth.dest_qp,
                        p.payload.size());
        else
            std::printf("%llu %s - - - -\n", static_cast<unsigned long long>(++n),
                        roce_drop_name(drop));
    }
    if (const std::string_view why = source.value()->failure(); !why.empty()) {
        std::fprintf(stderr, "roce_frames: %.*s\n", static_cast<int>(why.size()), why.data());
        return 1;
    }
    return 0;
}

int bench(std::uint64_t n) {
    RocePath path;
    const std::uint8_t a[4] = {192, 0, 2, 1}, b[4] = {192, 0, 2, 2};
    path.sgid = ipv4_mapped_gid(a);
    path.dgid = ipv4_mapped_gid(b);
    RoceHeaders h;
    h.bth.opcode = static_cast<std::uint8_t>(RoceOpcode::rc_send_middle);
    std::vector<std::uint8_t> payload(4096, 0x5a), out(4200);
    using clock = std::chrono::steady_clock;
    for (const std::size_t len : {64u, 1024u, 4096u}) {
        const std::size_t frame_len = roce_frame_len(path, h.bth.opcode, len);
        std::uint64_t built = 0, valid = 0;
        const auto t0 = clock::now();
        for (std::uint64_t i = 0; i < n; ++i) {
            h.bth.psn = static_cast<std::uint32_t>(i) & kPsnMask;
            built += build_roce_frame(path, h, std::span(payload).first(len), out).len;
        }
        const auto t1 = clock::now();
        for (std::uint64_t i = 0; i < n; ++i) {
            RocePacket p;
            valid += parse_roce_frame(std::span(out).first(frame_len), p) == RoceDrop::none;
        }
        const auto t2 = clock::now();
        if (built != n * frame_len || valid != n) {
            std::fprintf(stderr, "roce_frames bench: %llu bytes built, %llu frames valid\n",
                         static_cast<unsigned long long>(built),
                         static_cast<unsigned long long>(valid));
            return 1;
        }
        const double build_ns =
            std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(n);
        const double parse_ns =
            std::chrono::duration<double, std::nano>(t2 - t1).count() / static_cast<double>(n);
        std::printf(
            "payload %4zu B (frame %4zu B): build %6.1f ns, parse with ICRC check %6.1f ns\n", len,
            frame_len, build_ns, parse_ns);
    }
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    if (argc == 3 && std::strcmp(argv[1], "write") == 0) return write_frames(argv[2]);
    if (argc == 3 && std::strcmp(argv[1], "check") == 0) return check_frames(argv[2]);
    if ((argc == 2 || argc == 3) && std::strcmp(argv[1], "bench") == 0)
        return bench(argc == 3 ? std::strtoull(argv[2], nullptr, 10) : 2'000'000);
    std::fprintf(
        stderr,
        "usage: roce_frames write OUT.pcap | roce_frames check IN.pcap | roce_frames bench [N]\n");
    return 2;
}
