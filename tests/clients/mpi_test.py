#!/usr/bin/python3
"""Issue 33, acceptance 1: Open MPI over UCX, 4 ranks as 4 hosts on one wire.

usage: mpi_test.py RDMASIM MPI_CHECK [--user UID:GID]

One `rdmasim run --wire shm://DIR/sock --set ip=10.0.0.1 -- mpirun -np 4
--mca pml ucx MPI_CHECK` (tests/examples/mpi_check.c: ping-pong from 1 B to
4 MiB, allreduce, alltoall, every byte checked). Debian's Open MPI turns
UCX off in /etc/openmpi/openmpi-mca-params.conf (`pml = ^ucx`), so
`--mca pml ucx` asks for it, as a user of UCX does; UCX itself runs with
stock settings. Checks for each run: mpirun exits 0, the program prints
"mpi_check: OK ranks=4", and every rank wrote its own --stats file
(STEM.rankR.json) with its own address, 10.0.0.1 + R (sim/README.md,
"Ranks"), though the environment sets one.

Three runs: UCX as it comes (on one machine it moves the bulk through its
shared-memory transports, and still opens rdmasim0), and with UCX_TLS set
to `rc_v,self` and to `ud_v,self` so that every message crosses the wire:
there each rank's RoCE counters must show frames sent and received, none
dropped. --user runs mpirun as that user (setpriv). Exit 0 when all holds.
"""

import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from two_hosts import Checks, Program, as_user, roce_problems, summary, user_option  # noqa: E402

RANKS = 4
TIMEOUT = 240
check = Checks()


def stats_of(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def run(rdmasim, mpi_check, tmp, tag, tls, user):
    d = os.path.join(tmp, tag)
    os.makedirs(d, mode=0o700)
    root_flag = ["--allow-run-as-root"] if os.geteuid() == 0 and user is None else []
    if user is not None:
        os.chown(d, *user)
    ucx = ["-x", f"UCX_TLS={tls}"] if tls else []
    cmd = [*as_user(user), rdmasim, "run", "--wire", f"shm://{d}/sock", "--set", "ip=10.0.0.1",
           "--stats", f"{d}/st.json", "--", "mpirun", *root_flag, "--oversubscribe", "-np", str(RANKS),
           "--mca", "pml", "ucx", *ucx, mpi_check]
    os.environ["TMPDIR"] = d  # Open MPI's session directory: the user's own
    p = Program(f"mpirun ({tag})", cmd)
    rc = p.finish(TIMEOUT)
    what = f"UCX_TLS={tls or '(stock)'}"
    check(rc == 0, f"{what}: mpirun exits 0", p.show())
    check(f"mpi_check: OK ranks={RANKS}" in p.stdout, f"{what}: every byte checked on {RANKS} ranks", p.show())
    print(p.stdout, end="")
    for r in range(RANKS):
        doc = stats_of(os.path.join(d, f"st.rank{r}.json"))
        if not check(doc is not None, f"{what}: rank {r} wrote st.rank{r}.json"):
            continue
        ip = doc["devices"][0]["addresses"]["ipv4"]
        check(ip == f"10.0.0.{1 + r}", f"{what}: rank {r} has address 10.0.0.{1 + r}", f"it has {ip}")
        if tls:
            bad = roce_problems(f"rank {r}", doc)
            check(not bad, f"{what}: rank {r}'s RoCE counters", "\n".join(bad))
            print(f"  rank {r}: {summary(doc)}")


def main():
    user, args = user_option(sys.argv[1:])
    if len(args) != 2:
        print(__doc__)
        return 2
    rdmasim, mpi_check = os.path.abspath(args[0]), os.path.abspath(args[1])
    for k in [k for k in os.environ if k.startswith(("UCX_", "RDMASIM_"))]:
        del os.environ[k]
    with tempfile.TemporaryDirectory(prefix="mpi-") as tmp:
        os.chmod(tmp, 0o711)
        for tag, tls in (("stock", None), ("rc", "rc_v,self"), ("ud", "ud_v,self")):
            print(f"== {tag}", flush=True)
            run(rdmasim, mpi_check, tmp, tag, tls, user)
    return check.report(f" ({'as uid ' + str(user[0]) if user else 'as ' + str(os.geteuid())})")


if __name__ == "__main__":
    sys.exit(main())
