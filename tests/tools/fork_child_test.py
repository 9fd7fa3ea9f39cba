#!/usr/bin/python3
"""A program that forks after opening a device (examples/fork_child.c), run
under `rdmasim run --stats S --trace T --tx-capture P`: the child's RC SEND,
posted before its receive, completes on the child's own engine, and the
parent's work after the fork too (sim/README.md, "Fork"). The output files
are the parent's alone: the trace holds the parent's 4 completions once
each (the child neither adds its own nor writes the parent's buffered
lines a second time), the stats document is whole, and the capture is a
well-formed pcap file.

usage: fork_child_test.py RDMASIM FORK_CHILD
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

rdmasim, program = sys.argv[1:3]
env = {k: v for k, v in os.environ.items() if not k.startswith("RDMASIM_")}
problems = []
with tempfile.TemporaryDirectory() as d:
    stats, trace, cap = (os.path.join(d, n) for n in ("stats.json", "trace.jsonl", "sent.pcap"))
    p = subprocess.run([rdmasim, "run", "--stats", stats, "--trace", trace, "--tx-capture", cap,
                        "--", program], capture_output=True, text=True, env=env, timeout=60)
    print(p.stdout, p.stderr, sep="")
    if p.returncode != 0:
        problems.append(f"exit status {p.returncode}")
    if "[child] qpns" not in p.stdout or "2 of 2 completions" not in p.stdout.split("[child]")[-1]:
        problems.append("the child's transfer did not complete")
    with open(trace) as f:
        lines = [json.loads(line) for line in f]
    done = [(e["qp_num"], e["wr_id"]) for e in lines if e["event"] == "completion"]
    # Before the fork: QPs 0x100 and 0x101; after it, the parent's 0x102 and 0x103.
    want = [(0x100, 1), (0x101, 2), (0x102, 1), (0x103, 2)]
    if sorted(done) != want:
        problems.append(f"trace completions {[(hex(q), w) for q, w in done]}, want {want}")
    with open(stats) as f:
        json.load(f)
    with open(cap, "rb") as f:
        data = f.read()
    off, frames = 24, 0
    while off + 16 <= len(data):
        caplen = struct.unpack_from("<I", data, off + 8)[0]
        off += 16 + caplen
        frames += 1
    if len(data) < 24 or off != len(data):
        problems.append(f"capture not whole: {len(data)} bytes, records end at {off}")
    print(f"trace: {len(done)} completions; capture: {frames} frames")
if problems:
    print("FAIL:", "; ".join(problems))
    sys.exit(1)
print("ok")
