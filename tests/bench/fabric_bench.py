#!/usr/bin/python3
"""Issue 31's targets, side by side with the machine's floors, in one run.

usage: fabric_bench.py [--build DIR] [--rdmasim PATH] [--wire KIND ...] [--reps N] [--json FILE]
                       [--markdown FILE]
  --build  the build directory (default: build): its tools/rdmasim and
           tests/bench/pipe_floor
  --rdmasim  another rdmasim to measure (another build's, for a before/after)
  --wire   ptp (ptp://DIR/sock, the default) and/or shm (shm://DIR/shm)
  --reps   repetitions, interleaved (default 5); each figure is their median

The floors (tests/bench/pipe_floor.c): a pipe between two processes moving
64 KiB writes (GB/s, 10^9 bytes/s), and a 1-byte ping-pong over two pipes
(half the round trip, us). Then, per wire, two programs each under its own
`rdmasim run --wire URL` (tests/clients/two_hosts.py starts them), perftest
RC with `-d rdmasim0 -x 0`: `ib_write_bw -s 65536 -n 5000`, `ib_read_bw -s
65536 -n 2000` (the client's BW average; perftest's MB is 2^20 bytes, the
fraction is of the pipe's bytes/s) and `ib_send_lat -s 8 -n 5000` (t_typical
and the 99% percentile, us; typical / the pipe's half round trip; p99 /
typical), and the frames the wire refused (`send.not_sent` of both sides'
--stats documents). Each repetition runs every measurement once, in this
order, so all see the same machine. A run that fails (exit status, no
result line) is reported and left out of the medians.

Prints a Markdown table (also to --markdown) and writes the runs and
medians to --json. A benchmark, not a test: `meson test -C build --benchmark
fabric --verbose` runs it with its defaults.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "clients"))
sys.path.insert(0, HERE)
from bench_report import machine  # noqa: E402
from lossless_test import WirePair  # noqa: E402
from perftest_test import result_line  # noqa: E402

PIPE_MIB = 2048
PINGPONG_ROUND_TRIPS = 50000
PERFTEST = ["-d", "rdmasim0", "-x", "0"]
PROGRAMS = {  # name: (command, what the client's result line gives)
    "write_bw": (["ib_write_bw", "-s", "65536", "-n", "5000", *PERFTEST], "bw"),
    "read_bw": (["ib_read_bw", "-s", "65536", "-n", "2000", *PERFTEST], "bw"),
    "send_lat": (["ib_send_lat", "-s", "8", "-n", "5000", *PERFTEST], "lat"),
}
URLS = {"ptp": lambda d: f"ptp://{d}/sock", "shm": lambda d: f"shm://{d}/shm"}
MB = 1 << 20  # perftest's MB/sec
BW_TARGET = {"ptp": ">= 0.2", "shm": ">= 0.5 (stretch 1.0)"}


def floor(pipe_floor, *args):
    out = subprocess.run([pipe_floor, *args], capture_output=True, text=True, timeout=300, check=True)
    return json.loads(out.stdout)


def perftest(rdmasim, tmp, wire, name, rep):
    """One perftest pair: its figures, or {"error": ...}."""
    args, kind = PROGRAMS[name]
    pair = WirePair(rdmasim, tmp, f"{wire}-{name}-{rep}", args, URLS[wire])
    seconds = pair.run(180)
    line = result_line(pair.client.stdout)
    if pair.server.rc != 0 or pair.client.rc != 0 or line is None:
        return {"error": f"exit {pair.server.rc}/{pair.client.rc}", "output": pair.show()[-2000:]}
    v = dict(zip(*line))
    # Frames the wire refused, both sides (the lossless links' figure).
    refused = sum(d["devices"][0]["send"]["not_sent"] for d in map(pair.stats, ("server", "client")) if d)
    if kind == "bw":
        return {"MBps": float(v["BW average[MB/sec]"]), "refused": refused, "seconds": seconds}
    return {"typical_us": float(v["t_typical[usec]"]), "p99_us": float(v["99% percentile[usec]"]),
            "refused": refused, "seconds": seconds}


def measure(build, rdmasim, wires, reps):
    pipe_floor = os.path.join(build, "tests", "bench", "pipe_floor")
    runs = []
    with tempfile.TemporaryDirectory(prefix="fabric-bench-") as tmp:
        for rep in range(reps):
            run = {"pipe_bw": floor(pipe_floor, "bw", str(PIPE_MIB)),
                   "pipe_pingpong": floor(pipe_floor, "pingpong", str(PINGPONG_ROUND_TRIPS))}
            for wire in wires:
                for name in PROGRAMS:
                    run[f"{wire}.{name}"] = perftest(rdmasim, tmp, wire, name, rep)
            runs.append(run)
            print(f"repetition {rep + 1} of {reps}: {json.dumps(compact(run))}", flush=True)
    return runs


def compact(run):
    return {k: {f: v for f, v in r.items() if f != "output"} for k, r in run.items()}


def median(runs, key, field):
    values = [r[key][field] for r in runs if field in r.get(key, {})]
    return (statistics.median(values), min(values), max(values), len(values)) if values else None


def summarize(runs, wires):
    """The medians and ratios, one dict per row of the table."""
    bw = median(runs, "pipe_bw", "GBps")
    half = median(runs, "pipe_pingpong", "half_rtt_us")
    rows = [{"what": "pipe, 64 KiB writes (floor)", "value": bw, "unit": "GB/s"},
            {"what": "pipe ping-pong, 1 B, half round trip (floor)", "value": half, "unit": "us"}]
    for wire in wires:
        for name, label in (("write_bw", "ib_write_bw -s 65536"), ("read_bw", "ib_read_bw -s 65536")):
            m = median(runs, f"{wire}.{name}", "MBps")
            ratio = m[0] * MB / (bw[0] * 1e9) if m and bw else None
            rows.append({"what": f"{wire}: {label}", "value": m, "unit": "MB/s", "ratio": ratio,
                         "ratio_of": "pipe GB/s", "target": BW_TARGET[wire],
                         "refused": median(runs, f"{wire}.{name}", "refused")})
        typ = median(runs, f"{wire}.send_lat", "typical_us")
        p99 = median(runs, f"{wire}.send_lat", "p99_us")
        rows.append({"what": f"{wire}: ib_send_lat -s 8, typical", "value": typ, "unit": "us",
                     "ratio": typ[0] / half[0] if typ and half else None, "ratio_of": "pipe half round trip",
                     "target": "<= 1.0 (stretch 0.3)", "refused": median(runs, f"{wire}.send_lat", "refused")})
        rows.append({"what": f"{wire}: ib_send_lat -s 8, 99%", "value": p99, "unit": "us",
                     "ratio": p99[0] / typ[0] if p99 and typ else None, "ratio_of": "typical",
                     "target": "<= 5"})
    return rows


def markdown(rows, reps):
    out = [f"| measurement | median ({reps} reps) | min-max | unit | ratio | of | target | frames refused |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        v = r["value"]
        med, spread = (f"{v[0]:.3g}", f"{v[1]:.3g}-{v[2]:.3g}" + (f" ({v[3]} ok)" if v[3] < reps else "")) \
            if v else ("failed", "")
        ratio = f"{r['ratio']:.3f}" if r.get("ratio") is not None else ""
        refused = f"{r['refused'][0]:.0f}" if r.get("refused") else ""
        out.append(f"| {r['what']} | {med} | {spread} | {r['unit']} | {ratio} | {r.get('ratio_of', '')} | "
                   f"{r.get('target', '')} | {refused} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--rdmasim")
    ap.add_argument("--wire", action="append", choices=sorted(URLS))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    wires = a.wire or ["ptp"]
    build = os.path.abspath(a.build)
    info = machine()
    t0 = time.monotonic()
    rdmasim = os.path.abspath(a.rdmasim or os.path.join(build, "tools", "rdmasim"))
    info["rdmasim"] = rdmasim
    runs = measure(build, rdmasim, wires, a.reps)
    rows = summarize(runs, wires)
    info["load_after"] = os.getloadavg()[0]
    info["seconds"] = round(time.monotonic() - t0, 1)
    text = markdown(rows, a.reps)
    print(f"machine: {json.dumps(info)}\n\n{text}")
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text + "\n")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"machine": info, "wires": wires, "rows": rows, "runs": runs}, f, indent=2)
    failed = sum(1 for r in runs for v in r.values() if "error" in v)
    for r in runs:
        for k, v in r.items():
            if "error" in v:
                print(f"failed: {k}: {v['error']}\n{v['output']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
