#!/usr/bin/python3
"""Issue 13, acceptance 4a: an RC transfer of 10,000 messages under a fault
plan that drops, duplicates and reorders frames, each message delivered
exactly once and in order.

Two `rdmasim run --wire ptp://DIR/sock` processes run rc_transfer (the
server receives and checks every message's immediate, length and bytes;
the client sends, its PSNs wrapping past 2^24 on the way). Each process has
the same plan with its own seed, every item `dir=both`: a frame is faulted
leaving one host and again entering the other, so each kind hits about 2%
of the frames on the wire, data and ACKs alike. Both programs must exit 0
and print their summary; --stats must show the faults fired on both hosts,
that the requester retransmitted (timeouts or sequence NAKs) and that the
responder saw duplicates and out-of-sequence packets.

usage: rc_faults_test.py RDMASIM RC_TRANSFER [--count N] [--depth N] [--timeout N]
                         [--plan PLAN] [--keep DIR]
"""
import argparse
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

# Each item fires on either side of a port (dir=both), so about twice its p
# on the wire. reorder holds a frame behind 1..3 later ones.
PLAN = "seed={seed}; drop:p=0.01,dir=both; duplicate:p=0.01,dir=both; reorder:p=0.01,window=4,dir=both"
# Local ACK timeout 2^14 * 4.096 us = 67 ms (ibv_rc_pingpong's): far above a
# round trip on a loaded 2-core host, so timeouts come only from what a
# sequence NAK cannot cover (a lost NAK, the last packets before a pause),
# 15-35 a run. 16 messages in flight (about 32 packets) keep each go-back-N
# resend short and far from filling a ptp socket (about 190 data frames): with 64
# in flight and 16.8 ms, both ends' sends end up waiting for room in each
# other's full queue (net/vde_wire.cpp holds a send up to 2 ms), each resend
# outlasts the timer, and most runs end in IBV_WC_RETRY_EXC_ERR (--depth 64
# --timeout 12 reproduces it). retry_cnt 7: eight timeouts in a row fail.
TIMEOUT_ATTR = 14
DEPTH = 16
WALL_LIMIT_S = 180


class Program:
    """A process whose stdout lines a thread collects, so the test can wait for one."""

    def __init__(self, name, cmd):
        self.name = name
        print("$ " + " ".join(cmd), flush=True)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        self.out = []
        self.err = []
        self.readers = [threading.Thread(target=self._read, args=(self.proc.stdout, self.out, self.lines), daemon=True),
                        threading.Thread(target=self._read, args=(self.proc.stderr, self.err, None), daemon=True)]
        for r in self.readers:
            r.start()

    @staticmethod
    def _read(stream, sink, lines):
        for line in stream:
            sink.append(line)
            if lines is not None:
                lines.put(line)
        if lines is not None:
            lines.put(None)

    def wait_for(self, prefix, timeout):
        end = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                return False
            if line is None:
                return False
            if line.startswith(prefix):
                return True

    def finish(self, deadline):
        """The exit status, or None when it ran past the deadline (then it is killed)."""
        try:
            status = self.proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGTERM)  # rdmasim forwards it to the program
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            status = None
        # The readers reach EOF once the process and its program are gone:
        # only then is the last line (the summary checked below) in self.out.
        for r in self.readers:
            r.join(timeout=30)
        sys.stdout.write(f"--- {self.name}: status {status}\n{''.join(self.out)}")
        if self.err:
            sys.stdout.write(f"--- {self.name} stderr:\n{''.join(self.err)}")
        return status

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_stats(name, path, failures):
    """The device's RoCE counters and faults from --stats, with the failures noted."""
    with open(path) as f:
        dev = json.load(f)["devices"][0]
    roce, faults = dev["port"]["roce"], dev["faults"]
    tx = dev.get("tx_faults", {})
    print(f"{name}: faults (both sides) drop {faults['drop']} duplicate {faults['duplicate']} "
          f"reorder {faults['reorder']}; tx_faults {tx}")
    print(f"{name}: roce tx_packets {roce['tx_packets']} retransmitted {roce['retransmitted']} "
          f"timeouts {roce['timeouts']} seq_naks_received {roce['seq_naks_received']} "
          f"rnr_naks_received {roce['rnr_naks_received']} acks_sent {roce['acks_sent']} "
          f"naks_sent {roce['naks_sent']} rx {roce['rx']}")
    for kind in ("drop", "duplicate", "reorder"):
        if faults[kind] == 0:
            failures.append(f"{name}: no '{kind}' fault injected")
    # `faults` counts both sides; tx_faults the transmit side alone.
    if tx.get("fault_drops", 0) == 0 or tx.get("duplicated", 0) == 0:
        failures.append(f"{name}: no drop or duplicate on transmit: {tx}")
    if faults["drop"] - tx.get("fault_drops", 0) == 0 or faults["duplicate"] - tx.get("duplicated", 0) == 0:
        failures.append(f"{name}: no drop or duplicate on receive")
    return roce


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rdmasim")
    ap.add_argument("rc_transfer")
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--keep", help="keep the stats files in this directory")
    ap.add_argument("--depth", type=int, default=DEPTH, help="rc_transfer's sends in flight")
    ap.add_argument("--timeout", type=int, default=TIMEOUT_ATTR, help="rc_transfer's --timeout")
    ap.add_argument("--plan", default=PLAN, help="the fault plan, with {seed}")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix=f"rc-faults-{os.getpid()}-")
    procs = []
    try:
        url = f"ptp://{tmp}/sock"
        port = str(free_port())
        common = ["--timeout", str(args.timeout), "--depth", str(args.depth), "--count", str(args.count),
                  "--port", port]

        def rdmasim(seed, stats):
            return [args.rdmasim, "run", "--wire", url, "--faults", args.plan.format(seed=seed),
                    "--stats", os.path.join(tmp, stats), "--"]

        start = time.monotonic()
        deadline = start + WALL_LIMIT_S
        # The server first: on ptp:// it creates the socket; it listens before the client connects.
        server = Program("server", rdmasim(1, "server.json") + [args.rc_transfer] + common)
        procs.append(server)
        if not server.wait_for("ready: server listening", 30):
            server.finish(time.monotonic())
            print("FAIL: the server never listened")
            return 1
        # The client's PSNs start 2^12 below 2^24: they wrap in the transfer.
        client = Program("client", rdmasim(2, "client.json") +
                         [args.rc_transfer, "127.0.0.1", "--psn", str(0xfff000)] + common)
        procs.append(client)
        client_status = client.finish(deadline)
        server_status = server.finish(deadline)
        elapsed = time.monotonic() - start

        failures = []
        for name, status, prog, summary in (("client", client_status, client, "sent "),
                                            ("server", server_status, server, "received ")):
            if status != 0:
                failures.append(f"{name} exited with {status}")
            elif not any(l.startswith(f"{summary}{args.count} messages") for l in prog.out):
                failures.append(f"{name}: no '{summary}{args.count} messages' line")
        if failures:
            print("FAIL: " + "; ".join(failures))
            return 1

        c = check_stats("client", os.path.join(tmp, "client.json"), failures)
        s = check_stats("server", os.path.join(tmp, "server.json"), failures)
        if c["retransmitted"] == 0:
            failures.append("client: nothing retransmitted")
        if c["timeouts"] + c["seq_naks_received"] == 0:
            failures.append("client: neither a timeout nor a sequence NAK")
        if s["rx"]["duplicate"] == 0 or s["rx"]["sequence_error"] == 0:
            failures.append("server: no duplicate or no out-of-sequence packet received")
        if args.keep:
            os.makedirs(args.keep, exist_ok=True)
            for f in ("client.json", "server.json"):
                shutil.copy(os.path.join(tmp, f), args.keep)
        if failures:
            print("FAIL: " + "; ".join(failures))
            return 1
        print(f"PASS: {args.count} messages, each once and in order, under "
              f"'{args.plan.format(seed='N')}' in {elapsed:.1f} s (load average {os.getloadavg()[0]:.2f})")
        return 0
    finally:
        for p in procs:
            p.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
