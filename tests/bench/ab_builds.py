#!/usr/bin/python3
"""A/B of two builds side by side: bench case 2 (datapath_bench mpps, 4,096
64-byte frames in memory, 10M frames) and the RoCE transport bench, runs
interleaved so both sides see the same machine.

usage: ab_builds.py BASE_BUILD NEW_BUILD [RUNS]   (build dirs; RUNS of case 2, default 7)
e.g.   git worktree add /tmp/base 42092de && meson setup /tmp/base/build /tmp/base -Dwerror=true
       ninja -C /tmp/base/build tests/bench/datapath_bench tests/bench/roce_transport_bench
       tests/bench/ab_builds.py /tmp/base/build build 9
"""
import json, os, re, statistics, subprocess, sys, tempfile
if len(sys.argv) not in (3, 4):
    sys.exit(__doc__.strip())
A = os.path.join(sys.argv[1], "tests/bench")
B = os.path.join(sys.argv[2], "tests/bench")
cap = os.path.join(tempfile.mkdtemp(), "csmall.pcap")
subprocess.run([B + "/make_capture", cap, "4096", "64"], check=True, capture_output=True)
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 7
m = {"base": [], "new": []}
for i in range(runs):
    for name, d in (("base", A), ("new", B)) if i % 2 == 0 else (("new", B), ("base", A)):
        out = subprocess.run([d + "/datapath_bench", "mpps", cap, "10000000"], check=True,
                             capture_output=True, text=True).stdout
        m[name].append(json.loads(out)["mpps_cpu"])
print("case 2 Mpps (CPU), runs", runs)
for k, v in m.items(): print(f"  {k}: median {statistics.median(v):.2f}  all {[round(x,2) for x in v]}")
r = [n / b for n, b in zip(m["new"], m["base"])]
print(f"  paired new/base median {statistics.median(r):.3f}")
t = {"base": {}, "new": {}}
for i in range(3):
    for name, d in (("base", A), ("new", B)) if i % 2 == 0 else (("new", B), ("base", A)):
        out = subprocess.run([d + "/roce_transport_bench", "100000"], check=True, capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            mm = re.match(r"\s*(\d+) B\s+mtu\s+(\d+).*?([\d.]+) ns/pkt", line)
            if mm: t[name].setdefault((int(mm[1]), int(mm[2])), []).append(float(mm[3]))
print("roce_transport_bench 100000: ns/pkt medians of 3 (base / new / ratio)")
for key in sorted(t["base"]):
    b = statistics.median(t["base"][key]); n = statistics.median(t["new"][key])
    print(f"  {key[0]:6d} B mtu {key[1]:4d}: {b:7.0f} / {n:7.0f} / {n/b:.3f}")
