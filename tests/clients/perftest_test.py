#!/usr/bin/python3
"""Issue 13, acceptance 2: perftest (Debian perftest, unmodified) between two
emulated hosts, each under its own `rdmasim run --wire ptp://DIR/sock`.

usage: perftest_test.py RDMASIM

ib_send_bw, ib_write_bw, ib_read_bw, ib_send_lat, ib_write_lat and
ib_read_lat over RC, and ib_send_bw and ib_send_lat over UD (`-c UD`, the
only perftest programs with UD), each with its default iteration count and
message size, `-d rdmasim0 -x 0 -p PORT` on both sides (a free TCP port per
run), the client with 127.0.0.1. Both sides must exit 0 and print the result
table's line with the default iteration count (ib_read_lat's server is
passive and prints none, as on hardware); each side's RoCE counters must
show frames received and consumed, no parse drops, none for an unknown QP,
and every frame sent gone out on the wire.

At the end it prints the client's figures as a Markdown table (the one in
tests/bench/RESULTS.md). Exit 0 when all holds, 1 otherwise.

With -e, ib_send_lat and ib_send_bw sleep on completion events
(ibv_req_notify_cq, ibv_get_cq_event) instead of polling: perftest 4.5 has
one channel for its send and receive CQs, and an event that does not come
from the next completion (device/README.md, "Completion queues and
events") wakes it for the wrong CQ, which it reports as a completion error
(exit 17) while its peer waits forever. UD send_bw must get every datagram:
the wire holds a sender back while the receiving engine is slow to read
(net/README.md, "Virtual wires").
"""

import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from two_hosts import Checks, Pair, roce_counters, roce_problems, summary  # noqa: E402

# (program and options, its default iteration count, the server prints the table)
CASES = [
    (["ib_send_bw"], 1000, True),
    (["ib_send_bw", "-c", "UD"], 1000, True),
    (["ib_send_bw", "-e"], 1000, True),
    (["ib_write_bw"], 5000, True),
    (["ib_read_bw"], 1000, True),
    (["ib_send_lat"], 1000, True),
    (["ib_send_lat", "-c", "UD"], 1000, True),
    (["ib_send_lat", "-e"], 1000, True),
    (["ib_write_lat"], 1000, True),
    (["ib_read_lat"], 1000, False),
]

check = Checks()


def columns(header):
    """perftest's header as one name per value: "BW peak[MB/sec]", "99% percentile[usec]"."""
    cols = []
    for word in header.split():
        if cols and (cols[-1] == "BW" or word == "percentile[usec]"):
            cols[-1] += " " + word
        else:
            cols.append(word)
    return cols


def result_line(text):
    """(header columns, values) of perftest's result table, or None."""
    lines = text.splitlines()
    for i, line in enumerate(lines[:-1]):
        cols = columns(line)
        if cols[:2] == ["#bytes", "#iterations"]:
            values = lines[i + 1].split()
            if len(values) >= 3 and values[0].isdigit():
                return cols, values
    return None


def run_case(rdmasim, tmp, n, program, iters, server_table):
    args = [*program, "-d", "rdmasim0", "-x", "0"]
    what = " ".join(args)
    failed_before = len(check.failures)
    pair = Pair(rdmasim, tmp, f"{n}-{'-'.join(program)}", args)
    seconds = pair.run()
    exited = check(pair.server.rc == 0 and pair.client.rc == 0,
                   f"{what}: server and client exit 0 (got {pair.server.rc}, {pair.client.rc})", pair.show())
    tables = {side: result_line(p.stdout) for side, p in (("server", pair.server), ("client", pair.client))}
    for side in ("client", "server") if server_table else ("client",):
        t = tables[side]
        check(t is not None and int(t[1][1]) == iters,
              f"{what}: the {side} prints its result line with {iters} iterations",
              pair.show() if exited else "")
    for side in ("server", "client"):
        # UD send_bw is one way: the server only receives, the client only sends.
        one_way = "UD" in program and "ib_send_bw" in program
        for problem in roce_problems(side, pair.stats(side), receives=not (one_way and side == "client"),
                                     sends=not (one_way and side == "server")):
            check(False, f"{what}: {problem}")
    if "UD" in program and "ib_send_bw" in program and pair.stats("server"):
        got = roce_counters(pair.stats("server"))["rx"]["consumed"]
        check(got == iters, f"{what}: the server received {got} of {iters} datagrams")
    ok = len(check.failures) == failed_before
    print(f"{'ok  ' if ok else 'FAIL'} {what}: {seconds:.2f} s")
    if tables["client"]:
        print("  " + "  ".join(f"{c}={v}" for c, v in zip(*tables["client"])))
    for side in ("server", "client"):
        print(f"  {side}: {summary(pair.stats(side))}")
    return what, tables["client"], seconds


def markdown(rows):
    """The clients' figures: bandwidth runs and latency runs, one table each."""
    out = []
    bw = [(w, t, s) for w, t, s in rows if t and "BW" in " ".join(t[0])]
    lat = [(w, t, s) for w, t, s in rows if t and "t_min[usec]" in t[0]]
    if bw:
        out += ["| program | bytes | iterations | BW peak MB/s | BW average MB/s | Mpps | wall s |",
                "|---|---|---|---|---|---|---|"]
        out += [f"| `{w}` | {t[1][0]} | {t[1][1]} | {t[1][2]} | {t[1][3]} | {t[1][4]} | {s:.1f} |"
                for w, t, s in bw]
    if lat:
        out += ["", "| program | bytes | iterations | t_min us | t_typical us | t_avg us | 99% us | "
                "99.9% us | wall s |", "|---|---|---|---|---|---|---|---|---|"]
        for w, t, s in lat:
            v = dict(zip(t[0], t[1]))
            out.append(f"| `{w}` | {v['#bytes']} | {v['#iterations']} | {v['t_min[usec]']} | "
                       f"{v['t_typical[usec]']} | {v['t_avg[usec]']} | {v['99% percentile[usec]']} | "
                       f"{v['99.9% percentile[usec]']} | {s:.1f} |")
    return "\n".join(out)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    rdmasim = sys.argv[1]
    missing = sorted({p[0] for p, _, _ in CASES if shutil.which(p[0]) is None})
    if missing:
        print(f"FAIL: {', '.join(missing)} not installed (Debian perftest; tools/dev installs it)")
        return 1
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="perftest-") as tmp:
        rows = [run_case(rdmasim, tmp, n, *case) for n, case in enumerate(CASES)]
    print(markdown(rows))
    return check.report(f" in {time.monotonic() - t0:.1f} s")


if __name__ == "__main__":
    sys.exit(main())
