#!/usr/bin/python3
"""The C example, unmodified, on rdmasim: every frame of a scapy-built capture
arrives through RSS over 4 WQs with CVLAN stripping and FCS scatter, with the
right bytes, VLAN TCI and FCS, on the WQ an independent Toeplitz predicts.

usage: rss_receive_test.py RDMASIM RSS_RECEIVE
"""
import os
import random
import struct
import subprocess
import sys
import tempfile
import zlib

from scapy.all import ARP, IP, IPv6, TCP, UDP, Dot1Q, Ether, Raw, wrpcap

KEY = bytes.fromhex("6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c"
                    "6a42b73bbeac01fa")
WQS = 4


def toeplitz(data: bytes) -> int:
    """Bit by bit, as the RSS specification states it."""
    key = int.from_bytes(KEY, "big")
    keybits = len(KEY) * 8
    result = 0
    for i, byte in enumerate(data):
        for b in range(8):
            if byte & (0x80 >> b):
                shift = keybits - 32 - (i * 8 + b)
                result ^= (key >> shift) & 0xFFFFFFFF
    return result


def expected_wq(pkt) -> int:
    # The example hashes IPv4 addresses and TCP ports; anything lacking them hashes to 0.
    if IP in pkt and TCP in pkt and pkt[IP].frag == 0 and not pkt[IP].flags.MF:
        ip, tcp = pkt[IP], pkt[TCP]
        data = (bytes(map(int, ip.src.split("."))) + bytes(map(int, ip.dst.split("."))) +
                struct.pack(">HH", tcp.sport, tcp.dport))
        return toeplitz(data) & (WQS - 1)
    return 0


def build_capture(rng):
    frames = []
    for i in range(300):
        src = f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
        dst = f"192.168.{rng.randrange(256)}.{rng.randrange(1, 255)}"
        payload = Raw(bytes(rng.randrange(256) for _ in range(rng.randrange(0, 1200))))
        kind = i % 6
        if kind in (0, 1, 2):
            l3 = IP(src=src, dst=dst) / TCP(sport=rng.randrange(1024, 65535), dport=rng.choice([80, 443, 5201]))
        elif kind == 3:
            l3 = IP(src=src, dst=dst) / UDP(sport=rng.randrange(1024, 65535), dport=4791)
        elif kind == 4:
            l3 = IPv6(src="2001:db8::%x" % rng.randrange(1, 65535), dst="2001:db8:1::1") / TCP(sport=rng.randrange(1024, 65535), dport=80)
        else:
            l3 = ARP(psrc=src, pdst=dst)
            payload = Raw(b"")
        eth = Ether(src="02:00:00:00:00:%02x" % (i % 256), dst="02:52:44:4d:00:00")
        if rng.random() < 0.5:
            # Every tenth tag is a priority tag (TCI 0): a completion reads it back
            # like no tag, and the example must still check its FCS.
            if rng.random() < 0.1:
                pkt = eth / Dot1Q(vlan=0, prio=0, id=0) / l3 / payload
            else:
                pkt = eth / Dot1Q(vlan=rng.randrange(1, 4095), prio=rng.randrange(8),
                                  id=rng.randrange(2)) / l3 / payload
        else:
            pkt = eth / l3 / payload
        frames.append(pkt)
    return frames


def check_dump(frames, dump):
    """Every frame as the receiver must have received it (its --dump file: one
    line of key=value a completion): the bytes with the tag stripped and the
    FCS appended, the TCI, the FCS verdict, the WQ Toeplitz picks; and RSS
    spread over two WQs at least. Prints each failure (the first five frames
    in full); returns (checks, failures). tools/wire_test.py uses it too."""
    with open(dump) as f:
        lines = [dict(kv.split("=", 1) for kv in line.split()) for line in f]
    failures = 0
    if len(lines) != len(frames):
        print(f"FAIL: {len(lines)} completions for {len(frames)} frames")
        failures += 1
    per_wq = [0] * WQS
    for i, (pkt, got) in enumerate(zip(frames, lines)):
        wire = bytes(pkt)
        tci, stripped = 0, wire
        if Dot1Q in pkt and wire[12:14] == b"\x81\x00":
            tci = struct.unpack(">H", wire[14:16])[0]
            stripped = wire[:12] + wire[16:]
        want = stripped + struct.pack("<I", zlib.crc32(wire) & 0xFFFFFFFF)
        want_wq = expected_wq(pkt)
        per_wq[want_wq] += 1
        problems = []
        if got.get("data") != want.hex():
            problems.append("bytes differ")
        if int(got.get("tci", -1)) != tci:
            problems.append(f"tci {got.get('tci')} != {tci}")
        if got.get("fcs") != "ok":
            problems.append("the receiver says FCS bad")
        if int(got.get("wq", -1)) != want_wq:
            problems.append(f"wq {got.get('wq')} != Toeplitz {want_wq}")
        if problems:
            failures += 1
            if failures <= 5:
                print(f"FAIL frame {i}: {', '.join(problems)}\n  want {want.hex()[:96]}\n  got  {got.get('data', '')[:96]}")
    print(f"frames per WQ: {per_wq}")
    if sum(1 for n in per_wq if n) < 2:
        print("FAIL: RSS did not spread the frames")
        failures += 1
    return len(frames), failures


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    rdmasim, example = sys.argv[1], sys.argv[2]
    rng = random.Random(4242)
    frames = build_capture(rng)
    with tempfile.TemporaryDirectory() as tmp:
        pcap = os.path.join(tmp, "in.pcap")
        dump = os.path.join(tmp, "dump.txt")
        wrpcap(pcap, frames)
        cmd = [rdmasim, "run", "--deterministic", "--pcap", pcap, "--", example,
               "--wqs", str(WQS), "--frames", str(len(frames)), "--dump", dump, "--idle-ms", "5000"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        print(proc.stdout, end="")
        print(proc.stderr, end="", file=sys.stderr)
        if proc.returncode != 0:
            print(f"FAIL: {' '.join(cmd)} exited {proc.returncode}")
            print("0 passed, 1 failed")
            return 1
        checks, failures = check_dump(frames, dump)
    print(f"{checks - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
