#!/usr/bin/python3
"""Issue 13, acceptance 1: rdma-core's pingpongs (Debian ibverbs-utils,
unmodified) between two emulated hosts, each under its own `rdmasim run
--wire ptp://DIR/sock`, with message sizes below, at and above the MTU.

usage: roce_programs_test.py RDMASIM [--wire ptp|shm]

--wire shm runs every case over a shared-memory wire (shm://DIR/sock,
issue 31) instead of ptp://, and checks its counters too: no frame lost
(no peer, dropped) and no corrupt ring entry on either side.

Each run: the server, then the client with 127.0.0.1 (a free TCP port per
run), both with `-g 0 -d rdmasim0 -c` (validate the received buffer) and
`--stats`. Both must exit 0 and print "N iters in"; each side's RoCE
counters must show frames received and consumed, no parse drops, none for
an unknown QP (but for the SRQ pingpong's messages in flight when the
peer exits), every frame sent gone out on the wire; and on a run without
a retransmission, exactly the frames the protocol gives: per message, one
packet per path-MTU piece (plus one ACK per message on RC) and, for UD,
one datagram. UD's messages cannot exceed the port MTU: at the default
1024, `-s 2048` must fail as the tool reports it ("Requested size larger
than port MTU"); with `--set mtu=4096`, `-s 2048` and `-s 4096` work.
`ibv_xsrq_pingpong` (XRC) runs too: both sides print "success", RoCE
counters as above.

About `-c`: the tools check the first byte of every page of each received
buffer (set to 0 by the sender, 0x7b before) -- roce_capture_test.py reads
the whole payload of every frame.

Exit 0 when all holds, 1 otherwise (every failure printed).
"""

import os
import re
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from two_hosts import Checks, Pair, Program, roce_counters, roce_problems, summary  # noqa: E402

MTU = 1024  # the port's default active MTU, and the pingpongs' default path MTU (-m)
SRQ_QPS = 16  # ibv_srq_pingpong's default -q

# (tool, size, iterations, rdmasim options). An exchange takes from 0.5 to
# 10 ms here (two programs and two engine threads polling on two cores), so
# most run 200 exchanges; the SRQ pingpong, 16 QPs in flight, runs the
# tool's default 1000.
CASES = [
    ("ibv_rc_pingpong", 100, 200, []),
    ("ibv_rc_pingpong", 1024, 200, []),
    ("ibv_rc_pingpong", 4096, 200, []),
    ("ibv_rc_pingpong", 10000, 100, []),
    ("ibv_uc_pingpong", 100, 200, []),
    ("ibv_uc_pingpong", 1024, 200, []),
    ("ibv_uc_pingpong", 4096, 200, []),
    ("ibv_srq_pingpong", 100, 1000, []),
    ("ibv_srq_pingpong", 1024, 1000, []),
    ("ibv_srq_pingpong", 4096, 1000, []),
    ("ibv_ud_pingpong", 100, 200, []),
    ("ibv_ud_pingpong", 1024, 200, []),
    ("ibv_ud_pingpong", 2048, 200, ["--set", "mtu=4096"]),
    ("ibv_ud_pingpong", 4096, 200, ["--set", "mtu=4096"]),
]

check = Checks()
SCHEME = "ptp"  # the wire: --wire


def expected_frames(tool, size, iters, mtu):
    """(least, most) frames each side receives on a run without retransmission.

    Per message: one packet per path-MTU piece, plus an ACK on RC (the SRQ
    pingpong's QPs are RC); UD: one datagram. The SRQ pingpong keeps all its
    QPs busy until both counts reach `iters`, so each side sends up to one
    message more per QP, which the other side may receive or not before it
    exits."""
    if tool == "ibv_ud_pingpong":
        return iters, iters
    packets = max(1, -(-size // mtu))
    if tool == "ibv_uc_pingpong":
        return iters * packets, iters * packets
    if tool == "ibv_srq_pingpong":
        return iters * (packets + 1), (iters + SRQ_QPS) * (packets + 1)
    return iters * (packets + 1), iters * (packets + 1)


def run_case(rdmasim, tmp, n, tool, size, iters, opts):
    args = [tool, "-g", "0", "-d", "rdmasim0", "-s", str(size), "-n", str(iters), "-c"]
    failed_before = len(check.failures)
    pair = Pair(rdmasim, tmp, f"{n}-{tool}-{size}", args, rdmasim_opts=opts, scheme=SCHEME)
    seconds = pair.run()
    what = f"{' '.join(args)} {' '.join(opts)}".strip()
    exited = check(pair.server.rc == 0 and pair.client.rc == 0,
                   f"{what}: server and client exit 0 (got {pair.server.rc}, {pair.client.rc})", pair.show())
    done = re.search(r"^(\d+) iters in ([\d.]+) seconds = ([\d.]+) usec/iter", pair.client.stdout, re.M)
    check(done is not None and int(done.group(1)) == iters,
          f"{what}: the client prints '{iters} iters in'", pair.show() if exited else "")
    stats = {side: pair.stats(side) for side in ("server", "client")}
    # The SRQ pingpong's extra messages (see expected_frames) can reach QPs
    # the peer has destroyed on its way out: dropped as for an unknown QP.
    stray = SRQ_QPS * (max(1, -(-size // MTU)) + 1) if tool == "ibv_srq_pingpong" else 0
    for side in ("server", "client"):
        for problem in roce_problems(side, stats[side], unknown_qp_allowed=stray) + shm_problems(side, stats[side]):
            check(False, f"{what}: {problem}")
    notes = []
    if stats["server"] and stats["client"]:
        least, most = expected_frames(tool, size, iters, MTU)
        want = str(least) if least == most else f"{least} to {most}"
        clean = all(roce_counters(stats[s])["retransmitted"] == 0 for s in stats)
        for side in ("server", "client"):
            got = roce_counters(stats[side])["rx"]["consumed"]
            if clean:
                check(least <= got <= most, f"{what}: {side} consumed {got} RoCE frames, the protocol gives {want}")
            notes.append(f"  {side}: {summary(stats[side])}")
        if not clean:
            notes.append("  note: retransmissions in this run; the exact frame count was not checked")
    usec = done.group(3) if done else "?"
    ok = len(check.failures) == failed_before
    print(f"{'ok  ' if ok else 'FAIL'} {what}: {seconds:.2f} s, {usec} usec/iter")
    print("\n".join(notes))


def shm_problems(side, doc):
    """On shm://: frames the wire lost or ring entries it could not trust (empty: none)."""
    if SCHEME != "shm" or doc is None:
        return []
    w = doc["devices"][0].get("wire")
    if w is None or "rx_corrupt" not in w:
        return [f"{side}: no shm:// wire counters in --stats"]
    bad = {k: w[k] for k in ("tx_no_peer", "tx_dropped", "rx_corrupt") if w[k]}
    return [f"{side}: shm:// wire {bad}"] if bad else []


def oversize_ud(rdmasim, tmp):
    """ud_pingpong -s 2048 at the default MTU 1024: refused by the tool itself."""
    for side, extra in (("server", []), ("client", ["127.0.0.1"])):
        args = ["ibv_ud_pingpong", "-g", "0", "-d", "rdmasim0", "-s", "2048", "-n", "10", "-p", "1", *extra]
        p = Program(side, [rdmasim, "run", "--wire", f"{SCHEME}://{tmp}/oversize-{side}", "--", *args])
        p.finish(60)
        check(p.rc == 1 and "Requested size larger than port MTU (1024)" in p.stderr,
              f"{' '.join(args)}: exit 1 and 'Requested size larger than port MTU (1024)' (the port's MTU)",
              p.show())
        print(f"ok   {' '.join(args)}: refused: {p.stderr.strip().splitlines()[-1:]}")


def xsrq_case(rdmasim, tmp, n, size, tests):
    """ibv_xsrq_pingpong: XRC (a domain, an XRC SRQ, INI and TGT QPs) between two hosts."""
    args = ["ibv_xsrq_pingpong", "-g", "0", "-d", "rdmasim0", "-m", str(MTU), "-s", str(size), "-n", str(tests)]
    failed_before = len(check.failures)
    pair = Pair(rdmasim, tmp, f"{n}-xsrq-{size}", args, scheme=SCHEME)
    seconds = pair.run()
    what = " ".join(args)
    check(pair.server.rc == 0 and pair.client.rc == 0 and "success" in pair.server.stdout
          and "success" in pair.client.stdout,
          f"{what}: server and client exit 0 and print 'success' (got {pair.server.rc}, {pair.client.rc})",
          pair.show())
    notes = []
    for side in ("server", "client"):
        doc = pair.stats(side)
        for problem in roce_problems(side, doc) + shm_problems(side, doc):
            check(False, f"{what}: {problem}")
        if doc:
            rx = roce_counters(doc)["rx"]
            refused = {k: rx[k] for k in ("wrong_transport", "invalid_request", "remote_access") if rx[k]}
            check(not refused, f"{what}: {side}: no XRC request refused (got {refused})")
            notes.append(f"  {side}: {summary(doc)}")
    ok = len(check.failures) == failed_before
    print(f"{'ok  ' if ok else 'FAIL'} {what}: {seconds:.2f} s")
    print("\n".join(notes))


def main():
    global SCHEME
    argv = sys.argv[1:]
    if len(argv) == 3 and argv[1] == "--wire" and argv[2] in ("ptp", "shm"):
        SCHEME = argv[2]
        argv = argv[:1]
    if len(argv) != 1:
        print(__doc__)
        return 2
    rdmasim = argv[0]
    missing = [t for t in ("ibv_rc_pingpong", "ibv_uc_pingpong", "ibv_ud_pingpong", "ibv_srq_pingpong",
                           "ibv_xsrq_pingpong")
               if shutil.which(t) is None]
    if missing:
        print(f"FAIL: {', '.join(missing)} not installed (Debian ibverbs-utils; tools/dev installs it)")
        return 1
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="roce-programs-") as tmp:
        for n, (tool, size, iters, opts) in enumerate(CASES):
            run_case(rdmasim, tmp, n, tool, size, iters, opts)
        oversize_ud(rdmasim, tmp)
        for n, size in enumerate((100, 4096)):
            xsrq_case(rdmasim, tmp, len(CASES) + n, size, 50)
    return check.report(f" in {time.monotonic() - t0:.1f} s")


if __name__ == "__main__":
    sys.exit(main())
