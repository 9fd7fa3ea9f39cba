#!/usr/bin/python3
"""rdma_cm between two emulated hosts: rdmacm-utils, perftest -R and fio, unmodified.

usage: /usr/bin/python3 tests/clients/rdmacm_test.py RDMASIM

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
    SIDR), rdma_server / rdma_client (the endpoint calls, synchronous ids),
    ib_send_bw -R, ib_write_bw -R, ib_read_lat -R and fio's rdma engine:
    both sides exit 0.

Exit 0 when all hold, 1 otherwise; 77 when rping is not installed.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

SERVER_IP = "10.0.0.1"
CLIENT_IP = "10.0.0.2"
TIMEOUT = 60


def host(rdmasim, wire, ip, cmd):
    env = dict(os.environ, RDMASIM_IP=ip)
    return subprocess.Popen([rdmasim, "run", "--wire", wire, "--", *cmd], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_for(path, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end and not os.path.exists(path):
        time.sleep(0.05)


def pair(rdmasim, tmp, server_cmd, client_cmd):
    """Runs a server and a client; (server rc, output), (client rc, output)."""
    wire = f"ptp://{tmp}/sock"
    server = host(rdmasim, wire, SERVER_IP, server_cmd)
    wait_for(f"{tmp}/sock")
    time.sleep(0.5)  # the server binds and listens once its device is up
    client = host(rdmasim, wire, CLIENT_IP, client_cmd)
    try:
        c_out, _ = client.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        client.kill()
        c_out = client.communicate()[0] + "\n(client timed out)"
    try:
        s_out, _ = server.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
        s_out = server.communicate()[0] + "\n(server killed: still running)"
    return (server.returncode, s_out), (client.returncode, c_out)


def programs():
    """(name, server command, client command) of the programs that must just work."""
    perf = ["-R", "-d", "rdmasim0", "-x", "0"]
    fio = ["fio", "--ioengine=rdma", "--port=5555", "--bs=64k", "--size=4M", "--verb=write"]
    return [
        ("ucmatose -c 4", ["ucmatose", "-c", "4"], ["ucmatose", "-s", SERVER_IP, "-c", "4"]),
        ("udaddy", ["udaddy"], ["udaddy", "-s", SERVER_IP]),
        ("rdma_server/rdma_client", ["rdma_server"], ["rdma_client", "-s", SERVER_IP]),
        ("ib_send_bw -R", ["ib_send_bw", *perf], ["ib_send_bw", *perf, SERVER_IP]),
        ("ib_write_bw -R", ["ib_write_bw", *perf], ["ib_write_bw", *perf, SERVER_IP]),
        ("ib_read_lat -R", ["ib_read_lat", *perf], ["ib_read_lat", *perf, SERVER_IP]),
        ("fio ioengine=rdma", [*fio, "--name=s", "--rw=read"],
         [*fio, "--name=c", f"--hostname={SERVER_IP}", "--rw=write"]),
    ]


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    if shutil.which("rping") is None:
        print("SKIP: rping not installed (rdmacm-utils; tools/dev installs it)")
        return 77
    rdmasim = sys.argv[1]
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
        (src, sout), (crc, cout) = pair(rdmasim, tmp, rping_s + ["-C", "1", "-p", "7000"],
                                        rping_c + ["-C", "1", "-p", "7001"])
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
    print(f"{'FAILED' if failures else 'passed'}: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
