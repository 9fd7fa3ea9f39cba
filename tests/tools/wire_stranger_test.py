#!/usr/bin/python3
"""A ptp:// end takes frames from its peer alone (net/README.md, "Virtual
wires"). The test plays the peer of a program under `rdmasim run --wire`
(rss_receive, one frame, then it exits) and sends it a zero-byte datagram;
then a third process, a stranger with a socket of its own in the same
directory, sends a frame to the program's socket; then the peer sends one.
The program must receive the peer's frame, never the stranger's, and its
--stats must count the empty datagram (`wire.rx_empty`) and every stranger's
datagram the kernel let through (`wire.rx_strangers`; once an end heard its
peer it is connected to it, and the kernel refuses others with EPERM). Both
ends are tried: the program as the end that connects to the socket, and as
the end that creates it; that one also gets a stranger's empty datagram and
frame before the peer speaks, which only the count may show. Also:
`rdmasim run` refuses a socket directory others can write or another user
owns, before the program starts.

usage: wire_stranger_test.py RDMASIM RSS_RECEIVE
"""
import json
import os
import queue
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

from scapy.all import IP, UDP, Ether

import checklist
from checklist import check

rdmasim, rss_receive = sys.argv[1:3]
TIMEOUT = 60
ENV = {k: v for k, v in os.environ.items() if not k.startswith("RDMASIM_")}

# The stranger: a separate process, its socket bound beside the wire's; it
# sends each datagram given (hex, "" for an empty one) and prints what happened.
STRANGER = r"""
import os, socket, sys

s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
for payload in sys.argv[3:]:
    try:
        s.sendto(bytes.fromhex(payload), sys.argv[2])
        print("sent")
    except OSError as e:
        print("refused", e.errno)
os.unlink(sys.argv[1])
"""


def stranger(tmp, to, *payloads):
    """Runs the stranger; the number of its datagrams the kernel let through."""
    p = subprocess.run(["/usr/bin/python3", "-c", STRANGER, os.path.join(tmp, "stranger"), to, *payloads],
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and len(p.stdout.split("\n")) > len(payloads), "the stranger ran", p.stderr)
    return p.stdout.count("sent")


def frame(marker):
    pkt = Ether(src="02:00:00:00:00:09", dst="02:00:00:00:00:0a") / IP(src="10.0.0.9", dst="10.0.0.10") / \
        UDP(sport=7000, dport=7001) / marker
    return bytes(pkt)


def peer_send(peer, data, to):
    try:
        peer.sendto(data, to)
    except OSError as e:  # the program is gone already: it took a stranger's frame
        print(f"note: the peer could not send: {e}")


def start_program(tmp, url, name):
    stats, dump = os.path.join(tmp, f"{name}.json"), os.path.join(tmp, f"{name}.dump")
    proc = subprocess.Popen([rdmasim, "run", "--wire", url, "--stats", stats, "--", rss_receive,
                             "--frames", "1", "--dump", dump, "--idle-ms", "5000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout] + [lines.put(None)],
                     daemon=True).start()
    while True:
        line = lines.get(timeout=TIMEOUT)
        if line is None or line.startswith("ready"):
            return proc, stats, dump, line is not None


def case(tmp, program_creates):
    name = "first" if program_creates else "second"
    sock = os.path.join(tmp, "sock")
    peer = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    if program_creates:
        proc, stats, dump, ready = start_program(tmp, f"ptp://{sock}", name)
        peer.bind(sock + "+")  # libvdeplug's second end
        program_sock = sock
    else:
        peer.bind(sock)  # libvdeplug's first end; the program connects to it
        proc, stats, dump, ready = start_program(tmp, f"ptp://{sock}", name)
        program_sock = sock + "+"
    check(ready, f"{name} end: the program is ready")
    let_through = 0
    if program_creates:  # before the peer spoke: an empty datagram and a frame
        let_through += stranger(tmp, program_sock, "", frame(b"STRANGER-EARLY").hex())
        time.sleep(0.5)
    peer_send(peer, b"", program_sock)
    time.sleep(0.5)  # the program's engine reads the empty datagram
    let_through += stranger(tmp, program_sock, frame(b"STRANGER-FRAME").hex())
    time.sleep(0.5)
    peer_send(peer, frame(b"PEER-FRAME"), program_sock)
    try:
        rc = proc.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = None
    err = proc.stderr.read()
    peer.close()
    dumped = open(dump).read() if os.path.exists(dump) else ""
    check(rc == 0, f"{name} end: the program exits 0", err)
    check(b"PEER-FRAME".hex() in dumped and b"STRANGER".hex() not in dumped,
          f"{name} end: it received the peer's frame, not a stranger's", dumped)
    doc = json.load(open(stats)) if os.path.exists(stats) else {}
    dev = (doc.get("devices") or [{}])[0]
    wire = dev.get("wire", {})
    check(wire.get("rx_empty") == 1, f"{name} end: the empty datagram is counted (wire.rx_empty)", wire)
    check(wire.get("rx_strangers") == let_through and (let_through == 2 or not program_creates),
          f"{name} end: the {let_through} datagrams of the stranger the kernel let through are counted "
          "(wire.rx_strangers)", wire)
    check(dev.get("source", {}).get("frames") == 1, f"{name} end: one frame reached the port", dev.get("source"))
    for n in os.listdir(tmp):
        os.remove(os.path.join(tmp, n))


def refused_directory(tmp, what, setup, words):
    d = os.path.join(tmp, what)
    os.mkdir(d, 0o700)
    setup(d)
    marker = os.path.join(tmp, "started")
    p = subprocess.run([rdmasim, "run", "--wire", f"ptp://{d}/sock", "--", "touch", marker],
                       capture_output=True, text=True, env=ENV, timeout=TIMEOUT)
    check(p.returncode == 1 and all(w in p.stderr for w in [d, *words]) and not os.path.exists(marker),
          f"a socket directory {what}: refused before the program starts, status 1, naming it and why",
          f"status {p.returncode}: {p.stderr.strip()}")
    os.rmdir(d)


tmp = tempfile.mkdtemp(prefix="rdmasim-stranger-")
case(tmp, program_creates=False)
case(tmp, program_creates=True)
refused_directory(tmp, "writable-by-all", lambda d: os.chmod(d, 0o777), ["writable by others", "0777"])
refused_directory(tmp, "group-writable", lambda d: os.chmod(d, 0o770), ["writable by its group"])
if os.geteuid() == 0:
    refused_directory(tmp, "owned-by-nobody", lambda d: os.chown(d, 65534, 65534), ["owned by uid 65534"])
else:
    print("note: not root, the other-owner case needs chown; it runs in CI (root)")
shutil.rmtree(tmp)
checklist.finish()
