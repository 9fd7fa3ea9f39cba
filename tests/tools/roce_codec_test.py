#!/usr/bin/python3
"""RoCE v2 frames of net/roce_frame.* checked by independent implementations.

Usage: /usr/bin/python3 tests/tools/roce_codec_test.py ROCE_FRAMES

ROCE_FRAMES is build/tests/roce_frames (tests/net/roce_frames.cpp).

1. `roce_frames write` writes every opcode (IPv4 and IPv6, payloads 0..4096
   bytes) to a pcap and lists what it wrote. scapy reads each frame back:
   the ICRC must equal scapy's RoCE contrib computation (IPv4) or zlib.crc32
   over the masked headers as annex A17 describes them (IPv6, which scapy's
   layer does not cover); IP and UDP header fields must be as RoCE v2
   hardware sends them.
2. tshark decodes the same file as InfiniBand over UDP (RRoCE) with the listed opcodes,
   PSNs and destination QPs, and finds the ICRC where it belongs (where it
   decodes the opcode past the BTH: Wireshark 4.0 does not for XRC and ATOMIC WRITE).
3. scapy builds frames (its own ICRC) and `roce_frames check` must accept
   them with the right fields, and refuse damaged copies for the right
   reason.

Exits 0 when all holds, 1 on the first difference, 77 (skip) without tshark.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import zlib

from scapy.all import Ether, IP, IPv6, UDP, Raw, rdpcap, wrpcap, load_contrib, raw  # noqa: E402

load_contrib("roce")
from scapy.contrib.roce import BTH, AETH  # noqa: E402

ROCE_PORT = 4791


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def masked_icrc(datagram):
    """The ICRC of an IP datagram (without its ICRC), masked per annex A17."""
    b = bytearray(datagram)
    if b[0] >> 4 == 4:
        ihl = (b[0] & 0x0F) * 4
        b[1] = 0xFF
        b[8] = 0xFF
        b[10] = b[11] = 0xFF
    else:
        ihl = 40
        b[0] |= 0x0F
        b[1] = b[2] = b[3] = 0xFF
        b[7] = 0xFF
    b[ihl + 6] = b[ihl + 7] = 0xFF  # UDP checksum
    b[ihl + 8 + 4] = 0xFF  # BTH byte 4: FECN, BECN, resv6
    return zlib.crc32(b"\xff" * 8 + bytes(b)).to_bytes(4, "little")


def ip_datagram(frame):
    """The IP datagram of an untagged frame, Ethernet padding cut off."""
    if frame[12:14] == b"\x08\x00":
        total = int.from_bytes(frame[16:18], "big")
    else:
        total = 40 + int.from_bytes(frame[18:20], "big")
    return frame[14 : 14 + total]


def check_written(tool, tmp):
    pcap = os.path.join(tmp, "written.pcap")
    out = subprocess.run([tool, "write", pcap], check=True, capture_output=True, text=True).stdout
    expected = []
    for line in out.splitlines():
        n, family, opcode, psn, dqp, length = line.split()
        expected.append((int(n), family, int(opcode), int(psn), int(dqp), int(length)))
    if len(expected) < 400:
        fail(f"roce_frames wrote {len(expected)} frames, expected every opcode in both families")

    frames = rdpcap(pcap)
    if len(frames) != len(expected):
        fail(f"{pcap}: {len(frames)} frames, roce_frames listed {len(expected)}")
    wraps = 0
    for pkt, (n, family, opcode, psn, dqp, length) in zip(frames, expected):
        wire = raw(pkt)
        if len(wire) < 60:
            fail(f"frame {n}: {len(wire)} bytes, shorter than the 60-byte Ethernet minimum")
        datagram = ip_datagram(wire)
        p = Ether(wire[:14] + datagram)  # without Ethernet padding
        if BTH not in p:
            fail(f"frame {n}: scapy finds no BTH: {p.summary()}")
        if family == "ipv4":
            ip = p[IP]
            if ip.flags != "DF" or ip.frag != 0 or ip.proto != 17 or ip.tos != 0x6A:
                fail(f"frame {n}: IPv4 header {ip.flags} frag {ip.frag} proto {ip.proto} tos {ip.tos:#x}")
            copy = IP(raw(ip))
            del copy.chksum
            if IP(raw(copy)).chksum != ip.chksum:
                fail(f"frame {n}: IPv4 header checksum {ip.chksum:#x} is wrong")
            # scapy's own ICRC: compute_icrc walks the underlayers of its BTH.
            theirs = p[BTH].compute_icrc(None)
        else:
            ip6 = p[IPv6]
            if ip6.tc != 0x6A or ip6.fl != 0xABCDE or ip6.nh != 17:
                fail(f"frame {n}: IPv6 header tc {ip6.tc:#x} fl {ip6.fl:#x} nh {ip6.nh}")
            theirs = masked_icrc(datagram[:-4])
        if datagram[-4:] != theirs:
            fail(f"frame {n} ({family} opcode {opcode:#x}): ICRC {datagram[-4:].hex()} != {theirs.hex()}")
        if family == "ipv4" and masked_icrc(datagram[:-4]) != theirs:
            fail(f"frame {n}: this script's masking disagrees with scapy's")
        udp = p[UDP]
        if udp.dport != ROCE_PORT or udp.chksum != 0 or not 0xC000 <= udp.sport <= 0xFFFF:
            fail(f"frame {n}: UDP {udp.sport} -> {udp.dport}, checksum {udp.chksum:#x}")
        bth = p[BTH]
        if (bth.opcode, bth.psn, bth.dqpn) != (opcode, psn, dqp):
            fail(f"frame {n}: scapy reads opcode {bth.opcode} psn {bth.psn} dqpn {bth.dqpn}, "
                 f"roce_frames wrote {opcode} {psn} {dqp}")
        if bth.padcount != (4 - length % 4) % 4 or bth.version != 0:
            fail(f"frame {n}: pad count {bth.padcount} for a {length}-byte payload, TVer {bth.version}")
        wraps += psn == 0
    if wraps != 1:
        fail("the PSNs written did not wrap through 0 exactly once")
    print(f"scapy: {len(frames)} frames, every ICRC and header as expected")
    return pcap, expected


def check_tshark(pcap, expected):
    # The Mellanox EoIB heuristic takes an empty UD payload for its own header
    # and then shows no ICRC: it is turned off, as is RPC-over-RDMA's.
    cmd = ["tshark", "-r", pcap, "-d", f"udp.port=={ROCE_PORT},infiniband",
           "--disable-protocol", "rpcordma", "--disable-heuristic", "mellanox_eoib",
           "-T", "fields", "-E", "separator=,",
           "-e", "frame.number", "-e", "frame.protocols", "-e", "infiniband.bth.opcode",
           "-e", "infiniband.bth.psn", "-e", "infiniband.bth.destqp", "-e", "infiniband.invariant.crc"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        fail(f"{' '.join(cmd)}: exit {res.returncode}: {res.stderr}")
    lines = res.stdout.splitlines()
    if len(lines) != len(expected):
        fail(f"tshark decoded {len(lines)} frames, expected {len(expected)}")
    frames = rdpcap(pcap)
    undecoded = 0
    for line, (n, family, opcode, psn, dqp, _length), pkt in zip(lines, expected, frames):
        number, protos, t_opcode, t_psn, t_dqp, t_icrc = line.split(",")
        if int(number) != n or ":udp:infiniband" not in protos:
            fail(f"tshark frame {number}: protocols {protos!r}, expected ...:udp:infiniband")
        if (int(t_opcode), int(t_psn), int(t_dqp, 0)) != (opcode, psn, dqp):
            fail(f"tshark frame {n} ({family}): opcode {t_opcode} psn {t_psn} destqp {t_dqp}, "
                 f"expected {opcode} {psn} {dqp}")
        # tshark shows the four ICRC bytes as a big-endian number. Wireshark 4.0
        # decodes neither XRC (0xa0..) nor ATOMIC WRITE (0x1d) past the BTH:
        # for those it finds no ICRC, and the checks above are all it can give.
        icrc = ip_datagram(raw(pkt))[-4:]
        if t_icrc == "" and (opcode >= 0xA0 or opcode == 0x1D):
            undecoded += 1
            continue
        if int(t_icrc, 0) != int.from_bytes(icrc, "big"):
            fail(f"tshark frame {n}: invariant CRC {t_icrc}, the frame ends in {icrc.hex()}")
    print(f"tshark: {len(lines)} frames decoded as InfiniBand with the expected opcodes and PSNs"
          f" ({undecoded} XRC / ATOMIC WRITE frames without an ICRC field: this tshark stops at their BTH)")


def scapy_frame(opcode, psn, dqpn, body, ttl=64, tos=0, fecn=0, becn=0, pad=0, sport=0xC0DE):
    return (Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01")
            / IP(src="192.0.2.1", dst="192.0.2.2", ttl=ttl, tos=tos, flags="DF", id=7)
            / UDP(sport=sport, dport=ROCE_PORT, chksum=0)
            / BTH(opcode=opcode, psn=psn, dqpn=dqpn, fecn=fecn, becn=becn, padcount=pad, ackreq=1)
            / Raw(body))


def check_parsed(tool, tmp):
    reth = (0x7F0000001000).to_bytes(8, "big") + (0x1234).to_bytes(4, "big") + (16).to_bytes(4, "big")
    good = [
        # (frame, opcode, psn, dqpn, payload length)
        (scapy_frame(0x04, 0, 0x11, b"hello\0\0\0", pad=3), 0x04, 0, 0x11, 5),
        (scapy_frame(0x04, 0xFFFFFF, 0x11, b"", ttl=1, tos=0x03, fecn=1), 0x04, 0xFFFFFF, 0x11, 0),
        (scapy_frame(0x0A, 0x123456, 0xABCDEF, reth + bytes(range(16))), 0x0A, 0x123456, 0xABCDEF, 16),
        (scapy_frame(0x0C, 7, 0x22, reth), 0x0C, 7, 0x22, 0),
        (scapy_frame(0x11, 8, 0x22, raw(AETH(syndrome=0x1F, msn=3)), becn=1, sport=0xFFFF), 0x11, 8, 0x22, 0),
        (scapy_frame(0x2A, 9, 0x33, reth + b"x" * 13 + b"\0\0\0", pad=3, tos=0xB8), 0x2A, 9, 0x33, 13),
        (scapy_frame(0x64, 10, 0x44, (0x11111111).to_bytes(4, "big") + b"\0\0\0\x05" + b"ud!\0", pad=1),
         0x64, 10, 0x44, 3),
    ]
    frames = [f for f, *_ in good]
    damaged = []

    def damage(frame, why, edit):
        b = bytearray(raw(frame))
        edit(b)
        damaged.append((Ether(bytes(b)), why))

    damage(good[0][0], "icrc", lambda b: b.__setitem__(54, b[54] ^ 1))  # a payload byte
    damage(good[0][0], "icrc", lambda b: b.__setitem__(49, b[49] ^ 1))  # DestQP
    damage(good[0][0], "ip_checksum", lambda b: b.__setitem__(22, 9))  # TTL, checksum unchanged
    damage(good[0][0], "not_roce_port", lambda b: b.__setitem__(37, 0xB8))  # dport 4792
    damage(good[0][0], "udp_length", lambda b: b.__setitem__(39, b[39] + 4))
    damage(good[0][0], "not_ip", lambda b: b.__setitem__(13, 0x06))
    pcap = os.path.join(tmp, "scapy.pcap")
    wrpcap(pcap, frames + [d for d, _ in damaged])

    out = subprocess.run([tool, "check", pcap], check=True, capture_output=True, text=True).stdout
    lines = out.splitlines()
    if len(lines) != len(good) + len(damaged):
        fail(f"roce_frames check printed {len(lines)} lines for {len(good) + len(damaged)} frames")
    for line, (_f, opcode, psn, dqpn, length) in zip(lines, good):
        n, drop, *fields = line.split()
        if drop != "none" or [int(x) for x in fields] != [opcode, psn, dqpn, length]:
            fail(f"scapy frame {n}: roce_frames says {line!r}, expected none {opcode} {psn} {dqpn} {length}")
    for line, (_d, why) in zip(lines[len(good):], damaged):
        n, drop, *_ = line.split()
        if drop != why:
            fail(f"damaged frame {n}: roce_frames says {drop}, expected {why}")
    print(f"roce_frames check: {len(good)} scapy frames accepted, {len(damaged)} damaged ones refused for the right reason")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    tool = sys.argv[1]
    if shutil.which("tshark") is None:
        print("SKIP: tshark not installed (Debian package tshark; tools/dev installs it)")
        return 77
    with tempfile.TemporaryDirectory(prefix="roce-codec-") as tmp:
        pcap, expected = check_written(tool, tmp)
        check_tshark(pcap, expected)
        check_parsed(tool, tmp)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
