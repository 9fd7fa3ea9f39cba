#!/usr/bin/python3
"""How closely a paced replay keeps its schedule.

Writes two captures: SPARSE (10,001 frames 1 ms apart: 10 s) and DENSE
(500,001 frames 10 us apart: 100,000 frames/s for 5 s), then runs
`rdmasim replay FILE --speed original --ring 4096 --json` R times on each, interleaved,
and prints per capture the medians (and worst run) of: the wall-time error
of the whole process against the schedule's span, and the engine's own
per-frame lateness (when a frame entered the port minus when it was due):
p50, p99, max. The load average before and after is printed too: the tail
figures depend on what else the machine runs. Frames the receiver did not
re-post buffers for in time are counted as drops, not hidden.

usage: pacing_bench.py RDMASIM [--runs R] [--keep DIR]
"""
import argparse
import json
import os
import statistics
import struct
import subprocess
import tempfile
import time

CAPTURES = {  # name: (frames, gap between frames in ns)
    "sparse": (10_001, 1_000_000),
    "dense": (500_001, 10_000),
}


def write_capture(path, frames, gap_ns):
    """Nanosecond pcap of 64-byte UDP/IPv4 frames over 16 flows, gap_ns apart."""
    t0 = 1_700_000_000 * 10**9
    records = []
    for i in range(16):
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 46, 0, 0, 64, 17, 0,
                         bytes([10, 0, 0, 1]), bytes([10, 0, 1, i]))
        udp = struct.pack(">HHHH", 1024 + i, 4791, 26, 0)
        records.append(b"\x02\x52\x44\x4d\x00\x00\x02\x00\x00\x00\x00\x01\x08\x00"
                       + ip + udp + bytes(18))
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1))
        for i in range(frames):
            t = t0 + i * gap_ns
            frame = records[i % 16]
            f.write(struct.pack("<IIII", t // 10**9, t % 10**9, len(frame), len(frame)))
            f.write(frame)


def replay(rdmasim, path):
    cmd = [rdmasim, "replay", path, "--speed", "original", "--ring", "4096", "--json"]
    t = time.monotonic()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    wall = time.monotonic() - t
    return wall, json.loads(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rdmasim")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keep", help="write the captures here and keep them")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        where = a.keep or tmp
        os.makedirs(where, exist_ok=True)
        paths = {}
        for name, (frames, gap) in CAPTURES.items():
            paths[name] = os.path.join(where, f"pacing-{name}.pcap")
            write_capture(paths[name], frames, gap)
        load_before = os.getloadavg()[0]
        results = {name: [] for name in CAPTURES}
        for _ in range(a.runs):  # interleaved: both see the same machine noise
            for name, path in paths.items():
                results[name].append(replay(a.rdmasim, path))
        load_after = os.getloadavg()[0]

    print(f"{a.runs} runs of `{os.path.basename(a.rdmasim)} replay FILE --speed original"
          " --ring 4096 --json`"
          f" per capture; load average {load_before:.2f} before, {load_after:.2f} after")
    print(f"  {'capture':<34} {'wall error %':>14} {'p50 us':>9} {'p99 us':>9} {'max us':>9}"
          f" {'drops':>7}")
    for name, runs in results.items():
        frames, gap = CAPTURES[name]
        span = (frames - 1) * gap / 1e9
        errors = [(wall - span) / span * 100 for wall, _ in runs]
        pacing = [out["pacing"] for _, out in runs]
        drops = [frames - out["delivered"] for _, out in runs]
        med = lambda key: statistics.median(p[key] for p in pacing)
        worst = lambda key: max(p[key] for p in pacing)
        label = f"{name}: {frames} frames over {span:g} s"
        print(f"  {label:<34} {statistics.median(errors):>+14.2f} {med('p50_us'):>9.1f}"
              f" {med('p99_us'):>9.1f} {med('max_us'):>9.1f} {statistics.median(drops):>7g}   (median)")
        print(f"  {'':<34} {max(errors):>+14.2f} {worst('p50_us'):>9.1f}"
              f" {worst('p99_us'):>9.1f} {worst('max_us'):>9.1f} {max(drops):>7}   (worst run)")


if __name__ == "__main__":
    main()
