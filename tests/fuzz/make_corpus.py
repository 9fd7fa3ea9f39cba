#!/usr/bin/python3
"""Write the seed corpus of the fuzz targets into tests/fuzz/corpus/<target>/.

Usage: /usr/bin/python3 tests/fuzz/make_corpus.py   (from the source root)

Deterministic. Sources: single frames of tests/data/sample.pcap, flow
attribute buffers laid out as verbs.h defines them (what rdma-core's flow
tests build), the configuration keys the README documents and a valid TOML
file, small pcap / pcapng files (sample.pcap cut to a few KB among them), and
for fuzz_roce_peer valid exchanges of a RoCE v2 peer with each QP type,
each followed by a verb (the step encoding: tests/fuzz/roce_peer_steps.cpp).
Seeds are named by content hash, as libFuzzer's -merge names its files.
"""

import hashlib
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(ROOT, "tests", "data", "sample.pcap")
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus")


def put(target, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def pcap_records(path):
    """(header bytes, [(record header, frame bytes)]) of a little-endian classic pcap."""
    raw = open(path, "rb").read()
    assert raw[:4] == b"\xd4\xc3\xb2\xa1", "expected a little-endian classic pcap"
    pos, out = 24, []
    while pos + 16 <= len(raw):
        caplen = struct.unpack_from("<I", raw, pos + 8)[0]
        out.append((raw[pos:pos + 16], raw[pos + 16:pos + 16 + caplen]))
        pos += 16 + caplen
    return raw[:24], out


# --- fuzz_frame: byte 0 RSS fields, byte 1 settings, then one frame ----------
def frame_seeds(records):
    # One frame of each distinct (ether type, length class, tag), with varied settings.
    seen = set()
    n = 0
    for _, frame in records:
        et = frame[12:14]
        inner = frame[16:18] if et == b"\x81\x00" else b""
        key = (et, inner, len(frame) > 200, len(frame) > 2048)
        if key in seen:
            continue
        seen.add(key)
        fields = [0x33, 0x3c, 0xcc, 0xc3, 0x05, 0xff][n % 6]  # IBV_RX_HASH_* bits
        settings = [0x0f, 0x01, 0x06, 0x8b, 0x00, 0x53][n % 6]
        put("fuzz_frame", bytes([fields, settings]) + frame)
        n += 1
    put("fuzz_frame", b"\x00\x00")
    for frame in roce_frames():
        put("fuzz_frame", b"\x00\x00" + frame)


def roce_frames():
    """RoCE v2 frames laid out by hand: RC SEND_ONLY over IPv4, UD SEND_ONLY
    (with DETH) over IPv6. Checksums and ICRC are left 0: fuzz_frame makes
    them right on its copy."""
    eth4 = bytes.fromhex("020000000002" "020000000001" "0800")
    bth = lambda op, qpn, psn: struct.pack("!BBHII", op, 0x40, 0xFFFF, qpn & 0xFFFFFF, psn & 0xFFFFFF)
    payload = bytes(range(16))
    rc = bth(0x04, 0x11, 7) + payload
    udp = struct.pack("!HHHH", 0xC123, 4791, 8 + len(rc) + 4, 0)
    ip4 = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp) + len(rc) + 4, 0, 0x4000, 64, 17, 0,
                      bytes([192, 0, 2, 1]), bytes([192, 0, 2, 2]))
    yield eth4 + ip4 + udp + rc + bytes(4)
    eth6 = bytes.fromhex("020000000002" "020000000001" "86dd")
    ud = bth(0x64, 0x12, 9) + struct.pack("!II", 0x11111111, 0x22) + payload
    udp = struct.pack("!HHHH", 0xC456, 4791, 8 + len(ud) + 4, 0)
    ip6 = struct.pack("!IHBB16s16s", 0x60000000, len(udp) + len(ud) + 4, 17, 64,
                      bytes.fromhex("fe800000000000000000000000000001"),
                      bytes.fromhex("fe800000000000000000000000000002"))
    yield eth6 + ip6 + udp + ud + bytes(4)


# --- fuzz_flow_spec: ibv_flow_attr + specs -----------------------------------
SPEC_ETH, SPEC_IPV4, SPEC_IPV4_EXT, SPEC_IPV6, SPEC_TCP, SPEC_UDP = 0x20, 0x30, 0x32, 0x31, 0x40, 0x41


def attr(specs, type_=0, priority=0, flags=0, port=1, num=None):
    body = b"".join(specs)
    n = len(specs) if num is None else num
    return struct.pack("<IIHHBBxxI", 0, type_, 20 + len(body), priority, n, port, flags) + body


def eth(dst=b"\0" * 6, dst_m=b"\0" * 6, ether_type=0, et_m=0, vlan=0, vlan_m=0):
    val = dst + b"\0" * 6 + struct.pack(">HH", ether_type, vlan)
    mask = dst_m + b"\0" * 6 + struct.pack(">HH", et_m, vlan_m)
    return struct.pack("<IH", SPEC_ETH, 40) + val + mask + b"\0\0"


def ipv4(src, dst, src_m, dst_m):
    return struct.pack("<IHxx", SPEC_IPV4, 24) + src + dst + src_m + dst_m


def ipv4_ext(src, dst, proto, src_m, dst_m, proto_m):
    val = src + dst + bytes([proto, 0, 0, 0])
    mask = src_m + dst_m + bytes([proto_m, 0, 0, 0])
    return struct.pack("<IHxx", SPEC_IPV4_EXT, 32) + val + mask


def ipv6(next_hdr, nh_m, flow_label=0, fl_m=0):
    val = b"\x20\x01" + b"\0" * 14 + b"\0" * 16 + struct.pack(">I", flow_label) + bytes([next_hdr, 0, 0, 0])
    mask = b"\xff\xff" + b"\0" * 14 + b"\0" * 16 + struct.pack(">I", fl_m) + bytes([nh_m, 0, 0, 0])
    return struct.pack("<IHxx", SPEC_IPV6, 88) + val + mask


def l4(kind, dst_port, src_port, dst_m, src_m):
    return struct.pack("<IH", kind, 16) + struct.pack(">HHHH", dst_port, src_port, dst_m, src_m) + b"\0\0"


def flow_seeds():
    mac = b"\x02\0\0\0\0\x01"
    ff6 = b"\xff" * 6
    ip_a, ip_b, m32, z = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]), b"\xff" * 4, b"\0" * 4
    seeds = [
        attr([eth()]),                                   # catch-all
        attr([eth(mac, ff6)]),                           # one destination MAC
        attr([eth(ether_type=0x0800, et_m=0xffff)], priority=1),
        attr([eth(vlan=5, vlan_m=0x0fff)]),
        attr([eth(mac, ff6), ipv4(ip_a, ip_b, m32, m32), l4(SPEC_TCP, 80, 0, 0xffff, 0)]),
        attr([ipv4_ext(ip_a, ip_b, 6, m32, z, 0xff), l4(SPEC_UDP, 4791, 0, 0xffff, 0)]),
        attr([eth(ether_type=0x86DD, et_m=0xffff), ipv6(17, 0xff, 0x12345, 0xfffff),
              l4(SPEC_UDP, 0, 1234, 0, 0xffff)]),
        attr([], type_=3),                               # sniffer
        attr([], type_=1),                               # all default
        attr([eth(dst=b"\x01\0\x5e\0\0\x01", dst_m=b"\x01\0\0\0\0\0")], type_=2),
        attr([eth()], flags=1 << 2),                     # DONT_TRAP
        attr([eth(), eth()]),                            # a second ETH: EINVAL
        attr([eth()], num=3),                            # specs missing
        attr([]),
    ]
    for s in seeds:
        put("fuzz_flow_spec", s)


# --- fuzz_config: key=value lines and TOML -----------------------------------
CONFIG_PAIRS = [
    "devices=2", "pcap=capture.pcap", "pcap.3=x.pcapng", "engine=inline", "engine=thread",
    "start=first-flow", "start=250ms", "start=manual", "speed=topspeed", "speed=2.5x",
    "speed=original", "burst=4096", "source_fcs=auto", "source_fcs=4", "idle_tick_us=10",
    "log_level=debug", "caps.cvlan_stripping=off", "caps.scatter_fcs=on", "caps.ip_csum=yes",
    "caps.delay_drop=0", "caps.pci_write_end_padding=true", "caps.delay_drop_needs_rawio=on",
    "caps.delay_drop_rearm=no", "caps.delay_drop_timeout_us=1000", "caps.pad_align=128",
    "caps.max_wr=1048576", "caps.max_sge=64",
]
TOML = """# rdmasim configuration
devices = 2
pcap = "traffic.pcap"
engine = "inline"
start = "250ms"
speed = "2x"
burst = 64
source_fcs = "auto"
idle_tick_us = 5
log_level = "info"

[pcap]
1 = "other.pcapng"

[caps]
cvlan_stripping = true
scatter_fcs = false
delay_drop_timeout_us = 500
pad_align = 128
max_wr = 4096
max_sge = 4
"""


def config_seeds():
    for p in CONFIG_PAIRS:
        put("fuzz_config", p.encode())
    put("fuzz_config", TOML.encode())
    put("fuzz_config", b"[caps]\nmax_sge = 1.5\nlist = [1, 2]\nwhen = 1979-05-27T07:32:00Z\n")


# --- fuzz_pcap_replay: capture files -----------------------------------------
def pcapng(frames, fcslen=None, big_endian=False):
    e = ">" if big_endian else "<"

    def block(btype, body):
        body += b"\0" * (-len(body) % 4)
        n = 12 + len(body)
        return struct.pack(e + "II", btype, n) + body + struct.pack(e + "I", n)

    out = block(0x0A0D0D0A, struct.pack(e + "IHHq", 0x1A2B3C4D, 1, 0, -1))
    opts = b""
    if fcslen is not None:
        opts += struct.pack(e + "HH", 13, 1) + bytes([fcslen]) + b"\0\0\0"
    opts += struct.pack(e + "HH", 0, 0)
    out += block(1, struct.pack(e + "HHI", 1, 0, 65535) + opts)
    for i, fr in enumerate(frames):
        ts = 1_700_000_000_000_000 + i * 10
        out += block(6, struct.pack(e + "IIIII", 0, ts >> 32, ts & 0xFFFFFFFF, len(fr), len(fr)) + fr)
    return out


def replay_seeds(header, records):
    raw = open(SAMPLE, "rb").read()
    put("fuzz_pcap_replay", raw[:4096])                  # cut mid-record
    # The first few records whole, and a tagged / IPv6 mix.
    body = b"".join(h + f for h, f in records[:12])
    put("fuzz_pcap_replay", header + body)
    picks = [r for r in records if r[1][12:14] in (b"\x81\x00", b"\x86\xdd")][:10]
    put("fuzz_pcap_replay", header + b"".join(h + f for h, f in picks))
    # Link type with the FCS bits: 4 bytes of FCS (P bit, length 2 x 16 bits).
    linktype = 1 | 0x04000000 | (2 << 28)
    fcs_header = header[:20] + struct.pack("<I", linktype)
    put("fuzz_pcap_replay", fcs_header + b"".join(h + f for h, f in records[:6]))
    frames = [f for _, f in records[:8]]
    put("fuzz_pcap_replay", pcapng(frames))
    put("fuzz_pcap_replay", pcapng(frames[:4], fcslen=4, big_endian=True))
    put("fuzz_pcap_replay", header)                      # no records


# --- fuzz_roce_peer: byte 0 the configuration, then 8-byte steps -------------
RC, UC, UD, XRC = 0, 1, 2, 3
OPS = dict(send_first=0, send_middle=1, send_last=2, send_only=4, send_only_imm=5, write_first=6,
           write_middle=7, write_last=8, write_last_imm=9, write_only=10, read=12, cmp_swap=13,
           fetch_add=14, send_only_inv=16, atomic_write=17)


def frame(qp, op, key=0x00, va=0x00, dma=0x00, plen=0x00, flags=0x10, psn=0):
    """A frame step: key/va/dma are the selector bytes b3/b4/b5, plen b6 (< 0x80: bytes; 0x80: 256)."""
    return bytes([0, qp << 6 | 0x20 | OPS[op], psn & 0xFF, key, va, dma, plen, flags])


def verb(kind, *args):
    return bytes([kind] + list(args) + [0] * (7 - len(args)))


def post_recv(qp, slot=3, off16=0x10, len16=0x20):
    return verb(7, qp | slot << 2, off16, len16)


def roce_peer_seeds():
    dereg0, err_rc, recreate_rc = verb(8, 0), verb(14, RC), verb(15, RC)
    bind_w1 = verb(11, 0x00, 8, 0x10, 3)         # type 1 over MR 0: 256 bytes, WRITE and READ
    bind_w2 = verb(11, 0x01, 8, 0x10, 7)         # type 2 on the RC QP
    seeds = [
        [frame(RC, "write_only", dma=0x40 | 63, plen=63), dereg0],
        [frame(RC, "write_first", dma=0x08, plen=0x80), frame(RC, "write_last", plen=0x80), dereg0],
        [frame(RC, "write_first", dma=0x0C, plen=0x80), frame(RC, "write_middle", plen=0x80),
         frame(RC, "write_last", plen=0x80), verb(10, 0, 4, 0, 0, 5)],
        [frame(RC, "read", dma=0x08), dereg0, frame(RC, "read", key=0x01, dma=0x04)],
        [post_recv(RC), frame(RC, "send_only", plen=63), err_rc],
        [post_recv(RC), frame(RC, "send_first", plen=0x80), frame(RC, "send_last", plen=10), recreate_rc],
        [frame(RC, "cmp_swap", flags=0x12), frame(RC, "fetch_add"), frame(RC, "atomic_write", dma=0x40 | 8, plen=8)],
        [bind_w1, frame(RC, "write_only", key=0x60, va=0x02, dma=0x40 | 32, plen=32)],
        [bind_w1, frame(RC, "read", key=0x60, dma=0x40 | 48), verb(13, 0)],
        [bind_w2, post_recv(RC), frame(RC, "send_only_inv", key=0x61, plen=5), verb(12, 0)],
        [post_recv(UD, off16=0x20), frame(UD, "send_only", plen=20), frame(UD, "send_only_imm", plen=4, flags=0x80)],
        [post_recv(XRC), frame(XRC, "send_only", plen=63), frame(XRC, "write_only", dma=0x40 | 30, plen=30),
         frame(XRC, "read", dma=0x04), verb(15, XRC)],
        [frame(UC, "write_first", dma=0x08, plen=0x80), frame(UC, "write_last", plen=0x80), verb(14, UC)],
        [post_recv(UC), frame(UC, "send_only", plen=63), verb(9, 0), verb(8, 3), verb(9, 3, 0x10, 0x40, 0, 0x0f)],
        [frame(RC, "write_only", key=0x80, dma=0x40 | 8, plen=0), frame(RC, "write_only", key=0xC0, dma=0x40 | 8)],
        # Windows over MRs that grant nothing remote themselves (as programs use them).
        [verb(11, 0x02, 8, 0x20, 3), frame(RC, "write_first", key=0x60, dma=0x08, plen=0x80),
         frame(RC, "write_last", plen=0x80), verb(13, 0)],
        [verb(11, 0x07, 8, 0x20, 7), frame(RC, "write_first", key=0x61, dma=0x08, plen=0x80),
         frame(RC, "write_last", plen=0x80), verb(12, 0)],
        [verb(11, 0x07, 8, 0x20, 7), post_recv(RC, slot=1), frame(RC, "send_only_inv", key=0x61, plen=8),
         frame(RC, "read", key=0x61, dma=0x04)],
        [verb(11, 0x0F, 8, 0x20, 1), frame(UC, "write_first", key=0x61, dma=0x08, plen=0x80),
         frame(UC, "write_last", plen=0x80), verb(12, 1)],
        [verb(11, 0x02, 8, 0x20, 3), frame(RC, "write_first", key=0x60, dma=0x08, plen=0x80),
         frame(RC, "write_last", plen=0x80), verb(11, 0x02, 0x48, 0x20, 3)],  # then bound elsewhere
    ]
    for steps in seeds:
        put("fuzz_roce_peer", b"\x00" + b"".join(steps))
    put("fuzz_roce_peer", b"\x80" + frame(RC, "write_only", dma=0x40 | 63, plen=63) * 8)  # PSNs across the wrap


def main():
    header, records = pcap_records(SAMPLE)
    frame_seeds(records)
    flow_seeds()
    config_seeds()
    replay_seeds(header, records)
    roce_peer_seeds()


if __name__ == "__main__":
    sys.exit(main())
