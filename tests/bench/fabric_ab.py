#!/usr/bin/python3
"""Two rdmasim builds side by side on one wire kind, the builds alternating
turn by turn so both see the same machine: fabric_bench.py's perftest runs
(ib_write_bw / ib_read_bw -s 65536, ib_send_lat -s 8, RC, two programs).

usage: fabric_ab.py BASE_RDMASIM NEW_RDMASIM TURNS [WIRE [PROGRAM ...]]
  WIRE     ptp (default) or shm
  PROGRAM  write_bw, read_bw, send_lat (default: all three)
e.g.   cp -a build /tmp/build-base   # before the change, then rebuild build
       tests/bench/fabric_ab.py /tmp/build-base/tools/rdmasim build/tools/rdmasim 6 ptp write_bw read_bw

Prints each turn's figures, then per build and program the median and
every run (MB/s, or typical and 99% us). A failed run counts as nan.
"""
import math
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fabric_bench  # noqa: E402


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__.strip())
    base, new, turns = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), int(sys.argv[3])
    wire = sys.argv[4] if len(sys.argv) > 4 else "ptp"
    programs = sys.argv[5:] or list(fabric_bench.PROGRAMS)
    runs = {}
    with tempfile.TemporaryDirectory(prefix="fabric-ab-") as tmp:
        for turn in range(turns):
            order = [("base", base), ("new", new)]
            if turn % 2:
                order.reverse()
            for program in programs:
                for name, rdmasim in order:
                    v = fabric_bench.perftest(rdmasim, tmp, wire, program, f"{name}{turn}")
                    fields = ("MBps",) if program.endswith("_bw") else ("typical_us", "p99_us")
                    for field in fields:
                        runs.setdefault((program, field, name), []).append(v.get(field, math.nan))
            print(f"turn {turn + 1} of {turns}: " +
                  ", ".join(f"{p}.{f}.{n} {v[-1]:.1f}" for (p, f, n), v in sorted(runs.items())), flush=True)
    for (program, field, name), v in sorted(runs.items()):
        ok = [x for x in v if not math.isnan(x)]
        med = statistics.median(ok) if ok else math.nan
        print(f"{wire} {program} {field} {name}: median {med:.2f}, runs {[round(x, 1) for x in v]}")


if __name__ == "__main__":
    main()
