#!/usr/bin/python3
"""Issue 31, item 5: the same RDMA programs across machines. Two network
namespaces stand in for two hosts, joined by a veth pair; each side runs
perftest under its own `rdmasim run` in its namespace.

usage: netns_test.py RDMASIM [--measure]

Namespaces `rdmasim-<pid>a` / `rdmasim-<pid>b`, veth ends `rsn<pid>a` /
`rsn<pid>b`, kernel addresses 198.51.100.1 / .2 (the programs exchange QPNs
over TCP between them: the client gets the server's), IPv6 off (no stray
frames), a route for 224.0.0.0/4 on the veth (vxvde's IP_ADD_MEMBERSHIP and
its multicast sends find the interface by it). The emulated ports have
addresses of their own, 192.0.2.1 / .2 and 02:00:00:00:31:01 / :02: the
kernel drops RoCE frames for a MAC not its own (PACKET_OTHERHOST) before IP,
so it sends no ICMP port unreachable, and answers ARP only for its own
addresses, so rdmasim's ports answer theirs alone.

Two wires:
  vxvde   --wire vxvde://239.1.2.3/rcvbuf=4M: VDE's VXLAN over UDP
          multicast (then unicast, once each side learnt the other's MAC)
          between the kernel addresses; rcvbuf: the kernel drops what
          overflows a UDP socket's receive buffer (counted as RcvbufErrors
          in /proc/net/snmp, printed), and nothing tells a UD sender; the
          kernel caps it at net.core.rmem_max, which a namespace cannot set:
          the test raises it to 4 MiB while it runs when lower, then
          restores it;
  iface   --iface rsn<pid>X: RoCE v2 frames on the veth itself (AF_PACKET).
          A veth hands its peer every frame, whatever the destination MAC, so
          no --promisc is needed (a real NIC filters: --promisc there).
          tshark captures in each namespace on its veth end; what the other
          side's port sent must decode as InfiniBand BTH opcodes, together RDMA
          WRITE, READ (request and response), SEND, ACK and UD SEND; no ICMP.
          (rdmasim sends with PACKET_QDISC_BYPASS: a sniffer on the sending
          end does not see those frames, the peer end does.)
On each: ib_write_bw (64 B, 4 KiB, 64 KiB), ib_read_bw (4 KiB, 64 KiB),
ib_send_bw (1 KiB, 64 KiB), RC, and ib_send_bw -c UD (1 KiB), -n 200 each.
Both sides exit 0 and print the result line with 200 iterations, the
client a sane bandwidth (above 0); every UD datagram arrives; each side's
--stats shows RoCE frames received and consumed, no parse drop, none for an
unknown QP, every frame sent gone out. On the veth (iface), ARP replies for
the ports' addresses come from the ports alone.

--measure: ib_write_bw -s 65536 -n 2000 on each wire, figures printed only.

Exit 0 when all holds, 1 otherwise, 77 (skip) when not root or `ip netns`
cannot make and enter a namespace. The namespaces (and so the veth pair, and
whatever runs in them) go on every path: a failure, an exception, SIGTERM,
SIGINT, SIGHUP.
"""

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from two_hosts import GRACE, TCP_LISTEN, Checks, Program, roce_counters, roce_problems, summary  # noqa: E402
from perftest_test import result_line  # noqa: E402

PID = os.getpid()
SIDES = {  # side: (namespace, veth end, kernel IPv4, port IPv4, port MAC)
    "server": (f"rdmasim-{PID}a", f"rsn{PID}a", "198.51.100.1", "192.0.2.1", "02:00:00:00:31:01"),
    "client": (f"rdmasim-{PID}b", f"rsn{PID}b", "198.51.100.2", "192.0.2.2", "02:00:00:00:31:02"),
}
GROUP = "239.1.2.3/rcvbuf=4M"
TCP_PORT = 18515  # perftest's; each namespace has its own port space
ITERS = 200
TIMEOUT = 60  # seconds per program
CASES = [  # (program and options, sizes)
    (["ib_write_bw"], [64, 4096, 65536]),
    (["ib_read_bw"], [4096, 65536]),
    (["ib_send_bw"], [1024, 65536]),
    (["ib_send_bw", "-c", "UD"], [1024]),
]
# BTH opcodes (IBA table 38) tshark must see on the veth in the iface case.
replies_for_ports = []  # port addresses seen in ARP replies on the veth
OPCODES = {"RDMA WRITE": {0x06, 0x07, 0x08, 0x0A}, "RDMA READ request": {0x0C},
           "RDMA READ response": {0x0D, 0x0E, 0x0F, 0x10}, "RC SEND": {0x00, 0x01, 0x02, 0x04},
           "ACK": {0x11}, "UD SEND": {0x64}}

check = Checks()


def sh(*cmd, ns=None, check_rc=True):
    full = (["ip", "netns", "exec", ns] if ns else []) + list(cmd)
    p = subprocess.run(full, capture_output=True, text=True, timeout=TIMEOUT)
    if check_rc and p.returncode != 0:
        raise RuntimeError(f"{' '.join(full)}: status {p.returncode}: {p.stderr.strip()}")
    return p


RMEM_MAX = "/proc/sys/net/core/rmem_max"
RCVBUF = 4 << 20  # vxvde's rcvbuf=4M; the kernel caps SO_RCVBUF at rmem_max
rmem_max_before = None  # rmem_max as found, when this test raised it
work_dir = None  # the temporary directory, removed by cleanup() too


def raise_rmem_max():
    """rmem_max at least RCVBUF for the test's duration (a namespace cannot set its own)."""
    global rmem_max_before
    with open(RMEM_MAX) as f:
        value = int(f.read())
    if value < RCVBUF:
        with open(RMEM_MAX, "w") as f:
            f.write(str(RCVBUF))
        rmem_max_before = value
        print(f"note: net.core.rmem_max raised from {value} to {RCVBUF} for the test")


def cleanup():
    """Ends what still runs in the namespaces (our children), then removes them."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)  # a second signal must not cut the cleanup short
    for ns, *_ in SIDES.values():
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    if rmem_max_before is not None:
        with open(RMEM_MAX, "w") as f:
            f.write(str(rmem_max_before))
    if work_dir:
        shutil.rmtree(work_dir, ignore_errors=True)


def on_signal(sig, _frame):
    """Cleans up and exits at once: an exception raised here could be caught on its way out."""
    cleanup()
    os._exit(128 + sig)


def can_make_namespaces():
    """None when this process may create and enter a namespace, else why not."""
    if os.geteuid() != 0:
        return "not root"
    if shutil.which("ip") is None:
        return "no ip (iproute2)"
    ns = SIDES["server"][0]
    p = subprocess.run(["ip", "netns", "add", ns], capture_output=True, text=True)
    if p.returncode != 0:
        return f"ip netns add: {p.stderr.strip()}"
    p = subprocess.run(["ip", "netns", "exec", ns, "true"], capture_output=True, text=True)
    return None if p.returncode == 0 else f"ip netns exec: {p.stderr.strip()}"


def set_up():
    """Two namespaces joined by a veth pair, addressed, multicast routed, IPv6 off."""
    for ns, *_ in SIDES.values():
        if ns not in sh("ip", "netns", "list").stdout:
            sh("ip", "netns", "add", ns)
    (a_ns, a_if, *_), (b_ns, b_if, *_) = SIDES.values()
    sh("ip", "link", "add", a_if, "netns", a_ns, "type", "veth", "peer", "name", b_if, "netns", b_ns)
    for ns, veth, kernel_ip, _, _ in SIDES.values():
        for conf in ("all", "default", veth):
            sh("sysctl", "-qw", f"net.ipv6.conf.{conf}.disable_ipv6=1", ns=ns)
        sh("ip", "link", "set", "lo", "up", ns=ns)
        sh("ip", "addr", "add", f"{kernel_ip}/24", "dev", veth, ns=ns)
        sh("ip", "link", "set", veth, "up", "multicast", "on", ns=ns)
        sh("ip", "route", "add", "224.0.0.0/4", "dev", veth, ns=ns)
    deadline = time.monotonic() + 10  # the veth's carrier comes up asynchronously
    for ns, veth, *_ in SIDES.values():
        while sh("cat", f"/sys/class/net/{veth}/operstate", ns=ns).stdout.strip() != "up":
            if time.monotonic() > deadline:
                raise RuntimeError(f"{veth} in {ns} is not up after 10 s")
            time.sleep(0.05)


def listening(pid, port):
    """True when a socket in process `pid`'s namespace listens on TCP `port`."""
    try:
        with open(f"/proc/{pid}/net/tcp") as f:
            next(f)
            return any(c[3] == TCP_LISTEN and int(c[1].rsplit(":", 1)[1], 16) == port
                       for c in (line.split() for line in f))
    except (OSError, StopIteration):
        return False


def run_pair(rdmasim, tmp, wire, args, tag):
    """Server in namespace a, client in b; returns (server, client, stats by side)."""
    stats = {side: os.path.join(tmp, f"{tag}-{side}.json") for side in SIDES}

    def cmd(side):
        ns, veth, _, port_ip, port_mac = SIDES[side]
        link = ["--wire", f"vxvde://{GROUP}"] if wire == "vxvde" else ["--iface", veth]
        return ["ip", "netns", "exec", ns, rdmasim, "run", *link, "--set", f"ip={port_ip}",
                "--set", f"mac={port_mac}", "--stats", stats[side], "--", *args, "-d", "rdmasim0",
                "-x", "0", "-p", str(TCP_PORT)]

    server = Program("server", cmd("server"))
    end = time.monotonic() + TIMEOUT
    while not listening(server.proc.pid, TCP_PORT) and server.proc.poll() is None and time.monotonic() < end:
        time.sleep(0.02)
    client = Program("client", cmd("client") + [SIDES["server"][2]])
    client.finish(TIMEOUT)
    server.finish(GRACE)
    docs = {}
    for side, path in stats.items():
        try:
            with open(path) as f:
                docs[side] = json.load(f)
        except (OSError, ValueError):
            docs[side] = None
    return server, client, docs


def run_case(rdmasim, tmp, wire, program, size, iters=ITERS):
    """One server/client run, checked; the client's result line (columns, values) or None."""
    args = [*program, "-s", str(size), "-n", str(iters)]
    what = f"{wire}: {' '.join(args)}"
    failed_before = len(check.failures)
    t0 = time.monotonic()
    server, client, docs = run_pair(rdmasim, tmp, wire, args, f"{wire}-{'-'.join(args)}")
    seconds = time.monotonic() - t0
    show = "\n".join(p.show() for p in (server, client))
    exited = check(server.rc == 0 and client.rc == 0,
                   f"{what}: server and client exit 0 (got {server.rc}, {client.rc})", show)
    tables = {"server": result_line(server.stdout), "client": result_line(client.stdout)}
    for side, t in tables.items():
        check(t is not None and int(t[1][1]) == iters,
              f"{what}: the {side} prints its result line with {iters} iterations", show if exited else "")
    if tables["client"]:  # the sender's figure (a UD receiver's is perftest's own arithmetic)
        bw = dict(zip(*tables["client"])).get("BW average[MB/sec]", "0")
        check(0 < float(bw) < 100_000, f"{what}: the client's average bandwidth {bw} MB/s is sane")
    one_way = "UD" in program  # UD send_bw: the server only receives, the client only sends
    for side, doc in docs.items():
        for problem in roce_problems(side, doc, receives=not (one_way and side == "client"),
                                     sends=not (one_way and side == "server")):
            check(False, f"{what}: {problem}")
    if one_way and docs["server"]:
        got = roce_counters(docs["server"])["rx"]["consumed"]
        check(got == iters, f"{what}: the server received {got} of {iters} datagrams")
    ok = len(check.failures) == failed_before
    print(f"{'ok  ' if ok else 'FAIL'} {what}: {seconds:.2f} s", flush=True)
    if tables["client"]:
        print("  " + "  ".join(f"{c}={v}" for c, v in zip(*tables["client"])))
    for side, doc in docs.items():
        print(f"  {side}: {summary(doc)}", flush=True)
    return tables["client"]


def start_capture(tmp, side):
    """tshark on `side`'s veth end, in its namespace; returns (process, pcap) once it captures."""
    ns, veth, *_ = SIDES[side]
    pcap = os.path.join(tmp, f"{side}-veth.pcap")
    open(pcap, "wb").close()
    os.chmod(pcap, 0o666)  # tshark's dumpcap may write as another user
    proc = subprocess.Popen(["ip", "netns", "exec", ns, "tshark", "-i", veth, "-q", "-s", "128", "-w", pcap,
                             "-f", "udp port 4791 or arp or icmp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        if line.startswith("Capturing on"):
            return proc, pcap
    raise RuntimeError(f"tshark on {veth} did not start (exit {proc.wait()})")


def stop_capture(proc):
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def decode_capture(pcap):
    """(opcodes, source MACs of the RoCE frames, RoCE frames, ICMP frames) tshark reads in
    `pcap`; checks that every ARP reply for a port's address carries that port's MAC."""
    p = subprocess.run(["tshark", "-r", pcap, "-d", "udp.port==4791,infiniband", "-T", "fields",
                        "-E", "separator=/t", "-e", "frame.protocols", "-e", "eth.src",
                        "-e", "infiniband.bth.opcode", "-e", "arp.opcode", "-e", "arp.src.proto_ipv4",
                        "-e", "arp.src.hw_mac"], capture_output=True, text=True)
    check(p.returncode == 0, f"tshark -r {pcap}: exit {p.returncode}", p.stderr)
    seen, macs, icmp, frames = set(), set(), 0, 0
    port_mac = {s[3]: s[4] for s in SIDES.values()}
    for line in p.stdout.splitlines():
        protocols, src, opcode, arp_op, arp_ip, arp_mac = (line.split("\t") + [""] * 5)[:6]
        icmp += ":icmp" in protocols
        if arp_op == "2" and arp_ip in port_mac:
            replies_for_ports.append(arp_ip)
            check(arp_mac == port_mac[arp_ip], f"iface: the ARP reply for {arp_ip} gives {arp_mac}, "
                  f"the port's MAC {port_mac[arp_ip]} (the kernels must not answer for it)")
        if ":infiniband" in protocols and opcode:
            frames += 1
            seen.add(int(opcode, 0))
            macs.add(src)
    return seen, macs, frames, icmp


def check_captures(pcaps):
    """Each side's tshark decodes what the other side's port sent (rdmasim sends with
    PACKET_QDISC_BYPASS, which a sniffer on the sending end does not see); together
    every RoCE v2 opcode the programs use; no ICMP from either kernel."""
    opcodes = set()
    for side, pcap in pcaps.items():
        seen, macs, frames, icmp = decode_capture(pcap)
        opcodes |= seen
        other = next(s for s in SIDES if s != side)
        print(f"  tshark in the {side}'s namespace: {frames} RoCE v2 frames from {sorted(macs)}, "
              f"opcodes {sorted(hex(o) for o in seen)}")
        check(SIDES[other][4] in macs and macs <= {s[4] for s in SIDES.values()},
              f"iface: tshark in the {side}'s namespace sees RoCE frames from the {other}'s port "
              f"{SIDES[other][4]} (and no other MAC; got {sorted(macs)})")
        check(icmp == 0, f"iface: no ICMP on the {side}'s veth ({icmp} frames)")
    for name, codes in OPCODES.items():
        check(bool(opcodes & codes), f"iface: tshark decodes {name} ({sorted(hex(c) for c in codes)})")
    check(bool(replies_for_ports), "iface: the ports answered each other's ARP requests on the veth")


def udp_receive_buffer_errors():
    """Datagrams each namespace's kernel dropped for a full UDP receive buffer (vxvde's losses)."""
    out = {}
    for side, (ns, *_) in SIDES.items():
        lines = [l.split() for l in sh("cat", "/proc/net/snmp", ns=ns).stdout.splitlines() if l.startswith("Udp:")]
        out[side] = int(dict(zip(lines[0], lines[1]))["RcvbufErrors"])
    return out


def run_wire(rdmasim, tmp, wire):
    captures = {side: start_capture(tmp, side) for side in SIDES} if wire == "iface" else {}
    try:
        for program, sizes in CASES:
            for size in sizes:
                run_case(rdmasim, tmp, wire, program, size)
    finally:
        for proc, _ in captures.values():
            stop_capture(proc)
    if captures:
        check_captures({side: pcap for side, (_, pcap) in captures.items()})
    print(f"  {wire}: UDP datagrams the kernels dropped, receive buffer full: {udp_receive_buffer_errors()}")


def main():
    if len(sys.argv) not in (2, 3) or sys.argv[2:] not in ([], ["--measure"]):
        print(__doc__)
        return 2
    rdmasim, measure = sys.argv[1], sys.argv[2:] == ["--measure"]
    for tool in ("ib_write_bw", "tshark"):
        if shutil.which(tool) is None:
            print(f"FAIL: {tool} not installed (Debian perftest, tshark; tools/dev installs them)")
            return 1
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    atexit.register(cleanup)
    if os.geteuid() == 0:
        raise_rmem_max()
    why = can_make_namespaces()
    if why:
        print(f"SKIP: cannot make and enter a network namespace here ({why}); needs root")
        return 77
    t0 = time.monotonic()
    set_up()
    global work_dir
    with tempfile.TemporaryDirectory(prefix="netns-") as tmp:
        work_dir = tmp
        os.chmod(tmp, 0o755)
        for wire in ("vxvde", "iface"):
            if measure:
                run_case(rdmasim, tmp, wire, ["ib_write_bw"], 65536, iters=2000)
                print(f"  UDP receive buffer errors: {udp_receive_buffer_errors()}")
            else:
                run_wire(rdmasim, tmp, wire)
    return check.report(f" in {time.monotonic() - t0:.1f} s")


if __name__ == "__main__":
    sys.exit(main())
