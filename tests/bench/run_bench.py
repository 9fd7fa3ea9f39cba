#!/usr/bin/python3
"""Replay throughput, side by side with a plain libpcap read loop.

Writes a capture of N frames (mixed sizes, IPv4/IPv6, TCP/UDP, some tagged,
many flows), then alternates the baseline and `rdmasim replay` (inline engine,
4 WQs, RSS, CVLAN strip + FCS) R times each and prints the median wall time,
frames per second and the ratio.

usage: run_bench.py RDMASIM PCAP_READ_LOOP [--frames N] [--runs R]
"""
import argparse
import os
import random
import statistics
import struct
import subprocess
import tempfile
import time


def frame(rng, i):
    size = rng.choice([64, 64, 128, 256, 512, 1024, 1500])
    mac = b"\x02\x52\x44\x4d\x00\x00" + b"\x02\x00\x00\x00\x00" + bytes([i % 256])
    tag = struct.pack(">HH", 0x8100, rng.randrange(1, 4095)) if i % 3 == 0 else b""
    sport, dport = rng.randrange(1024, 65535), rng.choice([80, 443, 4791])
    if i % 4 == 3:
        l4 = struct.pack(">HHHH", sport, dport, 8, 0)
        ip = struct.pack(">IHBB", 0x60000000, 0, 17, 64) + rng.randbytes(32)
        hdr = mac + tag + b"\x86\xdd" + ip + l4
    else:
        proto = 6 if i % 2 else 17
        l4 = (struct.pack(">HHIIHHHH", sport, dport, i, 0, 0x5010, 8192, 0, 0) if proto == 6
              else struct.pack(">HHHH", sport, dport, 8, 0))
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 0, 0, 0, 64, proto, 0,
                         rng.getrandbits(32).to_bytes(4, "big"), rng.getrandbits(32).to_bytes(4, "big"))
        hdr = mac + tag + b"\x08\x00" + ip + l4
    return hdr + bytes(max(0, size - len(hdr)))


def write_capture(path, n):
    rng = random.Random(1)
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        for i in range(n):
            data = frame(rng, i)
            f.write(struct.pack("<IIII", 1700000000 + i // 1000000, i % 1000000, len(data), len(data)))
            f.write(data)


def timed(cmd):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rdmasim")
    ap.add_argument("baseline")
    ap.add_argument("--frames", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cap = os.path.join(tmp, "bench.pcap")
        write_capture(cap, a.frames)
        size = os.path.getsize(cap)
        base, sim = [], []
        for _ in range(a.runs):  # interleaved: both see the same machine noise
            base.append(timed([a.baseline, cap]))
            sim.append(timed([a.rdmasim, "replay", cap, "--wqs", "4", "--flags", "cvlan,fcs",
                              "--ring", "1024", "--json"]))
    mb, ms = statistics.median(base), statistics.median(sim)
    print(f"capture: {a.frames} frames, {size / 1e6:.1f} MB; {a.runs} runs each, medians:")
    print(f"  libpcap read loop : {mb * 1e3:8.1f} ms  {a.frames / mb / 1e6:6.2f} Mframes/s")
    print(f"  rdmasim replay    : {ms * 1e3:8.1f} ms  {a.frames / ms / 1e6:6.2f} Mframes/s")
    print(f"  ratio (replay / read loop time): {ms / mb:.2f}")


if __name__ == "__main__":
    main()
