#!/usr/bin/python3
"""rdma-core's own test suite (shipped in python3-pyverbs) on rdmasim0.

Runs every test of the files below under `rdmasim run` and compares each
outcome with the one checked in beside this script, rdma_core_expected.txt:
one line per test, `TEST_ID ok` or `TEST_ID skip REASON` (the suite's own
skip text: what rdmasim does not emulate). Any difference fails the run and is
printed: a test that passed and now skips or fails, a skip whose reason
changed, a skip that now passes (update the file), a test the file does not
know. Prints a count per file.

Every vendor-neutral file runs (all test_*.py but the mlx5, efa and cuda
ones). The suite's huge-page tests need 2 MiB pages reserved: as root the
script reserves HUGE_PAGES more for the run where fewer are free, and
gives them back after; without them (not root, or the kernel found no
memory) those tests are expected to skip with the suite's reason instead
of passing, and the script says so. With TEST_ID_SUBSTRINGs only the matching tests run (and are
compared). `--write` rewrites the file from the run (every test, no
substring): review its diff.

usage: rdma_core_suite.py RDMASIM [--write] [TEST_ID_SUBSTRING ...]
"""
import collections
import contextlib
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile

SUITE = "/usr/share/doc/rdma-core/tests"
# Every vendor-neutral file: all test_*.py but the mlx5, efa and cuda ones.
VENDOR = ("test_mlx5", "test_efa", "test_cuda")
# 2 MiB pages the run needs free (the three huge-page tests map a few each).
HUGE_PAGES = 16
NO_HUGE = "There are no huge pages of size 2M allocated"  # the suite's skip reason
NR_HUGEPAGES = "/proc/sys/vm/nr_hugepages"
NO_NETDEV = "Device rdmasim0 doesn't have net interface"  # the suite's skip reason
IP = "10.0.0.1"  # the device's and its interface's address in the namespace
EXPECTED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rdma_core_expected.txt")
HEADER = """\
# The outcome of every test of rdma-core's suite on rdmasim0
# (tests/clients/rdma_core_suite.py compares each run with this file).
# One test a line, tab-separated: TEST_ID, then ok | skip REASON.
# skip REASON is the suite's own text.
# Rewrite with: /usr/bin/python3 tests/clients/rdma_core_suite.py build/tools/rdmasim --write
"""


def load_expected(path):
    """{test id: (outcome, reason)} from the checked-in file."""
    expected = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            fields = line.split("\t")
            if fields[1:2] == ["ok"] and len(fields) == 2:
                expected[fields[0]] = ("ok", "")
            elif fields[1:2] == ["skip"] and len(fields) == 3:
                expected[fields[0]] = (fields[1], fields[2])
            else:
                raise SystemExit(f"{path}:{n}: not 'TEST_ID<tab>ok' or '...<tab>skip<tab>REASON': {line!r}")
    return expected


def write_expected(path, outcomes):
    with open(path, "w") as f:
        f.write(HEADER)
        for t in sorted(outcomes):
            kind, reason = outcomes[t]
            f.write(f"{t}\t{kind}\t{reason}\n" if reason else f"{t}\t{kind}\n")


def describe(outcome):
    kind, reason = outcome
    return f"{kind} {reason!r}" if reason else kind


def free_huge_pages():
    """Free 2 MiB huge pages (0 where the default size is another)."""
    info = {}
    with open("/proc/meminfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            info[key] = value.split()
    if info.get("Hugepagesize") != ["2048", "kB"]:
        return 0
    return int(info.get("HugePages_Free", ["0"])[0])


@contextlib.contextmanager
def huge_pages():
    """Yields whether HUGE_PAGES 2 MiB pages are free for the run, after
    reserving what is missing where it may (root); the reservation is
    given back on the way out, whatever happened in between."""
    before = None
    try:
        missing = HUGE_PAGES - free_huge_pages()
        if missing > 0 and os.geteuid() == 0:
            with open(NR_HUGEPAGES) as f:
                before = int(f.read())
            with open(NR_HUGEPAGES, "w") as f:
                f.write(str(before + missing))
    except OSError as e:
        print(f"huge pages: cannot reserve {HUGE_PAGES} ({e})")
    try:
        yield free_huge_pages() >= HUGE_PAGES
    finally:
        if before is not None:
            with open(NR_HUGEPAGES, "w") as f:
                f.write(str(before))


@contextlib.contextmanager
def net_interface():
    """Yields the command prefix that runs a program in a network namespace
    whose veth end holds IP (root), or None where none can be made. The
    namespace, and with it the veth pair, is deleted on the way out."""
    ns, made = f"rdmasim-suite-{os.getpid()}", False
    ip = lambda *a: subprocess.run(["ip", *a], capture_output=True, text=True)
    try:
        if os.geteuid() == 0 and ip("netns", "add", ns).returncode == 0:
            made = True
            steps = [("netns", "exec", ns, "ip", "link", "add", "rds0", "type", "veth", "peer", "name", "rds1"),
                     ("netns", "exec", ns, "ip", "addr", "add", f"{IP}/24", "dev", "rds0"),
                     ("netns", "exec", ns, "ip", "link", "set", "rds1", "up"),
                     ("netns", "exec", ns, "ip", "link", "set", "rds0", "up"),
                     ("netns", "exec", ns, "ip", "link", "set", "lo", "up")]
            failed = [r.stderr.strip() for r in (ip(*s) for s in steps) if r.returncode != 0]
            if failed:
                print(f"network namespace: {failed[0]}")
        yield ["ip", "netns", "exec", ns] if made and not failed else None
    finally:
        if made:
            ip("netns", "del", ns)


def unpack(dst):
    """The suite ships gzipped: unpack a private copy as the package `tests`."""
    pkg = os.path.join(dst, "tests")
    os.mkdir(pkg)
    for name in os.listdir(SUITE):
        src = os.path.join(SUITE, name)
        if name.endswith(".gz"):
            with gzip.open(src, "rb") as fin, open(os.path.join(pkg, name[:-3]), "wb") as fout:
                shutil.copyfileobj(fin, fout)
        elif os.path.isfile(src):
            shutil.copy(src, pkg)
    return pkg


def main():
    args = sys.argv[1:]
    write = "--write" in args
    args = [a for a in args if a != "--write"]
    if not args or (write and len(args) > 1):
        print(__doc__)
        return 2
    rdmasim, only = os.path.abspath(args[0]), args[1:]
    expected = load_expected(EXPECTED)
    if not os.path.isdir(SUITE):
        print(f"FAIL: {SUITE} missing (package python3-pyverbs)")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        pkg = unpack(tmp)
        runner = os.path.join(pkg, "run_tests.py")
        # -W: the suite's own DeprecationWarnings (float arguments to randrange
        # in the DM tests) would land between a test's name and its verdict.
        base = [rdmasim, "run", "--", "/usr/bin/python3", "-W", "ignore::DeprecationWarning",
                runner, "--dev", "rdmasim0"]
        listing = subprocess.run(base + ["--list-tests"], capture_output=True, text=True,
                                 timeout=300, cwd=tmp)
        if listing.returncode != 0:
            print(listing.stdout, listing.stderr)
            print("FAIL: the suite does not load")
            return 1
        ids = [t for t in listing.stdout.split() if t.startswith("tests.")
               and not t.split(".")[1].startswith(VENDOR)]
        if only:
            ids = [t for t in ids if any(o in t for o in only)]
        chosen = ids
        if not chosen:
            print("FAIL: no test selected")
            return 1
        with huge_pages() as huge, net_interface() as netns:
            print(f"huge pages: {HUGE_PAGES} of 2 MiB free for the run" if huge else
                  f"huge pages: fewer than {HUGE_PAGES} free (not root?): the suite's huge-page "
                  f"tests skip ({NO_HUGE!r}), as expected then")
            print(f"network interface: {IP} on a veth in a namespace of the run's own" if netns else
                  f"network interface: none (not root?): the suite's rdma_cm tests skip "
                  f"({NO_NETDEV!r}), as expected then")
            proc = subprocess.run((netns or []) + base + ["-v"] + chosen, capture_output=True, text=True,
                                  timeout=1800, cwd=tmp, env=dict(os.environ, RDMASIM_IP=IP))
    out = proc.stderr + proc.stdout
    results = collections.defaultdict(collections.Counter)
    bad = []
    skips = []
    outcomes = {}
    for m in re.finditer(r"^(\w+) \((tests\.(\w+)\.[\w.]+)\)(?:\n[^\n]*)?? \.\.\. (ok|skipped.*|FAIL|ERROR|expected failure|unexpected success)$",
                         out, re.MULTILINE):
        name, full, module, verdict = m.group(1), m.group(2), m.group(3), m.group(4)
        kind = verdict.split()[0].lower().rstrip(":")
        kind = {"ok": "passed", "skipped": "skipped", "fail": "failed", "error": "errors"}.get(kind, kind)
        results[module][kind] += 1
        if kind in ("failed", "errors"):
            bad.append(f"{full}: {verdict}")
        elif kind == "skipped":
            skips.append(f"{full}: {verdict[len('skipped'):].strip()}")
        reason = verdict[len("skipped"):].strip() if kind == "skipped" else ""
        if len(reason) >= 2 and reason[0] == reason[-1] and reason[0] in "'\"":
            reason = reason[1:-1]  # unittest prints the reason's repr
        outcomes[full] = {"passed": ("ok", ""), "skipped": ("skip", reason)}.get(kind, (verdict, ""))
    for module in sorted(results):
        c = results[module]
        print(f"{module:20s} passed {c['passed']:3d}  skipped {c['skipped']:3d}  "
              f"failed {c['failed']:3d}  errors {c['errors']:3d}")
    counted = sum(sum(c.values()) for c in results.values())
    summary = re.search(r"^Ran (\d+) tests?", out, re.MULTILINE)
    ran = int(summary.group(1)) if summary else -1
    if ran != counted or bad or proc.returncode != 0:
        tail = "\n".join(out.splitlines()[-150:])
        print(f"--- suite output (last lines) ---\n{tail}")
        for b in bad:
            print(f"FAIL: {b}")
        if ran != counted:
            print(f"FAIL: unittest ran {ran} tests, {counted} verdicts parsed")
    for sk in skips:
        print(f"skipped: {sk}")
    passed = sum(c["passed"] for c in results.values())
    skipped = sum(c["skipped"] for c in results.values())
    failed = sum(c["failed"] + c["errors"] for c in results.values()) + (ran != counted)
    print(f"{passed} ok, {skipped} skipped, {failed} failed")
    # A class skipped or failed in setUpClass: its tests have that verdict.
    for t in chosen:
        cls = t.rsplit(".", 1)[0]
        if t not in outcomes and cls in outcomes:
            outcomes[t] = outcomes[cls]
    for t in list(outcomes):
        if t not in ids:
            del outcomes[t]
    if write:
        write_expected(EXPECTED, outcomes)
        print(f"wrote {EXPECTED}: {len(outcomes)} tests")
        return 1 if failed or proc.returncode != 0 else 0
    # Every test against rdma_core_expected.txt.
    differences = []
    for t in sorted(set(ids) | (set() if only else set(expected))):
        want, got = expected.get(t), outcomes.get(t)
        if not huge and want == ("ok", "") and got == ("skip", NO_HUGE):
            continue  # a huge-page test on a run without them
        if not netns and want == ("ok", "") and got == ("skip", NO_NETDEV):
            continue  # an rdma_cm test on a run without an interface
        if want is None:
            differences.append(f"{t}: not in {os.path.basename(EXPECTED)}, got {describe(got or ('no verdict', ''))}")
        elif got is None:
            differences.append(f"{t}: expected {describe(want)}, "
                               f"{'no verdict' if t in ids else 'not in the suite any more'}")
        elif got != want:
            differences.append(f"{t}: expected {describe(want)}, got {describe(got)}")
    if differences:
        print(f"--- {len(differences)} differences from {EXPECTED} ---")
        for d in differences:
            print(f"DIFFERENT: {d}")
        print("FAIL: outcomes differ from the expected ones (a skip that now passes: update the file)")
        return 1
    print(f"every outcome as expected ({len(outcomes)} tests, {os.path.basename(EXPECTED)})")
    return 1 if failed or proc.returncode != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
