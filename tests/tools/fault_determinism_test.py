#!/usr/bin/python3
"""A fault plan is deterministic (sim/README.md, "Fault injection"): the
unmodified C example run twice under `rdmasim run --deterministic --faults
'seed=7;drop:p=0.1' --trace` gives the same completions and the same trace,
line for line; another seed gives others; about 10% of the frames are lost,
each one a fault line in the trace, and every other frame completes.

usage: fault_determinism_test.py RDMASIM RSS_RECEIVE SAMPLE_PCAP
"""
import json
import os
import struct
import subprocess
import sys
import tempfile


def run(rdmasim, example, pcap, seed, tmp, tag):
    dump = os.path.join(tmp, f"dump-{tag}.txt")
    trace = os.path.join(tmp, f"trace-{tag}.jsonl")
    cmd = [rdmasim, "run", "--deterministic", "--pcap", pcap, "--faults", f"seed={seed};drop:p=0.1",
           "--trace", trace, "--", example, "--wqs", "4", "--frames", "100000", "--dump", dump,
           "--idle-ms", "300"]
    # The example ends when the frames stop coming (exit 1: fewer than asked).
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if proc.returncode not in (0, 1) or not os.path.exists(trace):
        print(proc.stdout + proc.stderr)
        raise SystemExit(f"FAIL: {' '.join(cmd)} exited {proc.returncode}")
    with open(dump) as f:
        completions = f.read()
    with open(trace) as f:
        events = [json.loads(line) for line in f]
    return completions, events


def count_records(path):
    """Records of a classic pcap file (either byte order)."""
    with open(path, "rb") as f:
        data = f.read()
    endian = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    pos, n = 24, 0
    while pos + 16 <= len(data):
        (caplen,) = struct.unpack(endian + "I", data[pos + 8:pos + 12])
        pos += 16 + caplen
        n += 1
    return n


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    rdmasim, example, pcap = sys.argv[1:]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        a_out, a_trace = run(rdmasim, example, pcap, 7, tmp, "a")
        b_out, b_trace = run(rdmasim, example, pcap, 7, tmp, "b")
        c_out, c_trace = run(rdmasim, example, pcap, 8, tmp, "c")
    frames = count_records(pcap)
    drops = [e for e in a_trace if e["event"] == "fault"]
    completions = [e for e in a_trace if e["event"] == "completion"]
    print(f"{frames} frames; seed 7: {len(drops)} dropped, {len(completions)} completions; "
          f"seed 8: {sum(1 for e in c_trace if e['event'] == 'fault')} dropped")
    if a_out != b_out:
        failures.append("the same seed gave different completions")
    if a_trace != b_trace:
        failures.append("the same seed gave different traces")
    if a_trace == c_trace or a_out == c_out:
        failures.append("another seed gave the same run")
    if not 0.05 * frames <= len(drops) <= 0.15 * frames:
        failures.append(f"{len(drops)} drops for {frames} frames: not about 10%")
    if any(e["kind"] != "drop" for e in drops):
        failures.append("a fault other than drop in the trace")
    if len(completions) + len(drops) != frames:
        failures.append(f"{len(completions)} completions + {len(drops)} drops != {frames} frames")
    if len(a_out.splitlines()) != len(completions):
        failures.append("the example's dump and the trace disagree on the completions")
    for f in failures:
        print("FAIL:", f)
    print(f"{6 - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
