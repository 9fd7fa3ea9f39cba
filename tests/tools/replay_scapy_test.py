#!/usr/bin/python3
"""End-to-end check of `rdmasim replay` against frames built with scapy.

Usage: /usr/bin/python3 tests/tools/replay_scapy_test.py RDMASIM [--seed N] [--keep]

Builds a capture at test time (tagged / untagged, IPv4 / IPv6, TCP / UDP,
random payload sizes, frames right at the 2048-byte buffer boundary and a few
jumbo frames that cannot fit), replays it through

    RDMASIM replay IN.pcap --wqs N [--flags cvlan,fcs] --capture OUT.pcap --json

and checks, for every flag combination, that OUT.pcap holds exactly the
frames the receive path must deliver (datapath/README.md, "Per-frame order"), in input order:

  * cvlan: an 802.1Q tag (TPID 0x8100) right after the source MAC is removed;
  * fcs:   the CRC-32 of the ORIGINAL frame (as on the wire, tag included) is
           appended least significant byte first;
  * a frame is delivered when its final length (after stripping, FCS
           included) is <= 2048 bytes (the default buffer per WQE); others
           are dropped and absent from OUT.

The JSON printed on stdout must balance: frames_offered == delivered +
sum(drops.values()), sum(wqs[*].delivered) == delivered and
sum(wqs[*].bytes) == the bytes written to OUT.pcap. When /usr/bin/tshark
exists the frame lengths of OUT.pcap are cross-checked with it.

Debian's scapy is needed: run it with /usr/bin/python3. Exit 0 when every
check passes, 1 otherwise (a missing --json or --capture is a failure).
"""

import argparse
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Dot1Q, Ether
from scapy.utils import RawPcapReader, RawPcapWriter

BUFFER = 2048            # default receive buffer per WQE
FCS_LEN = 4
TPID_8021Q = b"\x81\x00"
DLT_EN10MB = 1
TSHARK = "/usr/bin/tshark"
RUN_TIMEOUT = 120        # seconds per rdmasim run
SAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      os.pardir, "data", "sample.pcap")


# --------------------------------------------------------------------------
# Expected receive-path behaviour


def strip_cvlan(frame: bytes) -> bytes:
    """Remove an 802.1Q tag that directly follows the source MAC."""
    if len(frame) >= 18 and frame[12:14] == TPID_8021Q:
        return frame[:12] + frame[16:]
    return frame


def fcs_of(frame: bytes) -> bytes:
    return struct.pack("<I", zlib.crc32(frame) & 0xFFFFFFFF)


def expected_output(frames, cvlan: bool, fcs: bool, buffer: int = BUFFER):
    """Return (delivered frames in order, their input indices, dropped count)."""
    out = []
    origin = []
    dropped = 0
    for index, original in enumerate(frames):
        data = strip_cvlan(original) if cvlan else original
        if fcs:
            data = data + fcs_of(original)  # FCS over the frame as on the wire
        if len(data) <= buffer:
            out.append(data)
            origin.append(index)
        else:
            dropped += 1
    return out, origin, dropped


# --------------------------------------------------------------------------
# Test capture


def _mac(rng):
    return "02:%02x:%02x:%02x:%02x:%02x" % tuple(rng.randrange(256) for _ in range(5))


def _pad(frame: bytes, floor: int = 60) -> bytes:
    return frame + bytes(max(0, floor - len(frame)))


def _random_tci(rng):
    return rng.randrange(8), rng.randrange(2), rng.randrange(4096)


def _flow_frame(rng, tagged: bool, v6: bool, tcp: bool, ip_len: int = None):
    """A frame of one random 5-tuple; ip_len = IP packet size (None: random)."""
    eth = Ether(src=_mac(rng), dst=_mac(rng))
    if tagged:
        pcp, dei, vid = _random_tci(rng)
        eth = eth / Dot1Q(prio=pcp, id=dei, vlan=vid)
    if v6:
        l3 = IPv6(src="2001:db8:%x::%x" % (rng.randrange(1 << 16), rng.randrange(1, 1 << 16)),
                  dst="2001:db8:%x::%x" % (rng.randrange(1 << 16), rng.randrange(1, 1 << 16)),
                  fl=rng.randrange(1 << 20))
    else:
        l3 = IP(src="10.%d.%d.%d" % (rng.randrange(256), rng.randrange(256), rng.randrange(1, 255)),
                dst="172.16.%d.%d" % (rng.randrange(256), rng.randrange(1, 255)),
                id=rng.randrange(1 << 16))
    if tcp:
        l4 = TCP(sport=rng.randrange(1024, 65536), dport=rng.randrange(1, 65536),
                 seq=rng.randrange(1 << 32), ack=rng.randrange(1 << 32), flags="PA")
    else:
        l4 = UDP(sport=rng.randrange(1024, 65536), dport=rng.randrange(1, 65536))
    hdr = len(l3) + len(l4)
    if ip_len is None:
        r = rng.random()
        ip_len = hdr if r < 0.25 else (1500 if r < 0.4 else rng.randrange(hdr, 1501))
    payload = rng.randbytes(max(0, ip_len - hdr))
    frame = bytes(eth / l3 / l4 / payload)
    return _pad(frame, 64 if tagged else 60)


def _frame_of_length(rng, length: int, tagged: bool, v6: bool = False):
    """A UDP frame of exactly `length` bytes (no FCS)."""
    l2 = 18 if tagged else 14
    frame = _flow_frame(rng, tagged, v6, tcp=False, ip_len=length - l2)
    assert len(frame) == length, (len(frame), length)
    return frame


def build_capture(rng):
    frames = []
    # Random traffic: many distinct 5-tuples so RSS spreads them.
    for _ in range(260):
        frames.append(_flow_frame(rng, tagged=rng.random() < 0.4,
                                  v6=rng.random() < 0.4, tcp=rng.random() < 0.5))
    # ARP, tagged and not.
    for i in range(4):
        eth = Ether(src=_mac(rng), dst="ff:ff:ff:ff:ff:ff")
        if i % 2:
            eth = eth / Dot1Q(prio=i, vlan=10 * i)
        arp = ARP(op=1, hwsrc=eth.src, psrc="10.0.0.%d" % (i + 2), pdst="10.0.0.1")
        frames.append(_pad(bytes(eth / arp), 64 if i % 2 else 60))
    # Two 0x8100 tags: only the outer one is stripped.
    for _ in range(3):
        pcp, dei, vid = _random_tci(rng)
        inner = _flow_frame(rng, tagged=True, v6=False, tcp=True)
        frames.append(inner[:12] + TPID_8021Q + struct.pack(">H", (pcp << 13) | (dei << 12) | vid)
                      + inner[12:])
    # An S-tag (TPID 0x88a8) outer tag is not an 802.1Q C-tag: never stripped.
    inner = _flow_frame(rng, tagged=True, v6=True, tcp=False)
    frames.append(inner[:12] + b"\x88\xa8\x00\x64" + inner[12:])
    # Buffer boundary: with cvlan+fcs an untagged frame fits up to 2044
    # bytes and a tagged one up to 2048; without flags up to 2048.
    for length in (2043, 2044, 2045, 2047, 2048, 2049):
        frames.append(_frame_of_length(rng, length, tagged=False, v6=rng.random() < 0.5))
    for length in (2044, 2045, 2048, 2049, 2052, 2053):
        frames.append(_frame_of_length(rng, length, tagged=True, v6=rng.random() < 0.5))
    # Jumbo frames that never fit.
    for _ in range(6):
        frames.append(_frame_of_length(rng, rng.randrange(2100, 9001),
                                       tagged=rng.random() < 0.5, v6=rng.random() < 0.5))
    rng.shuffle(frames)
    return frames


def write_pcap(path, frames):
    w = RawPcapWriter(path, linktype=DLT_EN10MB, endianness="<", snaplen=65535)
    w.write_header(None)
    for i, data in enumerate(frames):
        us = i * 10
        w.write_packet(data, sec=1700000000 + us // 1000000, usec=us % 1000000)
    w.close()


def read_pcap(path):
    """Return (linktype, [(bytes, wirelen)]) with the raw bytes of every record."""
    records = []
    reader = RawPcapReader(path)
    try:
        linktype = reader.linktype
        for data, meta in reader:
            records.append((bytes(data), getattr(meta, "wirelen", len(data))))
    finally:
        reader.close()
    return linktype, records


# --------------------------------------------------------------------------
# Checks


class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print("PASS  %s" % name)
        else:
            self.failed += 1
            print("FAIL  %s" % name)
            if detail:
                for line in detail.rstrip("\n").split("\n"):
                    print("      %s" % line)
        return ok


def hexdump(data: bytes, width: int = 16) -> str:
    lines = []
    for off in range(0, len(data), width):
        chunk = data[off:off + width]
        lines.append("%04x  %s" % (off, " ".join("%02x" % b for b in chunk)))
    return "\n".join(lines)


def frame_diff(index: int, in_index: int, want: bytes, got: bytes) -> str:
    first = next((i for i in range(min(len(want), len(got))) if want[i] != got[i]),
                 min(len(want), len(got)))
    lo = max(0, (first // 16 - 2) * 16)
    hi = first + 48
    return ("output frame %d (input frame %d) differs: expected %d bytes, got %d bytes; "
            "first difference at byte %d (0x%x)\nexpected [0x%x..]:\n%s\ngot [0x%x..]:\n%s"
            % (index, in_index, len(want), len(got), first, first,
               lo, hexdump(want[lo:hi]), lo, hexdump(got[lo:hi])))


def compare_frames(expected, origin, got):
    """Return None when equal, else a description of the first mismatch."""
    for i, (w, g) in enumerate(zip(expected, got)):
        if w != g:
            return frame_diff(i, origin[i], w, g)
    if len(expected) != len(got):
        n = min(len(expected), len(got))
        if len(got) > n:
            return ("%d frames expected, got %d; first extra output frame %d (%d bytes):\n%s"
                    % (len(expected), len(got), n, len(got[n]), hexdump(got[n][:64])))
        return ("%d frames expected, got %d; first missing frame %d (input frame %d, "
                "%d bytes):\n%s" % (len(expected), len(got), n, origin[n], len(expected[n]),
                                     hexdump(expected[n][:64])))
    return None


def is_count(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def run_case(res, binary, tmp, name, in_path, in_frames, wqs, flags):
    label = "[%s]" % name
    out_path = os.path.join(tmp, "out-%s.pcap" % name)
    cmd = [binary, "replay", in_path, "--wqs", str(wqs)]
    if flags:
        cmd += ["--flags", ",".join(flags)]
    cmd += ["--capture", out_path, "--json"]
    print("---- %s: %s" % (name, " ".join(cmd)))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as e:
        res.check("%s rdmasim runs" % label, False, repr(e))
        return
    if not res.check("%s exit status 0" % label, proc.returncode == 0,
                     "exit status %d\nstderr:\n%s" % (proc.returncode, proc.stderr[-4000:])):
        return

    # ---- JSON report on stdout
    try:
        report = json.loads(proc.stdout)
        ok = isinstance(report, dict)
        err = "" if ok else "stdout is JSON but not an object"
    except ValueError as e:
        report, ok, err = None, False, "stdout is not one JSON document: %s" % e
    if not res.check("%s --json prints a JSON object" % label, ok,
                     "%s\nstdout:\n%s" % (err, proc.stdout[:2000])):
        return
    missing = [k for k in ("frames_offered", "delivered", "drops", "wqs") if k not in report]
    if not res.check("%s JSON has frames_offered, delivered, drops, wqs" % label, not missing,
                     "missing keys: %s\nJSON: %s" % (missing, json.dumps(report)[:2000])):
        return
    offered, delivered, drops, wq_list = (report["frames_offered"], report["delivered"],
                                          report["drops"], report["wqs"])
    shape_ok = (is_count(offered) and is_count(delivered)
                and isinstance(drops, dict) and all(is_count(v) for v in drops.values())
                and isinstance(wq_list, list)
                and all(isinstance(w, dict) and is_count(w.get("delivered"))
                        and is_count(w.get("bytes")) for w in wq_list))
    if not res.check("%s JSON field types (counts are non-negative integers)" % label, shape_ok,
                     json.dumps(report)[:2000]):
        return
    res.check("%s frames_offered == frames in input (%d)" % (label, len(in_frames)),
              offered == len(in_frames), "frames_offered = %d" % offered)
    res.check("%s frames_offered == delivered + sum(drops)" % label,
              offered == delivered + sum(drops.values()),
              "%d != %d + %s" % (offered, delivered, drops))
    res.check("%s len(wqs) == --wqs %d" % (label, wqs), len(wq_list) == wqs,
              "len(wqs) = %d" % len(wq_list))
    res.check("%s sum(wqs[*].delivered) == delivered" % label,
              sum(w["delivered"] for w in wq_list) == delivered,
              "%s != %d" % ([w["delivered"] for w in wq_list], delivered))
    if wqs > 1:
        busy = sum(1 for w in wq_list if w["delivered"] > 0)
        res.check("%s RSS spreads the flows over more than one WQ" % label, busy > 1,
                  "per-WQ delivered: %s" % [w["delivered"] for w in wq_list])

    # ---- captured output
    expected, origin, n_dropped = expected_output(in_frames, "cvlan" in flags, "fcs" in flags)
    res.check("%s delivered == %d frames that fit, drops == %d that do not"
              % (label, len(expected), n_dropped),
              delivered == len(expected) and sum(drops.values()) == n_dropped,
              "delivered = %d, drops = %s" % (delivered, drops))
    if not res.check("%s --capture wrote %s" % (label, os.path.basename(out_path)),
                     os.path.isfile(out_path), "no file at %s" % out_path):
        return
    try:
        linktype, records = read_pcap(out_path)
    except Exception as e:  # noqa: BLE001 - any parse error is a failure
        res.check("%s output is a readable pcap" % label, False, repr(e))
        return
    res.check("%s output link type Ethernet (1)" % label, linktype == DLT_EN10MB,
              "link type %s" % linktype)
    got = [data for data, _ in records]
    truncated = [i for i, (data, wirelen) in enumerate(records) if wirelen != len(data)]
    res.check("%s output records are whole (caplen == len)" % label, not truncated,
              "records with caplen != len: %s" % truncated[:10])
    mismatch = compare_frames(expected, origin, got)
    res.check("%s output frames equal the expected frames, in order" % label,
              mismatch is None, mismatch or "")
    out_bytes = sum(len(g) for g in got)
    res.check("%s sum(wqs[*].bytes) == bytes in output (%d)" % (label, out_bytes),
              sum(w["bytes"] for w in wq_list) == out_bytes,
              "%s (sum %d)" % ([w["bytes"] for w in wq_list], sum(w["bytes"] for w in wq_list)))

    # ---- independent reader
    if os.path.exists(TSHARK):
        t = subprocess.run([TSHARK, "-n", "-r", out_path, "-T", "fields", "-e", "frame.len"],
                           capture_output=True, text=True, timeout=RUN_TIMEOUT)
        lens = [int(x) for x in t.stdout.split()] if t.returncode == 0 else None
        want = [len(e) for e in expected]
        if lens is None:
            detail = "tshark failed (%d): %s" % (t.returncode, t.stderr[-1000:])
        elif lens != want:
            first = next((i for i in range(min(len(lens), len(want))) if lens[i] != want[i]),
                         min(len(lens), len(want)))
            detail = ("%d lengths from tshark, %d expected; first difference at frame %d: "
                      "tshark %s, expected %s"
                      % (len(lens), len(want), first,
                         lens[first] if first < len(lens) else "-",
                         want[first] if first < len(want) else "-"))
        else:
            detail = ""
        res.check("%s tshark frame.len matches" % label, lens == want, detail)
    else:
        print("note: %s not found, tshark cross-check skipped" % TSHARK)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("rdmasim", help="path to the rdmasim binary")
    ap.add_argument("--seed", type=int, default=20240611, help="capture seed")
    ap.add_argument("--keep", action="store_true", help="keep the temp directory")
    args = ap.parse_args()

    binary = os.path.abspath(args.rdmasim)
    res = Results()
    if not res.check("rdmasim binary is executable (%s)" % binary,
                     os.path.isfile(binary) and os.access(binary, os.X_OK)):
        print("%d passed, %d failed" % (res.passed, res.failed))
        return 1

    tmp = tempfile.mkdtemp(prefix="replay_scapy_")
    try:
        rng = random.Random(args.seed)
        frames = build_capture(rng)
        in_path = os.path.join(tmp, "in.pcap")
        write_pcap(in_path, frames)
        tagged = sum(1 for f in frames if f[12:14] == TPID_8021Q)
        print("capture: %d frames (%d tagged), seed %d, %s"
              % (len(frames), tagged, args.seed, in_path))

        cases = [
            ("cvlan_fcs", 4, ["cvlan", "fcs"]),
            ("plain", 2, []),
            ("cvlan", 4, ["cvlan"]),
            ("fcs", 4, ["fcs"]),
        ]
        for name, wqs, flags in cases:
            run_case(res, binary, tmp, name, in_path, frames, wqs, flags)

        # The bundled sample capture, when present, through the full path.
        if os.path.isfile(SAMPLE):
            _, sample = read_pcap(SAMPLE)
            run_case(res, binary, tmp, "sample_cvlan_fcs", os.path.abspath(SAMPLE),
                     [d for d, _ in sample], 4, ["cvlan", "fcs"])
        else:
            print("note: %s not found, sample pass not run" % SAMPLE)
    finally:
        if args.keep:
            print("kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    print("%d passed, %d failed" % (res.passed, res.failed))
    return 0 if res.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
