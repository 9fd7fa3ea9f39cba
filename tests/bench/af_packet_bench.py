#!/usr/bin/python3
"""Live-interface receive benchmark (issue 9, acceptance 4; issue 11, target
4): rdmasim's AF_PACKET TPACKET_V3 ring source against a bare TPACKET_V3
ring loop and a plain recvfrom(2) loop, on the same veth, inside a network
namespace of its own.

The sender (packet_blast, sendmmsg on an AF_PACKET socket, in the namespace)
sends FRAMES frames of SIZE bytes out of the peer end as fast as it can; the
receiver (live_rx ring | tpacket | recvfrom) takes them on this end and
copies each once. Per run and receiver: frames received, frames/s (first to
last frame), receiver CPU (user + system) per frame, frames lost (kernel
drops). The receivers take turns (the order rotates each run), RUNS times
each; medians are printed, and with --json written to FILE as
{receiver: {"received", "frames_per_s", "cpu_ns_per_frame", "lost", and
the per-run "frames_per_s_runs", "cpu_ns_per_frame_runs"}}.

usage: af_packet_bench.py LIVE_RX PACKET_BLAST [--frames N] [--runs R] [--size B] [--json FILE]
Needs root (network namespaces, packet sockets): exit 77 otherwise.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

PID = os.getpid()
NS = f"rdmasim-bench-{PID}"
HOST, PEER = f"rsb{PID}h", f"rsb{PID}p"


def sh(*cmd, ns=False):
    full = (["ip", "netns", "exec", NS] if ns else []) + list(cmd)
    p = subprocess.run(full, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(full)}: {p.stderr.strip()}")
    return p.stdout


def setup():
    try:
        sh("ip", "netns", "add", NS)
    except (RuntimeError, FileNotFoundError) as e:
        print(f"SKIP: cannot create a network namespace (needs root): {e}")
        sys.exit(77)
    sh("ip", "link", "add", HOST, "type", "veth", "peer", "name", PEER)
    sh("ip", "link", "set", PEER, "netns", NS)
    sh("sysctl", "-qw", f"net.ipv6.conf.{HOST}.disable_ipv6=1")
    sh("sysctl", "-qw", f"net.ipv6.conf.{PEER}.disable_ipv6=1", ns=True)
    sh("ip", "link", "set", HOST, "up")
    sh("ip", "link", "set", PEER, "up", ns=True)
    while open(f"/sys/class/net/{HOST}/operstate").read().strip() != "up":
        time.sleep(0.05)


def teardown():
    subprocess.run(["ip", "link", "del", HOST], capture_output=True)
    subprocess.run(["ip", "netns", "del", NS], capture_output=True)


def one_run(live_rx, blast, mode, frames, size):
    rx = subprocess.Popen([live_rx, mode, HOST, str(frames)], stdout=subprocess.PIPE, text=True)
    try:
        if rx.stdout.readline().strip() != "ready":
            raise RuntimeError(f"live_rx {mode} did not start")
        sent = sh(blast, PEER, str(frames), str(size), ns=True).strip()
        out, _ = rx.communicate(timeout=600)
    finally:
        if rx.poll() is None:
            rx.kill()
            rx.wait()
    r = json.loads(out)
    r["sent"] = sent
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("live_rx")
    ap.add_argument("blast")
    ap.add_argument("--frames", type=int, default=2_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--json", help="write the medians to this file")
    a = ap.parse_args()
    setup()
    modes = ["ring", "tpacket", "recvfrom"]
    results = {m: [] for m in modes}
    try:
        for run in range(a.runs):
            order = modes[run % len(modes):] + modes[:run % len(modes)]
            for mode in order:
                r = one_run(a.live_rx, a.blast, mode, a.frames, a.size)
                results[mode].append(r)
                print(f"run {run + 1} {mode:8}: {r['frames']} frames in {r['seconds']:.3f} s, "
                      f"cpu {r['cpu_s']:.3f} s, kernel drops {r['kernel_drops']} ({r['sent']})",
                      flush=True)
    finally:
        teardown()
    print(f"\n{a.frames} frames of {a.size} bytes per run, {a.runs} runs each, medians:")
    print(f"  {'receiver':10} {'received':>10} {'frames/s':>12} {'cpu ns/frame':>13} {'lost':>9}")
    med = {}
    for mode, rs in results.items():
        fps = statistics.median(r["frames"] / r["seconds"] for r in rs if r["seconds"] > 0)
        cpu = statistics.median(r["cpu_s"] * 1e9 / r["frames"] for r in rs if r["frames"])
        got = statistics.median(r["frames"] for r in rs)
        lost = statistics.median(a.frames - r["frames"] for r in rs)
        med[mode] = {"received": got, "frames_per_s": fps, "cpu_ns_per_frame": cpu, "lost": lost,
                     "cpu_ns_per_frame_runs": [r["cpu_s"] * 1e9 / r["frames"] for r in rs if r["frames"]],
                     "frames_per_s_runs": [r["frames"] / r["seconds"] for r in rs if r["seconds"] > 0]}
        print(f"  {mode:10} {got:>10.0f} {fps:>12.0f} {cpu:>13.1f} {lost:>9.0f}")
    print(f"  ring / recvfrom frames/s: {med['ring']['frames_per_s'] / med['recvfrom']['frames_per_s']:.2f}")
    print(f"  ring / tpacket CPU per frame: "
          f"{med['ring']['cpu_ns_per_frame'] / med['tpacket']['cpu_ns_per_frame']:.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(med, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
