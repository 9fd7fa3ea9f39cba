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
that the requester retransmitted after sequence NAKs and that the
responder saw duplicates and out-of-sequence packets and sent NAKs.

First, one packet lost and nothing else (the README's "a lost packet draws a
sequence NAK and the sender resends from it"): the server's plan drops the
LOST_NTH-th SEND MIDDLE it receives (`drop:nth=N,filter=udp port 4791 and
udp[8] = 1`), both sides write `--tx-capture`. The server must send exactly
one NAK, a PSN sequence error (AETH syndrome 0x60) naming the lost packet's
PSN; the client must receive it, time out never, and its capture must go
back exactly once, to the lost PSN, resending as many packets as its
`retransmitted` counter says. Without the responder's sequence NAK this part
fails (the client recovers by a timeout instead).

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
import struct
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

# The single-loss part: 64 messages (about a third of three packets, so about
# 20 SEND MIDDLEs), the 5th SEND MIDDLE lost on its way into the server.
# A timer of 2^18 * 4.096 us = 1.07 s: no round trip, even on a host whose
# load average is 12 (a shared 2-core machine while four builds run), comes
# near it, so a timeout there means the NAK did not do its job.
LOSS_COUNT = 64
LOSS_NTH = 5
# The server posts 4 * depth receives before the client starts: with 4 * 16
# >= 64 it never needs to post another, so no RNR NAK (a server program the
# scheduler keeps from reposting in time, seen on a loaded host) can add NAKs
# or restarts. More in flight overflows the ptp socket's buffer instead.
LOSS_DEPTH = 16
assert 4 * LOSS_DEPTH >= LOSS_COUNT
LOSS_TIMEOUT_ATTR = 18
LOSS_PSN = 0xFFFF00  # the client's PSNs wrap in this part too
ROCE_PORT = 4791
SEND_MIDDLE, ACK = 0x01, 0x11
NAK_SEQ_SYNDROME = 0x60
PSN_MOD = 1 << 24


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


def roce_frames(path):
    """(opcode, psn, aeth syndrome or None) of every RoCE v2 frame of a pcap
    (classic pcap, Ethernet, untagged IPv4: what --tx-capture writes)."""
    with open(path, "rb") as f:
        data = f.read()
    magic = data[:4]
    endian = {b"\xd4\xc3\xb2\xa1": "<", b"\xa1\xb2\xc3\xd4": ">",
              b"\x4d\x3c\xb2\xa1": "<", b"\xa1\xb2\x3c\x4d": ">"}[magic]
    at, frames = 24, []
    while at + 16 <= len(data):
        caplen = struct.unpack(endian + "I", data[at + 8:at + 12])[0]
        wire = data[at + 16:at + 16 + caplen]
        at += 16 + caplen
        if len(wire) < 14 + 20 + 8 + 12 or wire[12:14] != b"\x08\x00" or wire[23] != 17:
            continue  # ARP, or not IPv4/UDP
        udp = 14 + (wire[14] & 0x0F) * 4
        if struct.unpack(">H", wire[udp + 2:udp + 4])[0] != ROCE_PORT:
            continue
        bth = udp + 8
        opcode = wire[bth]
        psn = int.from_bytes(wire[bth + 9:bth + 12], "big")
        syndrome = wire[bth + 12] if opcode == ACK else None
        frames.append((opcode, psn, syndrome))
    return frames


def psn_after(a, b):
    """a comes after b in PSN order (24-bit serial arithmetic)."""
    d = (a - b) % PSN_MOD
    return 0 < d < PSN_MOD // 2


def single_loss(args, tmp):
    """One SEND MIDDLE lost on the way into the server: a sequence NAK, a resend from its PSN,
    no timeout. Returns the failures."""
    url = f"ptp://{tmp}/loss-sock"
    port = str(free_port())
    common = ["--timeout", str(LOSS_TIMEOUT_ATTR), "--depth", str(LOSS_DEPTH), "--count", str(LOSS_COUNT),
              "--port", port]
    files = {side: (os.path.join(tmp, f"loss-{side}.json"), os.path.join(tmp, f"loss-{side}.pcap"))
             for side in ("server", "client")}

    def rdmasim(side, plan):
        stats, pcap = files[side]
        return ([args.rdmasim, "run", "--wire", url, "--stats", stats, "--tx-capture", pcap] +
                (["--faults", plan] if plan else []) + ["--"])

    plan = f"drop:nth={LOSS_NTH},filter=udp port {ROCE_PORT} and udp[8] = {SEND_MIDDLE}"
    print(f"single loss: the server's plan '{plan}'", flush=True)
    deadline = time.monotonic() + WALL_LIMIT_S
    server = Program("loss server", rdmasim("server", plan) + [args.rc_transfer] + common)
    client = None
    try:
        if not server.wait_for("ready: server listening", 30):
            server.finish(time.monotonic())
            return ["single loss: the server never listened"]
        client = Program("loss client", rdmasim("client", None) +
                         [args.rc_transfer, "127.0.0.1", "--psn", str(LOSS_PSN)] + common)
        statuses = {"client": client.finish(deadline), "server": server.finish(deadline)}
    finally:
        server.kill()
        if client:
            client.kill()
    failures = [f"single loss: {side} exited with {st}" for side, st in statuses.items() if st != 0]
    if failures:
        return failures

    def device(side):
        with open(files[side][0]) as f:
            return json.load(f)["devices"][0]

    srv, cli = device("server"), device("client")
    s, c = srv["port"]["roce"], cli["port"]["roce"]
    print(f"single loss: server faults {srv['faults']['drop']} drop, naks_sent {s['naks_sent']}, "
          f"rx sequence_error {s['rx']['sequence_error']}; client seq_naks_received "
          f"{c['seq_naks_received']} timeouts {c['timeouts']} retransmitted {c['retransmitted']}; "
          f"not sent on the wire: server {srv['send']['not_sent']} client {cli['send']['not_sent']}")

    def want(ok, what):
        if not ok:
            failures.append(f"single loss: {what}")

    # Nothing else lost: the plan's one drop, no frame the wire refused.
    want(srv["faults"]["drop"] == 1, f"the server's plan dropped {srv['faults']['drop']} frames, not 1")
    want(srv["send"]["not_sent"] == 0 and cli["send"]["not_sent"] == 0, "the wire refused frames")
    want(s["naks_sent"] == 1, f"the server sent {s['naks_sent']} NAKs, not 1")
    want(s["rx"]["sequence_error"] >= 1, "the server saw no out-of-sequence packet")
    want(c["seq_naks_received"] == 1, f"the client received {c['seq_naks_received']} sequence NAKs, not 1")
    want(c["timeouts"] == 0, f"{c['timeouts']} local ACK timeouts fired on the client")

    sent = [f for f in roce_frames(files["client"][1]) if f[0] != ACK]  # the requests
    middles = [i for i, (op, _, _) in enumerate(sent) if op == SEND_MIDDLE]
    if len(middles) < LOSS_NTH:
        failures.append(f"single loss: the client sent {len(middles)} SEND MIDDLEs, fewer than {LOSS_NTH}")
        return failures
    lost_at = middles[LOSS_NTH - 1]
    lost_psn = sent[lost_at][1]
    # A requester's PSNs are consecutive, except where go-back-N restarts from
    # an earlier one; a packet is resent when its PSN is not after the highest sent.
    restarts, resent, highest = [], 0, sent[0][1]
    for i in range(1, len(sent)):
        psn = sent[i][1]
        if psn != (sent[i - 1][1] + 1) % PSN_MOD:
            restarts.append((i, psn))
        if psn_after(psn, highest):
            highest = psn
        else:
            resent += 1
    print(f"single loss: lost PSN {lost_psn:#x} (client frame {lost_at}); restarts at "
          f"{[(i, hex(p)) for i, p in restarts]}; {resent} frames resent")
    want(len(restarts) == 1, f"{len(restarts)} go-back-N restarts in the client's capture, not 1")
    if restarts:
        i, psn = restarts[0]
        want(psn == lost_psn, f"the resend began at PSN {psn:#x}, not at the lost {lost_psn:#x}")
        want(i > lost_at, "the resend came before the loss")
        want(sent[i][0] == SEND_MIDDLE, f"the resent packet is opcode {sent[i][0]:#x}, not SEND MIDDLE")
    want(resent == c["retransmitted"], f"{resent} frames resent in the capture, the counter says "
                                        f"{c['retransmitted']}")
    # Every AETH that is not an ACK (syndrome 000xxxxx): RNR and other NAKs too.
    naks = [(psn, syn) for op, psn, syn in roce_frames(files["server"][1]) if op == ACK and syn >> 5 != 0]
    want(naks == [(lost_psn, NAK_SEQ_SYNDROME)],
         f"the server's NAKs (PSN, syndrome) are {[(hex(p), hex(y)) for p, y in naks]}, "
         f"not one sequence NAK for {lost_psn:#x}")
    if not failures:
        print(f"single loss: PASS: one sequence NAK for PSN {lost_psn:#x}, the resend from it "
              f"({resent} packets), no timeout", flush=True)
    return failures


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
        failures = single_loss(args, tmp)
        if failures:
            print("FAIL: " + "; ".join(failures))
            return 1
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
        if c["seq_naks_received"] == 0 or s["naks_sent"] == 0:
            failures.append("no sequence NAK sent by the server or received by the client")
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
