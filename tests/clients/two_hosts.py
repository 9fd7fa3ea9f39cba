"""Two emulated hosts: an RDMA program's server and client, each under its own
`rdmasim run --wire ptp://DIR/sock` (or shm://DIR/sock), as issue 13's acceptance runs them.

The programs (rdma-core's pingpongs, perftest) exchange their QP numbers,
PSNs and GIDs over TCP on 127.0.0.1, then talk RoCE v2 over the wire. The
server starts first and creates the socket; the client starts once the
server listens on its TCP port (read from /proc/net/tcp{,6}, so nothing is
guessed from a sleep), and connects to the socket the server created.

Used by roce_programs_test.py, perftest_test.py and roce_capture_test.py.
"""

import json
import os
import re
import socket
import subprocess
import threading
import time

class Checks:
    """A tally of named checks; each failure is printed when it happens."""

    def __init__(self):
        self.failures = []
        self.count = 0

    def __call__(self, ok, what, detail=""):
        self.count += 1
        if not ok:
            self.failures.append(what)
            print(f"FAIL: {what}" + (f"\n{detail}" if detail else ""))
        return ok

    def report(self, suffix=""):
        """Prints the tally; the exit status: 1 when a check failed."""
        print(f"{self.count - len(self.failures)} of {self.count} checks passed{suffix}")
        return 1 if self.failures else 0


TIMEOUT = 120  # seconds, per program
GRACE = 20  # seconds the server has to finish once the client has exited
TCP_LISTEN = "0A"  # st column of /proc/net/tcp


def free_tcp_port():
    """A TCP port nothing listens on now (the kernel's pick for a bound socket)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("0.0.0.0", 0))
        return s.getsockname()[1]


def listening(port):
    """True when some socket listens on TCP `port` (IPv4 or IPv6, any address)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    cols = line.split()
                    if cols[3] == TCP_LISTEN and int(cols[1].rsplit(":", 1)[1], 16) == port:
                        return True
        except FileNotFoundError:
            continue
    return False


class Program:
    """A process whose stdout and stderr are collected by threads."""

    def __init__(self, name, cmd):
        self.name, self.cmd = name, cmd
        self.started = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.out, self.err = [], []
        self.readers = [threading.Thread(target=self._read, args=(s, acc), daemon=True)
                        for s, acc in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))]
        for r in self.readers:
            r.start()
        self.rc = None
        self.seconds = None

    @staticmethod
    def _read(stream, acc):
        for line in stream:
            acc.append(line)

    def finish(self, timeout=TIMEOUT):
        """Waits for the exit (kills the process after `timeout` s: rc None)."""
        try:
            self.rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            self.rc = None
        self.seconds = time.monotonic() - self.started
        for r in self.readers:
            r.join(timeout=10)
        return self.rc

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    @property
    def stdout(self):
        return "".join(self.out)

    @property
    def stderr(self):
        return "".join(self.err)

    def show(self):
        """What a failing check prints: the command, the status and both streams."""
        status = "killed after the timeout" if self.rc is None else f"exit {self.rc}"
        return (f"--- {self.name}: {' '.join(self.cmd)}: {status}\n"
                f"{self.stdout}{self.stderr}--- end of {self.name}")


def user_option(args):
    """`--user UID:GID` at the end of `args`: ((uid, gid), args without it), else (None, args).
    SystemExit 77 (skip) when it is given but this process cannot switch users."""
    if len(args) >= 2 and args[-2] == "--user":
        if os.geteuid() != 0:
            print("SKIP: --user needs root to switch to that user")
            raise SystemExit(77)
        return tuple(int(x) for x in args[-1].split(":")), args[:-2]
    return None, args


def as_user(user):
    """The command prefix that runs a program as `user` (uid, gid), none for None."""
    if user is None:
        return []
    return ["setpriv", f"--reuid={user[0]}", f"--regid={user[1]}", "--clear-groups"]


class Pair:
    """One server/client run; `server`, `client` (Programs) and their --stats documents."""

    def __init__(self, rdmasim, tmp, tag, args, port_flag="-p", server_opts=(), client_opts=(),
                 rdmasim_opts=(), client_extra=("127.0.0.1",), scheme="ptp", user=None):
        """`scheme`: the wire, ptp (a socket pair) or shm (a shared-memory segment), at DIR/sock.
        `user`: (uid, gid) both sides run as (setpriv), owning DIR; None: as the test."""
        self.dir = os.path.join(tmp, tag)
        os.makedirs(self.dir, mode=0o700)
        wrapper = as_user(user)
        if user is not None:
            os.chown(self.dir, *user)
        self.port = free_tcp_port()
        url = f"{scheme}://{self.dir}/sock"
        self.stats_path = {side: os.path.join(self.dir, f"{side}.json") for side in ("server", "client")}

        def cmd(side, opts):
            return [*wrapper, rdmasim, "run", "--wire", url, "--stats", self.stats_path[side], *rdmasim_opts, *opts,
                    "--", *args, port_flag, str(self.port)]

        self.command = {"server": cmd("server", server_opts),
                        "client": cmd("client", client_opts) + list(client_extra)}
        self.server = self.client = None

    def run(self, timeout=TIMEOUT):
        """Starts the server, the client once the server listens, waits for both.

        Returns the wall time from the client's start to the last exit."""
        self.server = Program("server", self.command["server"])
        end = time.monotonic() + timeout
        while not listening(self.port):
            if self.server.proc.poll() is not None or time.monotonic() > end:
                break  # the client starts anyway and fails to connect: both are reported
            time.sleep(0.02)
        t0 = time.monotonic()
        try:
            self.client = Program("client", self.command["client"])
            self.client.finish(timeout)
        finally:
            if self.client is None:
                self.server.kill()
            self.server.finish(GRACE)
        return time.monotonic() - t0

    def stats(self, side):
        """The --stats document `side` wrote, or None."""
        try:
            with open(self.stats_path[side]) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def show(self):
        return "\n".join(p.show() for p in (self.server, self.client) if p is not None)


def roce_counters(doc):
    """devices[0].port.roce of a --stats document."""
    return doc["devices"][0]["port"]["roce"]


def roce_problems(side, doc, receives=True, sends=True, unknown_qp_allowed=0):
    """What is wrong in one side's RoCE counters after a clean run (empty: nothing).

    `receives` / `sends`: the side must have received / sent RoCE frames (a
    UD receiver sends nothing, its sender receives nothing).
    `unknown_qp_allowed`: frames that may arrive for a QP the peer has
    already destroyed (a program that exits with messages in flight).

    Frames arrived and reached a QP, none was a parse drop or for an unknown
    QP, the port's balance holds, and every frame sent left on the wire
    (directly or after ARP) or was lost in the ARP wait queue (`arp_wait.overflow`,
    a burst sent before the peer's MAC is known: RC recovers)."""
    if doc is None:
        return [f"{side}: no --stats document"]
    r = roce_counters(doc)
    bad = []
    if receives and (r["rx_frames"] == 0 or r["rx"]["consumed"] == 0):
        bad.append(f"{side}: no RoCE frame received and consumed (rx_frames {r['rx_frames']})")
    drops = {k: v for k, v in r["parse_drops"].items() if v}
    if drops:
        bad.append(f"{side}: parse drops {drops}")
    if r["unknown_qp"] > unknown_qp_allowed:
        bad.append(f"{side}: {r['unknown_qp']} frames for an unknown QP (at most {unknown_qp_allowed} expected)")
    reached = r["rx_frames"] - r["mcast_copies"]  # a datagram to a group reaches each member QP
    if r["frames"] != sum(r["parse_drops"].values()) + r["unknown_qp"] + reached + r["gsi_mads"] + r["family_out"]:
        bad.append(f"{side}: frames {r['frames']} != parse drops + unknown_qp + rx_frames - mcast_copies"
                   f" + gsi_mads + family_out")
    if r["rx_frames"] != sum(r["rx"].values()):
        bad.append(f"{side}: rx_frames {r['rx_frames']} != the sum of rx {r['rx']}")
    w = r["arp_wait"]
    left = r["tx_wire"] + w["sent"] + w["overflow"] + w["unresolved"] + r["loopback_frames"]
    if (sends and r["tx_packets"] == 0) or left != r["tx_packets"]:
        bad.append(f"{side}: tx_packets {r['tx_packets']}, but tx_wire + arp_wait (sent, overflow, unresolved) "
                   f"+ loopback = {left}")
    if r["tx_unroutable"] or r["arp_wait"]["unresolved"]:
        bad.append(f"{side}: unroutable {r['tx_unroutable']}, ARP wait {r['arp_wait']}")
    return bad


def summary(doc):
    """One line of a side's RoCE counters for the log."""
    if doc is None:
        return "no stats"
    r = roce_counters(doc)
    rx = ", ".join(f"{k} {v}" for k, v in r["rx"].items() if v)
    return (f"rx_frames {r['rx_frames']} ({rx}), tx_packets {r['tx_packets']}, acks_sent {r['acks_sent']}, "
            f"naks_sent {r['naks_sent']}, retransmitted {r['retransmitted']}, timeouts {r['timeouts']}, "
            f"lost waiting for ARP {r['arp_wait']['overflow']}")


LOCAL_ADDRESS = re.compile(r"local address:\s+LID (?:0x)?[0-9a-f]+,? QPN (0x[0-9a-f]+),? PSN (0x[0-9a-f]+)",
                           re.IGNORECASE)


def local_qpn_psn(text):
    """(QPN, PSN) of each "local address: ... QPN 0x.. PSN 0x.." line a program printed."""
    return [(int(q, 16), int(p, 16)) for q, p in LOCAL_ADDRESS.findall(text)]
