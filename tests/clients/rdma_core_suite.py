#!/usr/bin/python3
"""rdma-core's own test suite (shipped in python3-pyverbs) on rdmasim0.

Runs every test of the files below under `rdmasim run`. A test must pass,
or skip for a feature that is honestly absent (EOPNOTSUPP); a failure or an
error fails this script. Prints a count per file.

Every vendor-neutral file runs (all test_*.py but the mlx5, efa and cuda
ones). DEFERRED tests are not run, and are listed with the reason. Each
skipped test is printed with the suite's reason (what rdmasim does not
emulate).

usage: rdma_core_suite.py RDMASIM [TEST_ID_SUBSTRING ...]
"""
import collections
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
DEFERRED = {
    "tests.test_shared_pd.SharedPDTestCase.test_imported_rc_ex_rdma_write":
        "ibv_import_device needs the kernel's cmd_fd (a context here has none: cmd_fd -1)",
}


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
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    rdmasim, only = os.path.abspath(sys.argv[1]), sys.argv[2:]
    if not os.path.isdir(SUITE):
        print(f"FAIL: {SUITE} missing (package python3-pyverbs)")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        pkg = unpack(tmp)
        runner = os.path.join(pkg, "run_tests.py")
        base = [rdmasim, "run", "--", "/usr/bin/python3", runner, "--dev", "rdmasim0"]
        listing = subprocess.run(base + ["--list-tests"], capture_output=True, text=True,
                                 timeout=300, cwd=tmp)
        if listing.returncode != 0:
            print(listing.stdout, listing.stderr)
            print("FAIL: the suite does not load")
            return 1
        ids = [t for t in listing.stdout.split() if t.startswith("tests.")]
        chosen = [t for t in ids if not t.split(".")[1].startswith(VENDOR) and t not in DEFERRED]
        for t in ids:
            if t in DEFERRED:
                print(f"deferred: {t}: {DEFERRED[t]}")
        if only:
            chosen = [t for t in chosen if any(o in t for o in only)]
        if not chosen:
            print("FAIL: no test selected")
            return 1
        proc = subprocess.run(base + ["-v"] + chosen, capture_output=True, text=True,
                              timeout=1800, cwd=tmp)
    out = proc.stderr + proc.stdout
    results = collections.defaultdict(collections.Counter)
    bad = []
    skips = []
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
    return 1 if failed or proc.returncode != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
