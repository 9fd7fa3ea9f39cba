#!/usr/bin/python3
"""Issue 33, acceptance 1: UCX's ucx_perftest (Debian's ucx-utils, unmodified,
no UCX workaround) between two emulated hosts, each under its own
`rdmasim run --wire shm://DIR/sock`.

usage: ucx_perftest_test.py RDMASIM [--user UID:GID]

UCX takes rdmasim0 with its stock checks (the device node `rdmasim run`
provides; README.md, "UCX, MPI and libfabric"). Each case picks the
transport with UCX_TLS, as a user measuring one does: `rc_v` (rc_verbs,
with ud_verbs to wire it up) and `ud_v` (ud_verbs); UCX_NET_DEVICES keeps
it on rdmasim0:1. UCP: tag_lat, tag_bw, ucp_put_bw, ucp_get over both; UCT:
put_bw and get (zcopy) over rc_verbs (UCX's ud_verbs has no put or get, on
a ConnectX too). Both sides must exit 0, the client must print its "Final:"
line, and each side's RoCE counters must show frames sent and received,
none dropped or for an unknown QP. UD needs no UCX_UD_ETH_DGID_CHECK=n: a
receive's sl carries the packet type as on a ConnectX.

--user runs both sides as that user (setpriv): `rdmasim run` then makes
the device node in a user namespace. At the end a Markdown table of the
client's figures. Exit 0 when all holds, 1 otherwise.
"""

import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from two_hosts import Checks, Pair, roce_problems, summary, user_option  # noqa: E402

SIZE = "65536"
# (UCX_TLS, ucx_perftest options, what the line measures)
CASES = [
    ("rc_v", ["-t", "tag_lat", "-s", "8"], "latency"),
    ("rc_v", ["-t", "tag_bw", "-s", SIZE], "bandwidth"),
    ("rc_v", ["-t", "ucp_put_bw", "-s", SIZE], "bandwidth"),
    ("rc_v", ["-t", "ucp_get", "-s", SIZE], "bandwidth"),
    ("rc_verbs", ["-t", "put_bw", "-x", "rc_verbs", "-d", "rdmasim0:1", "-D", "zcopy", "-s", SIZE], "bandwidth"),
    ("rc_verbs", ["-t", "get", "-x", "rc_verbs", "-d", "rdmasim0:1", "-D", "zcopy", "-s", SIZE], "bandwidth"),
    ("ud_v", ["-t", "tag_lat", "-s", "8"], "latency"),
    ("ud_v", ["-t", "tag_bw", "-s", SIZE], "bandwidth"),
    ("ud_v", ["-t", "ucp_put_bw", "-s", SIZE], "bandwidth"),
    ("ud_v", ["-t", "ucp_get", "-s", SIZE], "bandwidth"),
]
ITERATIONS = "2000"
# Final: iterations, latency 50%, average, overall (us), bandwidth average, overall (MB/s), rates
FINAL = re.compile(r"^Final:\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", re.MULTILINE)

check = Checks()


def run_case(rdmasim, tmp, n, tls, opts, user):
    os.environ["UCX_TLS"] = tls if tls == "rc_verbs" else f"{tls},self"
    os.environ["UCX_NET_DEVICES"] = "rdmasim0:1"
    pair = Pair(rdmasim, tmp, f"{n}-{tls}-{opts[1]}", ["ucx_perftest", *opts, "-n", ITERATIONS],
                scheme="shm", user=user)
    pair.run()
    what = f"{tls} {' '.join(opts)}"
    ok = check(pair.server.rc == 0 and pair.client.rc == 0, f"{what}: both sides exit 0", pair.show())
    final = FINAL.search(pair.client.stdout)
    ok &= check(final is not None and final.group(1) == ITERATIONS,
                f"{what}: the client prints 'Final:' with {ITERATIONS} iterations", pair.show())
    for side in ("server", "client"):
        doc = pair.stats(side)
        bad = roce_problems(side, doc)
        ok &= check(not bad, f"{what}: {side}'s RoCE counters", "\n".join(bad))
        print(f"  {side}: {summary(doc)}")
    return final if ok else None


def main():
    user, args = user_option(sys.argv[1:])
    if len(args) != 1:
        print(__doc__)
        return 2
    rdmasim = os.path.abspath(args[0])
    if shutil.which("ucx_perftest") is None:
        print("FAIL: ucx_perftest not found (Debian package ucx-utils; tools/dev installs it)")
        return 1
    rows = []
    with tempfile.TemporaryDirectory(prefix="ucx-perftest-") as tmp:
        os.chmod(tmp, 0o711)  # another user reaches its own DIR below
        for n, (tls, opts, kind) in enumerate(CASES):
            print(f"== UCX_TLS={tls} ucx_perftest {' '.join(opts)}", flush=True)
            final = run_case(rdmasim, tmp, n, tls, opts, user)
            if final is not None:
                value = f"{final.group(2)} us (median)" if kind == "latency" else f"{final.group(6)} MB/s"
                rows.append(f"| {tls} | {' '.join(opts)} | {value} |")
    print("\n| UCX_TLS | ucx_perftest | result |\n|---|---|---|")
    print("\n".join(rows))
    return check.report(f" ({'as uid ' + str(user[0]) if user else 'as ' + str(os.geteuid())})")


if __name__ == "__main__":
    sys.exit(main())
