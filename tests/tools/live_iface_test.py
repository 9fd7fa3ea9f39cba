#!/usr/bin/python3
"""Live interfaces end to end (issue 9, acceptance 1), inside a network
namespace this test creates: a veth pair, one end (HOST) in this namespace,
the other (PEER) in `rdmasim-<pid>`, IPv6 off on both so the kernel sends
nothing of its own.

usage: live_iface_test.py RDMASIM                      parts 1, 3, 4, 5 (suite net)
       live_iface_test.py RDMASIM --send RAW_SEND      parts 2, 3b, 4b (suite clients:
                                                       a program on the drop-in library)
RAW_SEND is tests/tools/raw_send.py.

1. --iface receive: frames sent out of HOST by this process (they must not
   come back in), then scapy frames (untagged, 802.1Q tagged, a priority tag,
   an 802.1ad outer tag) sent from PEER with scapy's sendp;
   `rdmasim replay --iface HOST --count N --json --capture OUT --flags
   cvlan,fcs --promisc` must deliver exactly the inbound frames, C-tag
   stripped and FCS (over the frame as sent) appended, byte for byte, and
   report N frames, no kernel drop, stopped by count; HOST is promiscuous
   only while the replay runs.
2. --iface send: raw_send.py under `rdmasim run --iface HOST` sends frames on
   a raw-packet QP; scapy's sniff on PEER must see each one byte for byte,
   except one above the MTU, which the kernel refuses: logged once.
3. --pcap-live with --filter 'ether src MAC': only that source's frames
   arrive (tagged ones with their tag put back by libpcap); (3b) and the
   libpcap sink sends like the AF_PACKET one.
4. Errors: an unknown interface, a bad filter (libpcap's text and the
   expression), and CAP_NET_RAW dropped (setpriv): one clear message each;
   (4b) the program under `rdmasim run` gets the same message.
5. Stops: SIGINT, SIGTERM and --duration end a live replay with its report
   (status 0); --count stops a capture file too.

Exit 0 when every check passes, 1 on a failure, 77 (skip) when a network
namespace cannot be made or entered (`ip netns exec`) here. Everything it
creates goes, on every path: a failure, an exception, SIGTERM, SIGINT,
SIGHUP (tools/live_iface_cleanup_test.py checks the first three).
"""
import atexit
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zlib

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1AD, Dot1Q, Ether
from scapy.utils import RawPcapReader, RawPcapWriter

RDMASIM = sys.argv[1]
RAW_SEND = sys.argv[3] if len(sys.argv) == 4 and sys.argv[2] == "--send" else None
PID = os.getpid()
NS = f"rdmasim-{PID}"
HOST, PEER = f"rsl{PID}h", f"rsl{PID}p"   # IFNAMSIZ: at most 15 characters
TIMEOUT = 60
SRC_A, SRC_B = "02:00:00:00:0a:01", "02:00:00:00:0b:01"

checks = failures = 0


def check(cond, what):
    global checks, failures
    checks += 1
    if not cond:
        failures += 1
        print(f"FAIL: {what}", flush=True)


def sh(*cmd, ns=False, check_rc=True, **kw):
    full = (["ip", "netns", "exec", NS] if ns else []) + list(cmd)
    p = subprocess.run(full, capture_output=True, text=True, timeout=TIMEOUT, **kw)
    if check_rc and p.returncode != 0:
        raise RuntimeError(f"{' '.join(full)}: status {p.returncode}: {p.stderr.strip()}")
    return p


# --------------------------------------------------------------------------
# Frames


def pad(frame, floor=64):
    return frame + bytes(max(0, floor - len(frame)))


def make_frames(src, n_base, dst="02:00:00:00:00:02"):
    """Known frames from `src`: untagged, tagged, priority-tagged, S-tagged."""
    eth = Ether(src=src, dst=dst)
    udp4 = IP(src="10.0.0.1", dst="10.0.0.2", id=n_base) / UDP(sport=4000 + n_base, dport=4791)
    tcp6 = IPv6(src="2001:db8::1", dst="2001:db8::2") / TCP(sport=5000 + n_base, dport=80)
    payload = bytes(range(n_base, n_base + 40))
    return [
        pad(bytes(eth / udp4 / payload)),
        pad(bytes(eth / Dot1Q(prio=5, id=1, vlan=100) / udp4 / payload)),
        pad(bytes(eth / Dot1Q(prio=3, vlan=0) / tcp6 / payload)),       # priority tag, VID 0
        pad(bytes(eth / Dot1Q(vlan=4094) / tcp6 / (payload * 30))),
        pad(bytes(eth / Dot1AD(vlan=7) / Dot1Q(vlan=8) / udp4 / payload)),  # QinQ, S-tag outer
    ]


def strip_cvlan(frame):
    """An 802.1Q tag (TPID 0x8100) right after the source MAC goes."""
    return frame[:12] + frame[16:] if frame[12:14] == b"\x81\x00" else frame


def fcs_of(frame):
    return struct.pack("<I", zlib.crc32(frame) & 0xFFFFFFFF)


def expected_delivery(frames):
    """What --flags cvlan,fcs delivers: tag stripped, FCS of the frame as sent."""
    return [strip_cvlan(f) + fcs_of(f) for f in frames]


def write_pcap(path, frames):
    w = RawPcapWriter(path, linktype=1, endianness="<", snaplen=65535)
    w.write_header(None)
    for f in frames:
        w.write_packet(f, sec=0, usec=0)
    w.close()


def read_pcap(path):
    reader = RawPcapReader(path)
    try:
        return [bytes(data) for data, _ in reader]
    finally:
        reader.close()


# --------------------------------------------------------------------------
# The namespace, the sockets


def ifindex(name, ns=False):
    return int(sh("cat", f"/sys/class/net/{name}/ifindex", ns=ns).stdout)


def wait_for_packet_socket(name, proc, ns=False, count=1):
    """Until `count` packet sockets are bound to interface `name` (/proc/net/packet)."""
    index = ifindex(name, ns)
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        lines = sh("cat", "/proc/net/packet", ns=ns).stdout.splitlines()[1:]
        if sum(1 for l in lines if int(l.split()[4]) == index) >= count:
            return True
        time.sleep(0.05)
    return False


def promiscuous(name):
    return int(open(f"/sys/class/net/{name}/flags").read(), 16) & 0x100 != 0


def send_from_peer(pcap):
    """scapy's sendp from inside the namespace, out of PEER."""
    sh("/usr/bin/python3", "-c",
       "import logging, sys\n"
       "logging.getLogger('scapy').setLevel(logging.ERROR)\n"
       "from scapy.sendrecv import sendp\n"
       "from scapy.utils import rdpcap\n"
       f"sendp(rdpcap(sys.argv[1]), iface={PEER!r}, verbose=False)\n",
       pcap, ns=True)


def send_from_host(frames):
    """Frames out of HOST from this process: outgoing on HOST, never inbound."""
    import socket
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((HOST, 0))
    for f in frames:
        s.send(f)
    s.close()


SNIFFER = """
import logging, sys
logging.getLogger("scapy").setLevel(logging.ERROR)
from scapy.sendrecv import sniff
got = sniff(iface=sys.argv[1], count=int(sys.argv[2]), timeout=int(sys.argv[3]),
            started_callback=lambda: print("ready", flush=True))
for p in got:
    print(bytes(p).hex())
"""


def sniff_peer(count):
    """A scapy sniffer on PEER (it puts stripped VLAN tags back); returns once ready."""
    p = subprocess.Popen(["ip", "netns", "exec", NS, "/usr/bin/python3", "-c", SNIFFER, PEER,
                          str(count), str(TIMEOUT)], stdout=subprocess.PIPE, text=True)
    check(p.stdout.readline().strip() == "ready", "the sniffer on the peer started")
    return p


def sniffed(p):
    out, _ = p.communicate(timeout=TIMEOUT + 10)
    return [bytes.fromhex(line) for line in out.split()]


# --------------------------------------------------------------------------
# The parts


def replay_live(tmp, source_args, inbound, count, outbound_first=()):
    """Runs a live replay until `count` frames, sending `inbound` from PEER
    once rdmasim's socket is bound; returns (status, report, delivered,
    stderr, whether HOST was promiscuous meanwhile)."""
    cap_in, cap_out = os.path.join(tmp, "in.pcap"), os.path.join(tmp, "out.pcap")
    write_pcap(cap_in, inbound)
    cmd = [RDMASIM, "replay", *source_args, "--count", str(count), "--json",
           "--capture", cap_out, "--flags", "cvlan,fcs"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        check(wait_for_packet_socket(HOST, proc), f"{' '.join(cmd)}: socket bound to {HOST}")
        during = promiscuous(HOST)
        if outbound_first:
            send_from_host(outbound_first)
        send_from_peer(cap_in)
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    report = json.loads(out) if proc.returncode == 0 else {}
    delivered = read_pcap(cap_out) if proc.returncode == 0 else []
    return proc.returncode, report, delivered, err, during


def check_delivery(what, status, report, delivered, err, inbound):
    check(status == 0, f"{what}: status 0 (got {status}: {err.strip()})")
    if status != 0:
        return
    n = len(inbound)
    check(report.get("frames_offered") == n, f"{what}: {n} frames offered (got {report.get('frames_offered')})")
    check(report.get("delivered") == n, f"{what}: {n} delivered (got {report.get('delivered')})")
    check(report.get("stopped_by") == "count", f"{what}: stopped by count ({report.get('stopped_by')})")
    src = report.get("source", {})
    check(src.get("frames") == n, f"{what}: the source handed over {n} frames ({src})")
    check(src.get("kernel_drops") == 0, f"{what}: no kernel drop ({src})")
    want = expected_delivery(inbound)
    check(len(delivered) == len(want), f"{what}: {len(want)} frames captured (got {len(delivered)})")
    for i, (got, exp) in enumerate(zip(delivered, want)):
        check(got == exp, f"{what}: frame {i} byte for byte:\n  got {got.hex()}\n  exp {exp.hex()}")


def part_iface_receive(tmp):
    inbound = make_frames(SRC_A, 1) + make_frames(SRC_B, 2)
    outbound = make_frames("02:00:00:00:0c:01", 3)  # sent out of HOST first: must not come in
    status, report, delivered, err, during = replay_live(
        tmp, ["--iface", HOST, "--promisc"], inbound, len(inbound), outbound)
    check_delivery("--iface", status, report, delivered, err, inbound)
    check("AF_PACKET, TPACKET_V3" in report.get("source", {}).get("description", ""),
          f"--iface: the report names the ring ({report.get('source')})")
    check(during, "--promisc: the interface is promiscuous while the replay runs")
    check(not promiscuous(HOST), "--promisc: and no longer once it ended")


def part_send(tmp, source_args, what):
    frames = make_frames(SRC_A, 7, dst="02:00:00:00:0d:02")
    # Above the veth's 1500-byte MTU: the kernel refuses it, the send completes
    # all the same (as on a NIC), and the first refusal is logged.
    oversize = pad(frames[0][:14], 3000)
    hexfile = os.path.join(tmp, "send.hex")
    with open(hexfile, "w") as f:
        f.write("\n".join(fr.hex() for fr in frames[:2] + [oversize] + frames[2:]) + "\n")
    sniffer = sniff_peer(len(frames))
    p = subprocess.run([RDMASIM, "run", *source_args, "--", "/usr/bin/python3", RAW_SEND, hexfile],
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0, f"{what}: raw_send.py status 0 (got {p.returncode}: {p.stdout}{p.stderr})")
    check("the kernel refused a frame" in p.stderr and "EMSGSIZE 1" in p.stderr
          and p.stderr.count("refused") == 1,
          f"{what}: the oversize frame's refusal logged once ({p.stderr.strip()})")
    got = sniffed(sniffer)
    check(len(got) == len(frames), f"{what}: {len(frames)} frames at the peer (got {len(got)})")
    for i, (g, f) in enumerate(zip(got, frames)):
        check(g == f, f"{what}: sent frame {i} byte for byte:\n  got {g.hex()}\n  exp {f.hex()}")


def part_pcap_live_receive(tmp):
    allowed = make_frames(SRC_A, 4)
    others = make_frames(SRC_B, 5)
    inbound = [f for pair in zip(others, allowed) for f in pair]  # interleaved
    status, report, delivered, err, during = replay_live(
        tmp, ["--pcap-live", HOST, "--filter", f"ether src {SRC_A}"], inbound, len(allowed))
    # Only the allowed frames pass the filter: the replay stops after them.
    check_delivery("--pcap-live", status, report, delivered, err, allowed)
    check("filter 'ether src" in report.get("source", {}).get("description", ""),
          f"--pcap-live: the report names the filter ({report.get('source')})")
    check(not during, "--pcap-live without --promisc: not promiscuous")


def part_stops():
    """A source that never ends stops at SIGINT, SIGTERM or --duration, with its report."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        proc = subprocess.Popen([RDMASIM, "replay", "--iface", HOST, "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            check(wait_for_packet_socket(HOST, proc), f"{sig.name}: socket bound")
            proc.send_signal(sig)
            out, err = proc.communicate(timeout=TIMEOUT)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        report = json.loads(out) if proc.returncode == 0 and out else {}
        check(proc.returncode == 0 and report.get("stopped_by") == "signal",
              f"{sig.name}: status 0 and a report stopped by signal (got {proc.returncode}, "
              f"{report.get('stopped_by')}: {err.strip()})")
    t0 = time.monotonic()
    p = subprocess.run([RDMASIM, "replay", "--pcap-live", HOST, "--duration", "0.5", "--json"],
                       capture_output=True, text=True, timeout=TIMEOUT)
    took = time.monotonic() - t0
    report = json.loads(p.stdout) if p.returncode == 0 else {}
    check(report.get("stopped_by") == "duration" and 0.5 <= took < 10,
          f"--duration 0.5: stopped by duration after {took:.2f} s ({p.returncode}: {p.stderr.strip()})")
    # A capture file stops at --count too.
    p = subprocess.run([RDMASIM, "replay", "--count", "10", "--json"],
                       capture_output=True, text=True, timeout=TIMEOUT)
    report = json.loads(p.stdout) if p.returncode == 0 else {}
    check(report.get("frames_offered") == 10 and report.get("stopped_by") == "count",
          f"sample capture --count 10: 10 frames, stopped by count ({p.returncode}: {p.stderr.strip()})")


def setpriv_works(setpriv):
    if subprocess.run(setpriv + ["true"], capture_output=True).returncode == 0:
        return True
    print("note: setpriv cannot drop CAP_NET_RAW here: privilege messages not checked")
    return False


def part_errors():
    missing = f"rsnone{PID % 1000000}"
    for opt in ("--iface", "--pcap-live"):
        p = subprocess.run([RDMASIM, "replay", opt, missing, "--count", "1"],
                           capture_output=True, text=True, timeout=TIMEOUT)
        check(p.returncode == 1 and missing in p.stderr and "no such network interface" in p.stderr,
              f"{opt} {missing}: one clear error (got {p.returncode}: {p.stderr.strip()})")
    bad = "udp and and"
    p = subprocess.run([RDMASIM, "replay", "--pcap-live", HOST, "--filter", bad, "--count", "1"],
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 2 and f"filter = '{bad}'" in p.stderr and "syntax error" in p.stderr,
          f"bad filter: libpcap's text and the expression (got {p.returncode}: {p.stderr.strip()})")
    setpriv = ["setpriv", "--inh-caps=-all", "--bounding-set=-net_raw"]
    if not setpriv_works(setpriv):
        return
    for opt, prefix in (("--iface", "iface"), ("--pcap-live", "pcap_live")):
        p = subprocess.run(setpriv + [RDMASIM, "replay", opt, HOST, "--count", "1"],
                           capture_output=True, text=True, timeout=TIMEOUT)
        check(p.returncode == 1 and "CAP_NET_RAW" in p.stderr and f"{prefix} {HOST}" in p.stderr
              and p.stderr.count("\n") == 1,
              f"{opt} without CAP_NET_RAW: one line naming it and the interface "
              f"(got {p.returncode}: {p.stderr.strip()})")


def part_run_errors():
    """The drop-in library says the same to a program under `rdmasim run`."""
    setpriv = ["setpriv", "--inh-caps=-all", "--bounding-set=-net_raw"]
    if not setpriv_works(setpriv):
        return
    p = subprocess.run(setpriv + [RDMASIM, "run", "--iface", HOST, "--", "ibv_devices"],
                       capture_output=True, text=True, timeout=TIMEOUT)
    check("CAP_NET_RAW" in p.stderr and f"iface {HOST}" in p.stderr,
          f"run --iface without CAP_NET_RAW: the program's stderr names it ({p.stderr.strip()})")


# --------------------------------------------------------------------------


def setup():
    """The namespace and the veth pair; exit 77 (skip) when a namespace cannot
    be made or entered here. Call it inside the try whose finally tears down:
    whatever it made before a failure goes too."""
    try:
        sh("ip", "netns", "add", NS)
    except (RuntimeError, FileNotFoundError, subprocess.TimeoutExpired) as e:
        print(f"SKIP: cannot create a network namespace here (needs root / CAP_SYS_ADMIN): {e}", flush=True)
        sys.exit(77)
    # Every part runs programs inside it: a namespace that cannot be entered
    # (a container without the mount privileges `ip netns exec` needs) is a skip.
    entered = sh("true", ns=True, check_rc=False)
    if entered.returncode != 0:
        print(f"SKIP: cannot enter the network namespace {NS} (ip netns exec: status "
              f"{entered.returncode}: {entered.stderr.strip()})", flush=True)
        sys.exit(77)
    sh("ip", "link", "add", HOST, "type", "veth", "peer", "name", PEER)
    sh("ip", "link", "set", PEER, "netns", NS)
    # No router solicitations, MLD or DAD: the only frames are the test's.
    sh("sysctl", "-qw", f"net.ipv6.conf.{HOST}.disable_ipv6=1")
    sh("sysctl", "-qw", f"net.ipv6.conf.{PEER}.disable_ipv6=1", ns=True)
    sh("ip", "link", "set", HOST, "up")
    sh("ip", "link", "set", PEER, "up", ns=True)
    deadline = time.monotonic() + TIMEOUT  # veth carrier comes up with both ends
    while open(f"/sys/class/net/{HOST}/operstate").read().strip() != "up":
        if time.monotonic() > deadline:
            raise RuntimeError(f"{HOST} never came up")
        time.sleep(0.05)


torn_down = False


def teardown():
    """Removes the veth pair and the namespace (its /run/netns mount point
    too); idempotent, never raises: it runs from finally and from atexit."""
    global torn_down
    if torn_down:
        return
    torn_down = True
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # no second stop half-way
        signal.signal(sig, signal.SIG_IGN)
    for cmd in (["ip", "link", "del", HOST], ["ip", "netns", "del", NS]):
        try:
            sh(*cmd, check_rc=False)
        except (OSError, subprocess.SubprocessError) as e:
            print(f"teardown: {' '.join(cmd)}: {e}", flush=True)
    mount_point = f"/run/netns/{NS}"
    if os.path.exists(mount_point):  # an add that failed half-way
        subprocess.run(["umount", mount_point], capture_output=True)
        try:
            os.unlink(mount_point)
        except OSError as e:
            print(f"teardown: {mount_point} left behind: {e}", flush=True)


def main():
    # meson's timeout sends SIGTERM, a terminal SIGINT or SIGHUP: each
    # unwinds through the finally below; atexit covers the rest.
    def stop(sig, _frame):
        raise SystemExit(128 + sig)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)
    atexit.register(teardown)
    try:
        setup()
        with tempfile.TemporaryDirectory(prefix="rdmasim-live-") as tmp:
            if RAW_SEND:
                part_send(tmp, ["--iface", HOST], "--iface send")
                part_send(tmp, ["--pcap-live", HOST], "--pcap-live send")
                part_run_errors()
            else:
                part_iface_receive(tmp)
                part_pcap_live_receive(tmp)
                part_stops()
                part_errors()
    finally:
        teardown()
    print(f"{checks - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
