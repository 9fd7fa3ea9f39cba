#!/usr/bin/python3
"""Issue 33, item 8: UCX and Open MPI over rdmasim, side by side with their
own TCP transports over loopback, in one run.

usage: frameworks_bench.py [--build DIR] [--reps N] [--json FILE]

Each repetition runs, in this order (so all see the same machine):
  * ucx_perftest between two programs: over rdmasim (each under its own
    `rdmasim run --wire shm://DIR/sock`, UCX_TLS=rc_v,self and ud_v,self),
    and over UCX's tcp transport on loopback (UCX_TLS=tcp,self, no
    rdmasim): tag_lat 8 B (median, us), tag_bw, ucp_put_bw and ucp_get
    64 KiB (MB/s, UCX's MB = 2^20 bytes), -n 2000;
  * tests/examples/mpi_check with 2 ranks: over rdmasim (`rdmasim run
    --wire shm://... -- mpirun -np 2 --mca pml ucx -x UCX_TLS=rc_v,self`)
    and over Open MPI's own TCP (`mpirun -np 2 --mca pml ob1 --mca btl
    tcp,self`, no rdmasim): the ping-pong's half round trip at 8 B (the
    4 B and 16 B sizes bracket it: 4 B is reported) and MB/s at 1 MiB and
    4 MiB.
Medians over the repetitions (default 3); prints a Markdown table.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "clients"))
sys.path.insert(0, HERE)
from bench_report import machine  # noqa: E402
from two_hosts import Pair, Program, free_tcp_port, listening  # noqa: E402

UCX_TESTS = [("tag_lat", "8", "lat"), ("tag_bw", "65536", "bw"), ("ucp_put_bw", "65536", "bw"),
             ("ucp_get", "65536", "bw")]
FINAL = re.compile(r"^Final:\s+\d+\s+([\d.]+)\s+[\d.]+\s+[\d.]+\s+([\d.]+)", re.MULTILINE)
PINGPONG = re.compile(r"pingpong\s+(\d+) B: half round trip\s+([\d.]+) us,\s+([\d.]+) MB/s")
ROOT = ["--allow-run-as-root"] if os.geteuid() == 0 else []


def ucx_value(out, kind):
    m = FINAL.search(out)
    return None if m is None else float(m.group(1) if kind == "lat" else m.group(2))


def ucx_rdmasim(rdmasim, tmp, tag, tls, test, size):
    os.environ.update(UCX_TLS=f"{tls},self", UCX_NET_DEVICES="rdmasim0:1")
    pair = Pair(rdmasim, tmp, tag, ["ucx_perftest", "-t", test, "-s", size, "-n", "2000"], scheme="shm")
    pair.run()
    return pair.client.stdout if pair.client.rc == 0 and pair.server.rc == 0 else ""


def ucx_tcp(test, size):
    env_keep = {k: os.environ.pop(k) for k in ("UCX_NET_DEVICES",) if k in os.environ}
    os.environ["UCX_TLS"] = "tcp,self"
    port = free_tcp_port()
    args = ["ucx_perftest", "-t", test, "-s", size, "-n", "2000", "-p", str(port)]
    server = Program("server", args)
    while not listening(port) and server.proc.poll() is None:
        time.sleep(0.02)  # not a spin: the server needs the CPU to start
    client = Program("client", args + ["127.0.0.1"])
    client.finish(120)
    server.finish(20)
    os.environ.update(env_keep)
    return client.stdout if client.rc == 0 and server.rc == 0 else ""


def mpi(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    if p.returncode != 0 or "mpi_check: OK" not in p.stdout:
        return {}
    return {int(s): (float(us), float(mb)) for s, us, mb in PINGPONG.findall(p.stdout)}


def one_rep(build, tmp, rep):
    rdmasim = os.path.join(build, "tools", "rdmasim")
    mpi_check = os.path.join(build, "tests", "examples", "mpi_check")
    r = {}
    for test, size, kind in UCX_TESTS:
        for tls in ("rc_v", "ud_v"):
            r[f"ucx {tls} {test}"] = ucx_value(ucx_rdmasim(rdmasim, tmp, f"{rep}-{tls}-{test}", tls, test, size),
                                               kind)
        r[f"ucx tcp {test}"] = ucx_value(ucx_tcp(test, size), kind)
    wire = os.path.join(tmp, f"{rep}-mpi")
    os.makedirs(wire, mode=0o700)
    for k in [k for k in os.environ if k.startswith("UCX_")]:
        del os.environ[k]
    runs = {
        "mpi rdmasim": [rdmasim, "run", "--wire", f"shm://{wire}/sock", "--", "mpirun", *ROOT, "-np", "2",
                        "--mca", "pml", "ucx", "-x", "UCX_TLS=rc_v,self", mpi_check],
        "mpi tcp": ["mpirun", *ROOT, "-np", "2", "--mca", "pml", "ob1", "--mca", "btl", "tcp,self", mpi_check],
    }
    for name, cmd in runs.items():
        pp = mpi(cmd)
        r[f"{name} 4 B us"] = pp.get(4, (None, None))[0]
        r[f"{name} 1 MiB MB/s"] = pp.get(1 << 20, (None, None))[1]
        r[f"{name} 4 MiB MB/s"] = pp.get(4 << 20, (None, None))[1]
    return r


def median(values):
    v = [x for x in values if x is not None]
    return (statistics.median(v), min(v), max(v), len(v)) if v else None


def num(v):
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def fmt(m):
    return "failed" if m is None else f"{num(m[0])} ({num(m[1])}-{num(m[2])})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    reps = []
    with tempfile.TemporaryDirectory(prefix="frameworks-") as tmp:
        for rep in range(a.reps):
            reps.append(one_rep(build, tmp, rep))
            print(f"rep {rep + 1}: {reps[-1]}", flush=True)
    keys = list(reps[0])
    med = {k: median([r[k] for r in reps]) for k in keys}
    print(f"\n{machine()}\n")
    print("| UCX ucx_perftest | rc_v over rdmasim | ud_v over rdmasim | tcp over loopback |\n|---|---|---|---|")
    for test, size, kind in UCX_TESTS:
        unit = "us (median)" if kind == "lat" else "MB/s"
        print(f"| {test} {size} B, {unit} | {fmt(med[f'ucx rc_v {test}'])} | {fmt(med[f'ucx ud_v {test}'])} | "
              f"{fmt(med[f'ucx tcp {test}'])} |")
    print("\n| MPI ping-pong, 2 ranks | pml ucx, rc_v over rdmasim | pml ob1, btl tcp (loopback) |\n|---|---|---|")
    for what in ("4 B us", "1 MiB MB/s", "4 MiB MB/s"):
        print(f"| {what} | {fmt(med[f'mpi rdmasim {what}'])} | {fmt(med[f'mpi tcp {what}'])} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"reps": reps, "medians": med}, f, indent=1)
    return 0 if all(m is not None for m in med.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
