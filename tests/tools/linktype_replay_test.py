#!/usr/bin/python3
"""`rdmasim replay` on captures without an Ethernet header.

Usage: /usr/bin/python3 tests/tools/linktype_replay_test.py RDMASIM [--keep]

Builds, with scapy, captures of IP traffic as `tcpdump -i any`, tunnels and
BSD loopback write them: Linux cooked v1 (CookedLinux, with an 802.1Q tag as
libpcap writes one into a cooked record, ARP, 802.2 LLC and a CAN record that
must be skipped), Linux cooked v2 (CookedLinuxV2), raw IP (LINKTYPE_RAW 101,
LINKTYPE_IPV4 228, LINKTYPE_IPV6 229) and BSD loopback (Loopback: NULL 0 and
LOOP 108). Each is replayed through

    RDMASIM replay IN.pcap --engine inline --json --capture OUT.pcap [--flags cvlan,fcs]

and OUT.pcap must hold, in input order, every frame a NIC would have
received: a synthesized Ethernet header (destination: the device's MAC
02:52:44:4d:00:00, source 02:00:00:00:00:01, or the synth_dst_mac /
synth_src_mac keys; the EtherType from the packet), then the packet, with
the receive offloads applied (cvlan: an 802.1Q tag after the source MAC is
removed; fcs: the CRC-32 of the frame as synthesized is appended). The JSON
must balance, and its "source" must say the header was synthesized and
count the synthesized and skipped records. Bad input (a link type with no
IP over Ethernet, a bad synth key, a cooked capture cut mid-record, a pcapng
file mixing link types) must fail with a message naming the file and why.

Prints one line per check and 'N passed, N failed'; exits 1 when any failed.
"""

import json
import os
import struct
import subprocess
import sys
import tempfile
import zlib

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, CookedLinux, CookedLinuxV2, Dot1Q, Loopback
from scapy.packet import Raw
from scapy.utils import RawPcapReader, RawPcapWriter

RUN_TIMEOUT = 120
BUFFER = 2048                    # rdmasim replay's default bytes per WQE
DEVICE_MAC = "02:52:44:4d:00:00"  # rdmasim0's MAC: the default destination
DEFAULT_SRC = "02:00:00:00:00:01"
ARPHRD_ETHER = 1
LINKTYPE_NULL, LINKTYPE_RAW, LINKTYPE_LOOP = 0, 101, 108
LINKTYPE_IPV4, LINKTYPE_IPV6, LINKTYPE_RADIOTAP = 228, 229, 127


def mac_bytes(text):
    return bytes(int(b, 16) for b in text.split(":"))


def ip_packets():
    """IPv4 and IPv6, TCP and UDP, small to a size whose frame fills 2048 bytes."""
    out = []
    for i, size in enumerate([0, 18, 100, 1000, 1400, 2048 - 14 - 20 - 8 - 4, 2100]):
        payload = Raw(bytes((i * 7 + n) & 0xFF for n in range(size)))
        out.append(IP(src="192.168.1.%d" % (i + 1), dst="10.0.0.1") /
                   UDP(sport=40000 + i, dport=4791) / payload)
        out.append(IPv6(src="fe80::%x" % (i + 1), dst="fe80::99") /
                   TCP(sport=50000 + i, dport=80, flags="PA") / payload)
    return out


def ether_type(pkt):
    return 0x86DD if isinstance(pkt, IPv6) else 0x0800


class Capture:
    """A capture file's image and the frames a NIC would have received."""

    def __init__(self, name, link_name, linktype, records, frames, skipped=0):
        self.name = name
        self.link_name = link_name      # libpcap's name, as describe() prints it
        self.linktype = linktype
        self.records = records          # bytes of each record
        self.frames = frames            # (type, payload) of each frame, in order
        self.skipped = skipped

    def write(self, path):
        with RawPcapWriter(path, linktype=self.linktype) as w:
            for r in self.records:
                w.write(r)

    def expected(self, dst, src):
        return [mac_bytes(dst) + mac_bytes(src) + struct.pack("!H", t) + p
                for t, p in self.frames]


def build_captures():
    pkts = ip_packets()
    raw = [(ether_type(p), bytes(p)) for p in pkts]
    arp = ARP(op=1, hwsrc="02:aa:bb:cc:dd:ee", psrc="192.168.1.10", pdst="10.0.0.1")
    tagged_inner = IP(src="192.168.1.10", dst="10.0.0.1") / UDP(sport=40000, dport=4791) / \
        Raw(b"rdmasim golden!!")
    tag = Dot1Q(prio=5, id=1, vlan=123, type=0x0800)
    llc = b"\x42\x42\x03\x00\x00\x00\x00\x00" + bytes(27)  # an STP BPDU

    caps = []
    # Linux cooked v1: `tcpdump -i any` before libpcap 1.10's v2 default.
    sll = [bytes(CookedLinux(pkttype=0, lladdrtype=ARPHRD_ETHER, lladdrlen=6,
                             src=b"\x02\x99\x88\x77\x66\x55\x00\x00",
                             proto=t) / Raw(p)) for t, p in raw]
    sll.append(bytes(CookedLinux(lladdrtype=ARPHRD_ETHER, proto=0x0806) / arp))
    # libpcap writes a PACKET_AUXDATA tag into the record: protocol 0x8100, TCI, type.
    sll.append(bytes(CookedLinux(lladdrtype=ARPHRD_ETHER, proto=0x8100) / tag / tagged_inner))
    sll.append(bytes(CookedLinux(lladdrtype=ARPHRD_ETHER, proto=0x0004) / Raw(llc)))
    sll.append(bytes(CookedLinux(lladdrtype=280, proto=0x000C) / Raw(bytes(16))))  # CAN
    frames = raw + [(0x0806, bytes(arp)), (0x8100, bytes(tag / tagged_inner)),
                    (len(llc), llc)]
    caps.append(Capture("sll", "LINUX_SLL", 113, sll, frames, skipped=1))

    sll2 = [bytes(CookedLinuxV2(lladdrtype=ARPHRD_ETHER, proto=t) / Raw(p)) for t, p in raw]
    sll2.append(bytes(CookedLinuxV2(lladdrtype=ARPHRD_ETHER, proto=0x0806) / arp))
    caps.append(Capture("sll2", "LINUX_SLL2", 276, sll2, raw + [(0x0806, bytes(arp))]))

    caps.append(Capture("raw", "RAW", LINKTYPE_RAW, [p for _, p in raw] + [b"\x50" * 20], raw,
                        skipped=1))
    v4 = [(t, p) for t, p in raw if t == 0x0800]
    v6 = [(t, p) for t, p in raw if t == 0x86DD]
    caps.append(Capture("ipv4", "IPV4", LINKTYPE_IPV4, [p for _, p in v4], v4))
    caps.append(Capture("ipv6", "IPV6", LINKTYPE_IPV6, [p for _, p in v6], v6))
    # BSD loopback: the address family word, in host order for NULL (scapy's
    # Loopback) and network order for LOOP; the IP version decides the type.
    null = [bytes(Loopback(type=2 if t == 0x0800 else 24) / Raw(p)) for t, p in raw]
    caps.append(Capture("null", "NULL", LINKTYPE_NULL, null, raw))
    loop = [struct.pack("!I", 2 if t == 0x0800 else 24) + p for t, p in raw]
    caps.append(Capture("loop", "LOOP", LINKTYPE_LOOP, loop, raw))
    return caps


def apply_offloads(frames, cvlan, fcs):
    """What the receive path delivers (datapath/README.md, "Per-frame order")."""
    out = []
    for frame in frames:
        data = frame
        if cvlan and len(frame) >= 18 and frame[12:14] == b"\x81\x00":
            data = frame[:12] + frame[16:]
        if fcs:
            data += struct.pack("<I", zlib.crc32(frame) & 0xFFFFFFFF)
        if len(data) <= BUFFER:
            out.append(data)
    return out


class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print("ok   " + name)
        else:
            self.failed += 1
            print("FAIL " + name + ("\n     " + detail if detail else ""))
        return ok


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RDMASIM_")}
    env.update(extra)
    return env


def replay(rdmasim, path, *args, env=None):
    return subprocess.run([rdmasim, "replay", path, "--engine", "inline", *args],
                          capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          env=env if env is not None else clean_env(), check=False)


def first_difference(want, got):
    if len(want) != len(got):
        return "%d frames expected, %d delivered" % (len(want), len(got))
    for i, (w, g) in enumerate(zip(want, got)):
        if w != g:
            at = next((j for j in range(min(len(w), len(g))) if w[j] != g[j]),
                      min(len(w), len(g)))
            return "frame %d (len %d, want %d) differs at byte %d: %s vs %s" % (
                i, len(g), len(w), at, g[at:at + 8].hex(), w[at:at + 8].hex())
    return ""


def check_replay(res, rdmasim, tmp, cap, flags, dst=DEVICE_MAC, src=DEFAULT_SRC, env=None):
    label = "%s%s" % (cap.name, " --flags " + flags if flags else "")
    if dst != DEVICE_MAC or src != DEFAULT_SRC:
        label += " (synth MACs %s <- %s)" % (dst, src)
    in_path = os.path.join(tmp, cap.name + ".pcap")
    out_path = os.path.join(tmp, "%s-out.pcap" % cap.name)
    cap.write(in_path)
    extra = ["--flags", flags] if flags else []
    r = replay(rdmasim, in_path, "--json", "--capture", out_path, *extra, env=env)
    if not res.check(label + ": exit 0", r.returncode == 0, r.stderr.strip()):
        return
    report = json.loads(r.stdout)
    want = apply_offloads(cap.expected(dst, src), "cvlan" in flags, "fcs" in flags)
    got = [bytes(data) for data, _ in RawPcapReader(out_path)]
    res.check(label + ": every delivered frame, byte for byte", want and got == want,
              first_difference(want, got))
    drops = sum(report["drops"].values())
    res.check(label + ": frames_offered = delivered + drops, one per synthesized frame",
              report["frames_offered"] == report["delivered"] + drops ==
              len(cap.frames) and report["delivered"] == len(want),
              json.dumps({k: report[k] for k in ("frames_offered", "delivered")}))
    source = report.get("source", {})
    res.check(label + ": the report says the header was synthesized",
              ("(%s, Ethernet header synthesized, %s -> %s)" % (cap.link_name, src, dst))
              in source.get("description", "") and
              source.get("synthesized_headers") == len(cap.frames) and
              source.get("skipped_records") == cap.skipped, json.dumps(source))


def check_errors(res, rdmasim, tmp):
    sll2 = build_captures()[1]
    path = os.path.join(tmp, "any.pcap")
    sll2.write(path)

    for key, bad in (("synth_dst_mac", "02:00:00:00:00"), ("synth_src_mac", "01:00:5e:00:00:01"),
                     ("synth_src_mac", "zz:00:00:00:00:01")):
        r = replay(rdmasim, path, env=clean_env(**{"RDMASIM_" + key.upper(): bad}))
        res.check("%s=%s: refused naming the key and the value" % (key, bad),
                  r.returncode != 0 and key in r.stderr and bad in r.stderr, r.stderr.strip())

    radiotap = os.path.join(tmp, "wifi.pcap")
    with open(radiotap, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, LINKTYPE_RADIOTAP))
        f.write(struct.pack("<IIII", 1, 0, 8, 8) + bytes(8))
    r = replay(rdmasim, radiotap)
    res.check("radiotap: refused naming the file, the link type and the supported ones",
              r.returncode != 0 and radiotap in r.stderr and "IEEE802_11_RADIO" in r.stderr and
              "supported link types: EN10MB, LINUX_SLL, LINUX_SLL2" in r.stderr,
              r.stderr.strip())

    # A cooked capture cut inside its fourth record: three frames, then an error.
    whole = open(path, "rb").read()
    at = 24
    for _ in range(3):
        at += 16 + struct.unpack_from("<I", whole, at + 8)[0]
    cut = os.path.join(tmp, "cut.pcap")
    with open(cut, "wb") as f:
        f.write(whole[:at + 16 + 10])
    out = os.path.join(tmp, "cut-out.pcap")
    r = replay(rdmasim, cut, "--capture", out)
    got = [bytes(d) for d, _ in RawPcapReader(out)]
    res.check("cut cooked capture: the frames before the cut, then an error naming "
              "the file and record 4",
              r.returncode == 1 and got == sll2.expected(DEVICE_MAC, DEFAULT_SRC)[:3] and
              ("pcap file %s: record 4: truncated dump file" % cut) in r.stderr,
              r.stderr.strip())

    def block(kind, body):
        body += b"\0" * (-len(body) % 4)
        return struct.pack("<II", kind, 12 + len(body)) + body + struct.pack("<I", 12 + len(body))
    mixed = os.path.join(tmp, "mixed.pcapng")
    with open(mixed, "wb") as f:
        f.write(block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)))
        f.write(block(1, struct.pack("<HHI", 276, 0, 65535)))
        f.write(block(1, struct.pack("<HHI", 1, 0, 65535)))
        f.write(block(6, struct.pack("<IIIII", 0, 0, 1, 40, 40) + sll2.records[0][:40]))
    r = replay(rdmasim, mixed)
    res.check("pcapng mixing LINUX_SLL2 and EN10MB interfaces: refused naming both",
              r.returncode != 0 and mixed in r.stderr and
              "interface 0: LINUX_SLL2, interface 1: EN10MB" in r.stderr, r.stderr.strip())

    r = replay(rdmasim, path)
    res.check("table output names the synthesis",
              r.returncode == 0 and "LINUX_SLL2, Ethernet header synthesized" in r.stdout,
              r.stdout[-400:])


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    rdmasim = sys.argv[1]
    res = Results()
    tmp = tempfile.mkdtemp(prefix="rdmasim-linktypes-")
    try:
        caps = build_captures()
        for cap in caps:
            for flags in ("", "cvlan,fcs"):
                check_replay(res, rdmasim, tmp, cap, flags)
        dst, src = "ff:ff:ff:ff:ff:ff", "02:12:34:56:78:9a"
        check_replay(res, rdmasim, tmp, caps[0], "cvlan", dst=dst, src=src,
                     env=clean_env(RDMASIM_SYNTH_DST_MAC=dst, RDMASIM_SYNTH_SRC_MAC=src))
        check_errors(res, rdmasim, tmp)
    finally:
        if "--keep" in sys.argv[2:]:
            print("files kept in " + tmp)
        else:
            for name in os.listdir(tmp):
                os.unlink(os.path.join(tmp, name))
            os.rmdir(tmp)
    print("%d passed, %d failed" % (res.passed, res.failed))
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())
