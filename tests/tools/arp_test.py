#!/usr/bin/python3
"""Port addresses seen from outside: ARP answered for the configured address,
and the GIDs that programs read (device/README.md, "Device and port";
datapath/README.md, "Neighbours").

usage: arp_test.py RDMASIM RAW_SEND

1. A capture of ARP requests (one for the port's address, one for another)
   replayed into `rdmasim run --pcap`: --tx-capture holds exactly one ARP
   reply, checked field by field with scapy; --stats and `rdmasim stats` count
   it, and the frames still reached the steering (steering_miss: no flow).
2. Two programs on a ptp:// wire: raw_send sends the request on a raw-packet
   QP from the second; the first program's port answers on the wire.
3. ibv_devinfo -v shows GID 0 (::ffff:a.b.c.d) and GID 1 (the IPv6 address),
   the MTU; without configuration two runs get different addresses, two
   --deterministic runs the same.
"""
import ipaddress
import json
import os
import re
import subprocess
import sys
import tempfile
import time

from scapy.all import ARP, Ether, rdpcap, wrpcap

rdmasim, raw_send = sys.argv[1], sys.argv[2]
TIMEOUT = 60
failures = []
checks = 0

OUR_MAC, OUR_IP = "02:00:00:00:00:01", "192.0.2.1"
PEER_MAC, PEER_IP = "02:00:00:00:00:02", "192.0.2.2"
ADDRESSED = ["--set", f"ip={OUR_IP}", "--set", f"mac={OUR_MAC}"]

# A verbs program that opens rdmasim0, prints its two GIDs, says "ready" and
# stays (the port answers ARP meanwhile), through pyverbs.
HOLDER = """
import sys, time
from pyverbs.device import Context
ctx = Context(name="rdmasim0")
for i in range(2):
    print(f"gid{i}", ctx.query_gid(1, i).gid, flush=True)
print("ready", flush=True)
time.sleep(float(sys.argv[1]))
"""


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")


def gid_address(pyverbs_gid):
    """pyverbs prints a GID as 8 groups of 4 hex digits."""
    return ipaddress.IPv6Address(int(pyverbs_gid.replace(":", ""), 16))


def request(target_ip):
    return Ether(src=PEER_MAC, dst="ff:ff:ff:ff:ff:ff") / ARP(
        op=1, hwsrc=PEER_MAC, psrc=PEER_IP, pdst=target_ip)


def check_reply(frames, what):
    arps = [f for f in frames if ARP in f]
    check(len(frames) == 1 and len(arps) == 1, f"{what}: one frame sent, an ARP reply ({len(frames)} frames)")
    if not arps:
        return
    f = arps[0]
    check(len(bytes(f)) == 60, f"{what}: padded to 60 bytes ({len(bytes(f))})")
    check(f[Ether].src == OUR_MAC and f[Ether].dst == PEER_MAC, f"{what}: Ethernet {f[Ether].src} -> {f[Ether].dst}")
    a = f[ARP]
    check(a.op == 2 and a.hwsrc == OUR_MAC and a.psrc == OUR_IP and a.hwdst == PEER_MAC and a.pdst == PEER_IP,
          f"{what}: ARP is-at fields: {a.summary()} {a.hwsrc} {a.psrc} -> {a.hwdst} {a.pdst}")


def run(args, **kw):
    p = subprocess.run([rdmasim, "run", *args], capture_output=True, text=True, timeout=TIMEOUT, **kw)
    print(f"$ rdmasim run {' '.join(args)}  (exit {p.returncode})\n{p.stdout}{p.stderr}")
    return p


def replay_into_run(tmp):
    pcap = os.path.join(tmp, "arp.pcap")
    wrpcap(pcap, [request(OUR_IP), request("192.0.2.77")])
    sent, stats = os.path.join(tmp, "sent.pcap"), os.path.join(tmp, "stats.json")
    p = run(["--pcap", pcap, "--tx-capture", sent, "--stats", stats, "--start", "now", *ADDRESSED,
             "--", "/usr/bin/python3", "-c", HOLDER, "1.5"])
    check(p.returncode == 0, "replay: the holder exits 0")
    gids = dict(re.findall(r"^(gid[01]) (\S+)$", p.stdout, re.M))
    check(gids.get("gid0") and gid_address(gids["gid0"]) == ipaddress.IPv6Address(f"::ffff:{OUR_IP}"),
          "replay: pyverbs reads GID 0 = ::ffff:192.0.2.1")
    check(gids.get("gid1") and gid_address(gids["gid1"]) == ipaddress.IPv6Address("fe80::ff:fe00:1"),
          "replay: pyverbs reads GID 1 = fe80::ff:fe00:1")
    check_reply(rdpcap(sent), "replay")
    with open(stats) as f:
        dev = json.load(f)["devices"][0]
    arp, port = dev["port"]["arp"], dev["port"]
    check(arp["arp_frames"] == 2 and arp["arp_requests_answered"] == 1 and arp["arp_requests_learned"] == 1,
          f"replay: arp counters {arp}")
    check(port["frames"] == 2 and port["drops"]["steering_miss"] == 2,
          "replay: both ARP frames offered to the steering (no flow: steering_miss)")
    check(dev["send"]["frames"] == 1, f"replay: one frame sent ({dev['send']})")
    check(dev["addresses"] == {"mac": OUR_MAC, "ipv4": OUR_IP, "ipv6": "fe80::ff:fe00:1", "mtu": 1024},
          f"replay: addresses {dev['addresses']}")
    text = subprocess.run([rdmasim, "stats", stats], capture_output=True, text=True, timeout=TIMEOUT).stdout
    print(text)
    check("arp_requests_answered 1" in text, "rdmasim stats shows arp_requests_answered 1")
    check(f"addresses: mac {OUR_MAC}, ipv4 {OUR_IP}" in text, "rdmasim stats shows the addresses")


def two_programs_on_a_wire(tmp):
    sock, sent, stats = os.path.join(tmp, "sock"), os.path.join(tmp, "a-sent.pcap"), os.path.join(tmp, "a.json")
    pcap = os.path.join(tmp, "request.pcap")
    # The request, then a gratuitous ARP from the peer's MAC claiming the
    # holder's own address: a conflict the holder counts and logs at exit.
    claim = Ether(src=PEER_MAC, dst="ff:ff:ff:ff:ff:ff") / ARP(op=1, hwsrc=PEER_MAC, psrc=OUR_IP, pdst=OUR_IP)
    wrpcap(pcap, [request(OUR_IP), claim])
    holder = subprocess.Popen([rdmasim, "run", "--wire", f"ptp://{sock}", "--tx-capture", sent, "--stats", stats,
                               "--start", "now", *ADDRESSED, "--", "/usr/bin/python3", "-c", HOLDER, "3"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line, deadline = "", time.monotonic() + TIMEOUT
        while not line.startswith("ready") and time.monotonic() < deadline:
            line = holder.stdout.readline()
            if not line:
                break
        check(line.startswith("ready"), "wire: the first program is up")
        p = run(["--wire", f"ptp://{sock}", "--set", f"ip={PEER_IP}", "--set", f"mac={PEER_MAC}",
                 "--", raw_send, "--pcap", pcap])
        check(p.returncode == 0, "wire: raw_send sent the request")
        out, err = holder.communicate(timeout=TIMEOUT)
        print(f"holder: exit {holder.returncode}\n{out}{err}")
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    check(holder.returncode == 0, "wire: the first program exits 0")
    check_reply(rdpcap(sent), "wire")
    with open(stats) as f:
        arp = json.load(f)["devices"][0]["port"]["arp"]
    check(arp["arp_requests_answered"] == 1, f"wire: the first port answered ({arp})")
    check(arp["arp_address_conflicts"] == 1, f"wire: the claim on its address counted ({arp})")
    check(f"claimed this port's address {OUR_IP}" in err, "wire: the conflict is logged at exit")


def devinfo():
    p = run([*ADDRESSED, "--set", "mtu=4096", "--", "ibv_devinfo", "-v"])
    check(p.returncode == 0, "ibv_devinfo exits 0")
    check(re.search(r"GID\[\s*0\]:\s+::ffff:192\.0\.2\.1", p.stdout), "ibv_devinfo shows GID 0 ::ffff:192.0.2.1")
    check(re.search(r"GID\[\s*1\]:\s+fe80::ff:fe00:1\b", p.stdout), "ibv_devinfo shows GID 1 fe80::ff:fe00:1")
    check(re.search(r"active_mtu:\s+4096", p.stdout), "ibv_devinfo shows active_mtu 4096")
    check(re.search(r"max_qp_rd_atom:\s+16", p.stdout), "ibv_devinfo shows max_qp_rd_atom 16")
    check(re.search(r"atomic_cap:\s+ATOMIC_HCA", p.stdout), "ibv_devinfo shows ATOMIC_HCA")

    def gid0(extra):
        out = run([*extra, "--", "ibv_devinfo", "-v"]).stdout
        m = re.search(r"GID\[\s*0\]:\s+(\S+?),?\s", out)
        return m.group(1) if m else None

    a, b = gid0([]), gid0([])
    check(a and b and a.startswith("::ffff:169.254.") and a != b,
          f"two default runs: different RFC 3927 addresses ({a}, {b})")
    c, d = gid0(["--deterministic"]), gid0(["--deterministic"])
    check(c == d == "::ffff:169.254.1.0", f"two --deterministic runs: the same stable address ({c}, {d})")


with tempfile.TemporaryDirectory(prefix="rdmasim-arp-") as tmp:
    os.chmod(tmp, 0o700)
    replay_into_run(tmp)
    two_programs_on_a_wire(tmp)
    devinfo()

print(f"{checks} checks, {len(failures)} failures")
sys.exit(1 if failures else 0)
