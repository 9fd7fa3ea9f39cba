#!/usr/bin/python3
"""rdma_cm between two emulated hosts: rdmacm-utils, perftest -R and fio, unmodified.

usage: /usr/bin/python3 tests/clients/rdmacm_test.py RDMASIM CM_EVENTS

Each side runs under its own `rdmasim run --wire ptp://DIR/sock` with its
own address (RDMASIM_IP): the server 10.0.0.1, the client 10.0.0.2. The
client finds the server by ARP on the wire and connects with CM MADs
(device/README.md, "Connection manager"):

  * rping -C 10 -v -V: address and route resolved, REQ/REP/RTU, ten
    ping-pongs of RDMA READ and WRITE with the data verified, DREQ/DREP;
    both exit 0 and the client prints its ten lines;
  * a client to a port nobody listens on: the server host's CM answers a
    REJ with reason 8 (invalid service ID), which rping reports as
    RDMA_CM_EVENT_REJECTED, error 8, and exits non-zero;
  * ucmatose -c 4 (four RC connections, sends both ways), udaddy (UD:
    SIDR), rdma_server / rdma_client and rdma_xserver / rdma_xclient in RC
    mode (the endpoint calls, synchronous ids, 16 inline bytes),
    and fio's rdma engine with RDMA WRITE and with RDMA READ (fio's SEND:
    by hand, see programs()): both sides exit 0;
  * perftest -R: ib_send_bw, ib_write_bw and ib_read_lat, 1000 iterations,
    both sides exit 0 and the client prints its result row;
  * tests/examples/cm_events prints each rdma_cm event in order, and the
    sequences are pinned: a connection established then disconnected by
    the client (both sides: DISCONNECTED, then TIMEWAIT_EXIT); a reject
    (REJECTED, status 28 "consumer reject", the server's private data); an
    address nobody has (ADDR_ERROR, -ETIMEDOUT, after the resolve timeout);
    the server's device dying (fault plan device-fatal: DEVICE_REMOVAL) or its
    port going down (port-down: ADDR_CHANGE) while connected; the client's
    first REQ dropped by the fault plan (a BPF filter on the MAD's attribute
    ID): resent, connected all the same, one drop and a resend in --stats;
    a peer killed (SIGKILL, its CM with it) after ESTABLISHED: the client's
    rdma_disconnect ends in DISCONNECTED, then TIMEWAIT_EXIT, once its DREQ
    resends run out; a peer killed before the REQ: UNREACHABLE, -ETIMEDOUT,
    once the REQ resends run out (both hosts with caps.cm_response_timeout=12
    and caps.cm_max_retries=3, so it takes a fraction of a second);
  * mckey (UD multicast, rdma_join_multicast_ex): a receiver on the server
    host joins 239.1.2.3, a sender on the client host joins it and sends
    ten datagrams to it; all exit 0, and the receiver's --stats shows ten
    datagrams to the group consumed (device/README.md, "Multicast"); the
    same over shm:// with a second receiver (10.0.0.3): the wire floods;
  * the fault plan's verb-fail:rdma_connect makes the client's rdma_connect
    fail with ENOMEM once its route is resolved;

  * tshark reads both rping hosts' --tx-capture (cm_capture.py): the CM
    MADs each side sent, in order, on QP1, with rdma_cm's service ID and
    QPNs that match the RC traffic.

Exit 0 when all hold, 1 otherwise; 77 when rping is not installed.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cm_capture  # noqa: E402

SERVER_IP = "10.0.0.1"
CLIENT_IP = "10.0.0.2"
TIMEOUT = 60


def host(rdmasim, wire, ip, cmd, capture=None, opts=()):
    """`cmd` under rdmasim run, in a process group of its own: killing the
    group ends the program too, not only rdmasim run."""
    env = dict(os.environ, RDMASIM_IP=ip)
    extra = (["--tx-capture", capture] if capture else []) + list(opts)
    return subprocess.Popen([rdmasim, "run", "--wire", wire, *extra, "--", *cmd], env=env,
                            start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_for(path, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end and not os.path.exists(path):
        time.sleep(0.05)


def pair(rdmasim, tmp, server_cmd, client_cmd, expect_reject=False, captures=False,
         server_opts=(), client_opts=()):
    """Runs a server and a client; (server rc, output), (client rc, output).

    The server listens some time after its device is up (its wire socket
    appears). A client that came too early is rejected with reason 8, as it
    would be on hardware, and some programs crash on that (perftest -R): then
    the pair runs again with a longer head start (a loaded machine has
    been seen to take over 6 s to start perftest's server)."""
    for delay in (1.5, 6.0, 15.0):
        result = pair_once(rdmasim, tmp, server_cmd, client_cmd, delay, captures,
                           (server_opts, client_opts))
        early = re.search(r"REJECTED(;|,)? (error:? 8|status=8)\b", result[1][1]) is not None
        if expect_reject or not early:
            return result
        print(f"note: the client came before the server listened ({delay} s); again")
    return result


def pair_once(rdmasim, tmp, server_cmd, client_cmd, delay, captures, opts):
    wire = f"ptp://{tmp}/sock"
    for leftover in ("sock", "sock+"):
        if os.path.exists(f"{tmp}/{leftover}"):
            os.unlink(f"{tmp}/{leftover}")
    server = host(rdmasim, wire, SERVER_IP, server_cmd, captures and f"{tmp}/server.pcap", opts[0])
    wait_for(f"{tmp}/sock")
    time.sleep(delay)
    client = host(rdmasim, wire, CLIENT_IP, client_cmd, captures and f"{tmp}/client.pcap", opts[1])
    try:
        c_out, _ = client.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(client.pid, signal.SIGKILL)
        c_out = client.communicate()[0] + "\n(client timed out)"
    try:
        s_out, _ = server.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        s_out = server.communicate()[0] + "\n(server killed: still running)"
    return (server.returncode, s_out), (client.returncode, c_out)


def programs():
    """(name, server command, client command) of the programs that must just work."""
    # fio --verb=send is not here: fio connects with rnr_retry_count 0, so
    # a SEND that finds its server between a completion and the next
    # receive posted ends in RNR_RETRY_EXC_ERR, as on hardware; two busy
    # programs on two CPUs make that window wide (then fio hangs 300 s).
    # --verify=md5 as issue 32 asks; fio's rdma engine reads nothing back
    # (its client reports "issued rwts: total=0,64,0,0" with it, on any
    # device), so the verify phase checks no byte: rping -v and fi_pingpong
    # -c check the data.
    fio = lambda verb: ["fio", "--ioengine=rdma", "--port=5555", "--bs=64k", "--size=4M", f"--verb={verb}"]
    return [
        ("ucmatose -c 4", ["ucmatose", "-c", "4"], ["ucmatose", "-s", SERVER_IP, "-c", "4"]),
        ("udaddy", ["udaddy"], ["udaddy", "-s", SERVER_IP]),
        ("rdma_server/rdma_client", ["rdma_server"], ["rdma_client", "-s", SERVER_IP]),
        ("rdma_xserver/rdma_xclient (RC)", ["rdma_xserver"], ["rdma_xclient", "-s", SERVER_IP]),
        ("fio ioengine=rdma verb=write", [*fio("write"), "--name=s", "--rw=read"],
         [*fio("write"), "--name=c", f"--hostname={SERVER_IP}", "--rw=write", "--verify=md5"]),
        ("fio ioengine=rdma verb=read", [*fio("read"), "--name=s", "--rw=read"],
         [*fio("read"), "--name=c", f"--hostname={SERVER_IP}", "--rw=write", "--verify=md5"]),
    ]


def perftest_cases():
    """(name, server command, the client's result row) of perftest's -R runs.

    perftest -R opens a second connection once its first is up, and its
    server listens for it only then: a client whose address and route
    resolved at once would come first, be rejected (reason 8, as by a
    kernel's CM) and crash in perftest 4.5's retry path (upstream 3d9d8d0).
    Resolutions complete from the engine, as a kernel's work queue completes
    them (device/README.md, "Connection manager"), which leaves the server
    time to listen: 15 of 15 runs connected at once; 8 of 19 were rejected before."""
    cmd = lambda prog, *more: [prog, "-d", "rdmasim0", "-R", "-n", "1000", *more]
    return [
        ("ib_send_bw -R", cmd("ib_send_bw"), r"^\s*65536\s+1000\s+[\d.]+\s+[\d.]+"),
        ("ib_write_bw -R", cmd("ib_write_bw"), r"^\s*65536\s+1000\s+[\d.]+\s+[\d.]+"),
        ("ib_read_lat -R", cmd("ib_read_lat"), r"^\s*2\s+1000\s+[\d.]+\s+[\d.]+"),
    ]


QUICK_CM = ["--set", "caps.cm_response_timeout=12", "--set", "caps.cm_max_retries=3"]


def peer_dies(rdmasim, tmp, cm_events, stall, after, delay):
    """The server host is killed (SIGKILL, its CM with it) when the client
    prints `after`; the client waits 1.5 s at `stall`, then goes on alone.
    Both with short CM timeouts (34 ms a try, 3 resends). The client's events."""
    wire = f"ptp://{tmp}/sock"
    for leftover in ("sock", "sock+"):
        if os.path.exists(f"{tmp}/{leftover}"):
            os.unlink(f"{tmp}/{leftover}")
    server = subprocess.Popen(
        [rdmasim, "run", "--wire", wire, *QUICK_CM, "--", cm_events, "server", "7174", "accept"],
        env=dict(os.environ, RDMASIM_IP=SERVER_IP), start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(f"{tmp}/sock")
    time.sleep(delay)
    client = subprocess.Popen(
        [rdmasim, "run", "--wire", wire, *QUICK_CM, "--", cm_events, "client", SERVER_IP, "7174",
         "1000", stall, "1500"],
        env=dict(os.environ, RDMASIM_IP=CLIENT_IP), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True)
    watchdog = threading.Timer(TIMEOUT, lambda: os.killpg(client.pid, signal.SIGKILL))
    watchdog.start()
    lines = []
    for line in client.stdout:
        lines.append(line.strip())
        if line.startswith(f"RDMA_CM_EVENT_{after} "):
            os.killpg(server.pid, signal.SIGKILL)
    client.wait()
    watchdog.cancel()
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGKILL)
    server.wait()
    return [line for line in lines if line.startswith("RDMA_CM_EVENT")], "\n".join(lines)


def peer_death_cases():
    """(name, stall, kill after, the client's events)."""
    ev = lambda *names: [f"RDMA_CM_EVENT_{n}" if " " in n else f"RDMA_CM_EVENT_{n} status=0"
                         for n in names]
    return [
        ("peer dies after ESTABLISHED: DREQ resends run out", "disconnect", "ESTABLISHED",
         ev("ADDR_RESOLVED", "ROUTE_RESOLVED", "ESTABLISHED", "DISCONNECTED", "TIMEWAIT_EXIT")),
        ("peer dies before the REQ: REQ resends run out", "connect", "ROUTE_RESOLVED",
         ev("ADDR_RESOLVED", "ROUTE_RESOLVED", "UNREACHABLE status=-110")),
    ]


def event_cases(cm_events):
    """(name, server, client, server's events or None, client's or None, server's options)."""
    ev = lambda *names: [f"RDMA_CM_EVENT_{n}" if " " in n else f"RDMA_CM_EVENT_{n} status=0"
                         for n in names]
    server = lambda mode: [cm_events, "server", "7174", mode]
    client = lambda ip, *more: [cm_events, "client", ip, "7174", *more]
    # The server's fourth frame (after the ARP request, the REQ and the RTU)
    # is the client's DREQ: a fault after three frames strikes while the
    # connection is up, and the client's DREQ is lost with it (its resends,
    # on short CM timeouts, run out: DISCONNECTED all the same).
    fault = lambda plan: ["--faults", plan]
    stalled = client(SERVER_IP, "1000", "disconnect", "1000")
    none = ([], [])
    # The client's first REQ lost on its way out (a BPF filter on the MAD's
    # attribute ID, UDP payload byte 36 on: BTH 12, DETH 8, MAD header 16).
    lose_req = fault("drop:nth=1,dir=tx,filter=udp port 4791 and udp[44:2] == 0x0010")
    return [
        ("connect, disconnect", server("accept"), client(SERVER_IP),
         ev("CONNECT_REQUEST", "ESTABLISHED", "DISCONNECTED", "TIMEWAIT_EXIT"),
         ev("ADDR_RESOLVED", "ROUTE_RESOLVED", "ESTABLISHED", "DISCONNECTED", "TIMEWAIT_EXIT"), none),
        ("reject", server("reject"), client(SERVER_IP),
         ev("CONNECT_REQUEST"),
         ev("ADDR_RESOLVED", "ROUTE_RESOLVED", "REJECTED status=28 data=no"), none),
        ("an address nobody has", server("accept"), client("10.0.0.9", "1000"),
         None, ev("ADDR_ERROR status=-110"), none),
        ("the server's device dies (device-fatal)", server("accept"), stalled,
         ev("CONNECT_REQUEST", "ESTABLISHED", "DEVICE_REMOVAL"),
         ev("ADDR_RESOLVED", "ROUTE_RESOLVED", "ESTABLISHED", "DISCONNECTED", "TIMEWAIT_EXIT"),
         (fault("device-fatal:after=3"), QUICK_CM)),
        ("the server's port goes down (port-down)", server("accept"), stalled,
         ev("CONNECT_REQUEST", "ESTABLISHED", "ADDR_CHANGE"), None,
         (fault("port-down:after=3"), QUICK_CM)),
        ("the first REQ is lost: resent", server("accept"), client(SERVER_IP),
         ev("CONNECT_REQUEST", "ESTABLISHED", "DISCONNECTED", "TIMEWAIT_EXIT"),
         ev("ADDR_RESOLVED", "ROUTE_RESOLVED", "ESTABLISHED", "DISCONNECTED", "TIMEWAIT_EXIT"),
         ([], lose_req + ["--set", "caps.cm_response_timeout=14", "--stats", "STATS"])),
    ]


def lost_req_stats(check, path):
    """The lost REQ case's client --stats: one frame dropped on the way out, resent by the CM."""
    try:
        with open(path) as f:
            doc = json.load(f)
        dev = doc["devices"][0]
        drops = dev["tx_faults"]["fault_drops"]
        cm = dev["port"]["roce"]["cm"]
    except (OSError, ValueError, KeyError, IndexError) as e:
        check(False, "the first REQ is lost: the client's --stats", repr(e))
        return
    check(drops == 1 and cm["mads_resent"] >= 1,
          "the first REQ is lost: one frame dropped on the way out, the REQ resent (--stats)",
          f"tx fault_drops {drops}, cm {cm}")


def mckey_run(rdmasim, tmp, scheme, receivers):
    """mckey receivers (10.0.0.1, then 10.0.0.3) and a sender (10.0.0.2) on
    one wire; [(ip, exit status, output)], the sender's first. The
    receivers join while the sender starts; it waits 3 s more to send."""
    wire, group = f"{scheme}://{tmp}/sock", ["mckey", "-m", "239.1.2.3"]
    procs = []
    for ip in [SERVER_IP, "10.0.0.3"][:receivers]:
        procs.append((ip, host(rdmasim, wire, ip, [*group, "-b", ip], opts=["--stats", f"{tmp}/{ip}.json"])))
        wait_for(f"{tmp}/sock")
    time.sleep(1.5)
    procs.append((CLIENT_IP, host(rdmasim, wire, CLIENT_IP, [*group, "-s", "-b", CLIENT_IP])))
    runs = []
    for ip, p in reversed(procs):
        try:
            out = p.communicate(timeout=TIMEOUT)[0]
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out = p.communicate()[0] + "\n(killed: still running)"
        runs.append((ip, p.returncode, out))
    return runs


def mckey_check(rdmasim, check):
    """mckey over ptp:// (one receiver) and over shm:// (two: the wire floods the group's MAC)."""
    for scheme, receivers in (("ptp", 1), ("shm", 2)):
        with tempfile.TemporaryDirectory(prefix="rdmacm-") as tmp:
            runs = mckey_run(rdmasim, tmp, scheme, receivers)
            ok = all(rc == 0 for _, rc, _ in runs) and all(
                "data transfers complete" in out and "joined dgid: ::ffff:239.1.2.3" in out for _, _, out in runs)
            check(ok, f"mckey over {scheme}://: {receivers} receiver(s) join 239.1.2.3 and get the "
                  "sender's ten datagrams, all exit 0",
                  "\n".join(f"{ip} exit {rc}:\n{out}" for ip, rc, out in runs))
            for ip, _, _ in runs[1:]:
                try:
                    with open(f"{tmp}/{ip}.json") as f:
                        roce = json.load(f)["devices"][0]["port"]["roce"]
                    got = (roce["mcast_frames"], roce["rx"]["consumed"], roce["unknown_qp"])
                except (OSError, ValueError, KeyError, IndexError) as e:
                    got = repr(e)
                check(got == (10, 10, 0), f"mckey over {scheme}://: {ip}'s --stats: ten datagrams to "
                      "the group, each consumed, none for an unknown QP",
                      f"(mcast_frames, consumed, unknown_qp) = {got}")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    if shutil.which("rping") is None:
        print("SKIP: rping not installed (rdmacm-utils; tools/dev installs it)")
        return 77
    rdmasim, cm_events = sys.argv[1], sys.argv[2]
    failures = []

    def check(ok, what, detail=""):
        print(("ok: " if ok else "FAIL: ") + what)
        if not ok:
            failures.append(what)
            print(detail)

    rping_s = ["rping", "-s", "-a", SERVER_IP]
    rping_c = ["rping", "-c", "-a", SERVER_IP]
    with tempfile.TemporaryDirectory(prefix="rdmacm-") as tmp:
        (src, sout), (crc, cout) = pair(rdmasim, tmp, rping_s + ["-C", "10", "-v", "-V"],
                                        rping_c + ["-C", "10", "-v", "-V"])
        lines = [line for line in cout.splitlines() if line.startswith("ping data:")]
        check(crc == 0 and len(lines) == 10, "rping client: 10 verified ping-pongs, exit 0",
              f"exit {crc}\n{cout}")
        check(src == 0, "rping server: exit 0", f"exit {src}\n{sout}")
    with tempfile.TemporaryDirectory(prefix="rdmacm-") as tmp:
        (src, sout), (crc, cout) = pair(rdmasim, tmp, rping_s + ["-C", "3", "-p", "7174"],
                                        rping_c + ["-C", "3", "-p", "7174"], captures=True)
        check(src == 0 and crc == 0, "rping with --tx-capture on both hosts: exit 0",
              f"server exit {src}:\n{sout}\nclient exit {crc}:\n{cout}")
        cm_capture.check_captures(check, f"{tmp}/client.pcap", f"{tmp}/server.pcap", 7174)
    with tempfile.TemporaryDirectory(prefix="rdmacm-") as tmp:
        (src, sout), (crc, cout) = pair(rdmasim, tmp, rping_s + ["-C", "1", "-p", "7000"],
                                        rping_c + ["-C", "1", "-p", "7001"], expect_reject=True)
        check(crc != 0 and "RDMA_CM_EVENT_REJECTED, error 8" in cout,
              "rping to a port nobody listens on: REJECTED, reason 8 (invalid service ID)",
              f"exit {crc}\n{cout}")
    for name, server_cmd, client_cmd in programs():
        if shutil.which(server_cmd[0]) is None:
            check(False, f"{name}: {server_cmd[0]} installed (tools/dev installs it)")
            continue
        with tempfile.TemporaryDirectory(prefix="rdmacm-") as tmp:
            (src, sout), (crc, cout) = pair(rdmasim, tmp, server_cmd, client_cmd)
        check(src == 0 and crc == 0, f"{name}: both sides exit 0",
              f"server exit {src}:\n{sout}\nclient exit {crc}:\n{cout}")
    for name, server_cmd, row in perftest_cases():
        with tempfile.TemporaryDirectory(prefix="rdmacm-") as tmp:
            (src, sout), (crc, cout) = pair(rdmasim, tmp, server_cmd, [*server_cmd, SERVER_IP])
        check(src == 0 and crc == 0 and re.search(row, cout, re.M) is not None,
              f"{name}: both sides exit 0, the client prints its result row",
              f"server exit {src}:\n{sout}\nclient exit {crc}:\n{cout}")
    for name, server_cmd, client_cmd, want_server, want_client, opts in event_cases(cm_events):
        with tempfile.TemporaryDirectory(prefix="rdmacm-") as tmp:
            client_opts = [o.replace("STATS", f"{tmp}/client.json") for o in opts[1]]
            (src, sout), (crc, cout) = pair(rdmasim, tmp, server_cmd, client_cmd,
                                            server_opts=opts[0], client_opts=client_opts)
            if "--stats" in client_opts:
                lost_req_stats(check, f"{tmp}/client.json")
        got_s = [line for line in sout.splitlines() if line.startswith("RDMA_CM_EVENT")]
        got_c = [line for line in cout.splitlines() if line.startswith("RDMA_CM_EVENT")]
        if want_client is not None:
            check(got_c == want_client, f"{name}: the client's events in order",
                  f"want {want_client}\ngot  {got_c}\n{cout}")
        if want_server is not None:
            check(got_s == want_server, f"{name}: the server's events in order",
                  f"want {want_server}\ngot  {got_s}\n{sout}")
    mckey_check(rdmasim, check)
    with tempfile.TemporaryDirectory(prefix="rdmacm-") as tmp:
        verb_fail = ["--faults", "verb-fail:rdma_connect,nth=1,errno=ENOMEM"]
        _, (crc, cout) = pair(rdmasim, tmp, [cm_events, "server", "7174", "accept"],
                              [cm_events, "client", SERVER_IP, "7174"], client_opts=verb_fail)
    got_c = [line for line in cout.splitlines() if line.startswith("RDMA_CM_EVENT")]
    check(crc != 0 and "rdma_connect: Cannot allocate memory" in cout and
          got_c == ["RDMA_CM_EVENT_ADDR_RESOLVED status=0", "RDMA_CM_EVENT_ROUTE_RESOLVED status=0"],
          "verb-fail:rdma_connect: rdma_connect fails with ENOMEM, after the route resolved",
          f"exit {crc}\n{cout}")
    for name, stall, after, want in peer_death_cases():
        with tempfile.TemporaryDirectory(prefix="rdmacm-") as tmp:
            for delay in (1.5, 6.0):
                got, out = peer_dies(rdmasim, tmp, cm_events, stall, after, delay)
                if "RDMA_CM_EVENT_REJECTED status=8" not in got:
                    break
        check(got == want, f"{name}: the client's events in order", f"want {want}\ngot  {got}\n{out}")
    print(f"{'FAILED' if failures else 'passed'}: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
