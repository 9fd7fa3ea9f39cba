#!/usr/bin/python3
"""Golden test: `rdmasim replay` must keep giving the same bytes and counters.

Usage: /usr/bin/python3 tests/golden/replay_golden.py RDMASIM [--record]

Recorded before the port moved into the datapath (the redesign issue), so
that refactors can prove behaviour did not change. For each capture (the
bundled sample and a capture generated here from a fixed seed), each WQ flag
alone and all together, and both engines, it runs

    RDMASIM replay CAPTURE --flags F --engine E --json --capture OUT.pcap

and compares with tests/golden/expected/<case>.txt:
  * the JSON counters (the "file" path reduced to its base name);
  * one line per delivered frame of OUT.pcap: length and SHA-256 of the
    bytes, and the timestamp for the inline engine (virtual time taken from
    the capture; the thread engine stamps real time, so it is left out).

The thread engine runs with rings large enough that nothing depends on
timing. Extra inline cases use tiny rings, so that out-of-buffer drops and
delay-drop holding (and its release order) are in the golden data too.

--record rewrites the expected files (only do that for an intended change,
and say why in the commit). Exit 0 when every case matches, 1 otherwise.
"""

import difflib
import hashlib
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED = os.path.join(HERE, "expected")
SAMPLE = os.path.join(HERE, os.pardir, "data", "sample.pcap")
RUN_TIMEOUT = 120

FLAG_SETS = {
    "none": "",
    "cvlan": "cvlan",
    "fcs": "fcs",
    "pad": "pad",
    "delaydrop": "delay-drop",
    "all": "cvlan,fcs,pad,delay-drop",
}


# --------------------------------------------------------------------------
# A generated capture: plain struct packing, a fixed seed, no scapy, so that
# the bytes never depend on a library version.

def csum16(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def make_frame(rng: random.Random, i: int) -> bytes:
    dst = bytes([0x02, 0, 0, 0, 0, rng.randrange(256)])
    src = bytes([0x02, 1, 1, 1, 1, rng.randrange(256)])
    kind = rng.choice(["v4tcp", "v4udp", "v6tcp", "v6udp", "arp", "v4frag", "v4icmp"])
    tag = b""
    if rng.random() < 0.3:
        tci = (rng.randrange(8) << 13) | (rng.randrange(2) << 12) | rng.randrange(4095)
        tag = b"\x81\x00" + struct.pack("!H", tci)
    size = rng.choice([0, 1, 17, 64, 200, 512, 1000, 1400, 1460, 1960, 1990, 2100, 4000])
    payload = bytes(rng.randrange(256) for _ in range(size))
    sport, dport = rng.randrange(1024, 65535), rng.choice([80, 443, 4791, 53, 9000])
    if kind == "arp":
        body = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, src, bytes([10, 0, 0, i % 250]),
                           bytes(6), bytes([10, 0, 0, 1]))
        l2 = dst + src + tag + b"\x08\x06"
        frame = l2 + body
    elif kind.startswith("v4"):
        if kind.endswith("tcp"):
            proto, l4 = 6, struct.pack("!HHIIBBHHH", sport, dport, i, 0, 0x50, 0x18, 8192, 0, 0)
        elif kind.endswith("icmp"):
            proto, l4 = 1, struct.pack("!BBHHH", 8, 0, 0, i & 0xFFFF, 1)
        else:
            proto, l4 = 17, struct.pack("!HHHH", sport, dport, 8 + len(payload), 0)
        data = l4 + payload
        frag = 0x2000 if kind == "v4frag" else 0x4000
        if kind == "v4frag":
            proto = 17
        saddr = bytes([10, rng.randrange(4), rng.randrange(256), rng.randrange(1, 255)])
        daddr = bytes([192, 168, rng.randrange(4), rng.randrange(1, 255)])
        hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(data), i & 0xFFFF, frag, 64, proto, 0,
                          saddr, daddr)
        hdr = hdr[:10] + struct.pack("!H", csum16(hdr)) + hdr[12:]
        frame = dst + src + tag + b"\x08\x00" + hdr + data
    else:
        if kind.endswith("tcp"):
            nh, l4 = 6, struct.pack("!HHIIBBHHH", sport, dport, i, 0, 0x50, 0x18, 8192, 0, 0)
        else:
            nh, l4 = 17, struct.pack("!HHHH", sport, dport, 8 + len(payload), 0)
        data = l4 + payload
        saddr = b"\x20\x01\x0d\xb8" + bytes(rng.randrange(256) for _ in range(12))
        daddr = b"\x20\x01\x0d\xb8" + bytes(rng.randrange(256) for _ in range(12))
        hdr = struct.pack("!IHBB16s16s", 0x60000000 | rng.randrange(1 << 20), len(data), nh, 64,
                          saddr, daddr)
        frame = dst + src + tag + b"\x86\xdd" + hdr + data
    if len(frame) < 60:
        frame += bytes(60 - len(frame))
    return frame


def write_generated(path: str, frames: int = 1500) -> None:
    rng = random.Random(0x601DE4)
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i in range(frames):
            frame = make_frame(rng, i)
            ts_us = 1_700_000_000_000_000 + i * 7 + (i // 50) * 1000
            f.write(struct.pack("<IIII", ts_us // 1_000_000, ts_us % 1_000_000, len(frame), len(frame)))
            f.write(frame)


# --------------------------------------------------------------------------

def read_pcap(path: str):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack_from("<I", data, 0)[0]
    if magic == 0xA1B2C3D4:
        scale = 1000
    elif magic == 0xA1B23C4D:
        scale = 1
    else:
        raise ValueError("%s: not a little-endian pcap (magic %#x)" % (path, magic))
    off = 24
    while off < len(data):
        sec, frac, caplen, _wire = struct.unpack_from("<IIII", data, off)
        off += 16
        yield sec * 1_000_000_000 + frac * scale, data[off:off + caplen]
        off += caplen


def cases():
    for cap in ("sample", "generated"):
        for name, flags in FLAG_SETS.items():
            for engine in ("inline", "thread"):
                ring = "256" if engine == "inline" else "4096"
                yield "%s-%s-%s" % (cap, name, engine), cap, flags, engine, ring
        # Tiny rings, inline only (deterministic): out-of-buffer drops, and
        # delay-drop holding and release.
        yield "%s-ring4-inline" % cap, cap, "", "inline", "4"
        yield "%s-ring4-delaydrop-inline" % cap, cap, "delay-drop", "inline", "4"
        yield "%s-ring4-all-inline" % cap, cap, "cvlan,fcs,pad,delay-drop", "inline", "4"


def run_case(rdmasim, capture, flags, engine, ring, tmp):
    out = os.path.join(tmp, "out.pcap")
    cmd = [rdmasim, "replay", capture, "--engine", engine, "--ring", ring, "--json",
           "--capture", out]
    if flags:
        cmd += ["--flags", flags]
    env = dict(os.environ)
    env.pop("RDMASIM_CONFIG", None)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT, env=env)
    if proc.returncode != 0:
        raise RuntimeError("%s exited %d: %s" % (" ".join(cmd), proc.returncode, proc.stderr))
    report = json.loads(proc.stdout)
    report["file"] = os.path.basename(report["file"])
    lines = ["command: replay %s --engine %s --ring %s --flags %s" %
             (os.path.basename(capture), engine, ring, flags or "none")]
    lines += json.dumps(report, indent=1, sort_keys=True).splitlines()
    for n, (ts, data) in enumerate(read_pcap(out)):
        digest = hashlib.sha256(data).hexdigest()[:24]
        if engine == "inline":
            lines.append("frame %d ts %d len %d sha %s" % (n, ts, len(data), digest))
        else:
            lines.append("frame %d len %d sha %s" % (n, len(data), digest))
    return lines


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    rdmasim = sys.argv[1]
    record = "--record" in sys.argv[2:]
    failures = 0
    with tempfile.TemporaryDirectory(prefix="rdmasim-golden-") as tmp:
        generated = os.path.join(tmp, "generated.pcap")
        write_generated(generated)
        captures = {"sample": SAMPLE, "generated": generated}
        os.makedirs(EXPECTED, exist_ok=True)
        for name, cap, flags, engine, ring in cases():
            got = run_case(rdmasim, captures[cap], flags, engine, ring, tmp)
            path = os.path.join(EXPECTED, name + ".txt")
            if record:
                with open(path, "w") as f:
                    f.write("\n".join(got) + "\n")
                print("recorded %s (%d lines)" % (name, len(got)))
                continue
            try:
                with open(path) as f:
                    want = f.read().splitlines()
            except FileNotFoundError:
                print("FAIL %s: no expected file %s" % (name, path))
                failures += 1
                continue
            if got != want:
                failures += 1
                print("FAIL %s:" % name)
                diff = list(difflib.unified_diff(want, got, "expected", "got", lineterm="", n=1))
                print("\n".join(diff[:60]))
            else:
                print("ok   %s" % name)
    total = sum(1 for _ in cases())
    print("%d passed, %d failed" % (total - failures, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
