#!/usr/bin/python3
"""A test that skipped did not run: fail when a meson test run skipped a
test (exit status 77, "result": "SKIP" in BUILD/meson-logs/testlog.json)
that README.md does not name as expected on CI's machine.

The expected skips are the backquoted test names (`name` or meson's
`project:suite / name`) between README.md's
markers `<!-- BEGIN skips expected on CI -->` and `<!-- END skips expected
on CI -->` (none, today). `.ci/run` runs this after each of its test runs.

usage: no_skips.py BUILD_DIR README.md     exit 0: no unexpected skip, 1: some
       no_skips.py --self-test README.md   proves it catches a skip, and a
                                           named one passes (suite tools)
"""
import json
import os
import re
import sys
import tempfile

BEGIN, END = "<!-- BEGIN skips expected on CI -->", "<!-- END skips expected on CI -->"


def expected_skips(readme):
    text = open(readme).read()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"FAIL: {readme} has no '{BEGIN}' ... '{END}' section")
    return set(re.findall(r"`([^`]+)`", text[text.index(BEGIN) + len(BEGIN):text.index(END)]))


def skipped(build):
    """[(name, the last line of its output)] of every skipped test of the last run in BUILD."""
    path = os.path.join(build, "meson-logs", "testlog.json")
    out = []
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            t = json.loads(line)
            if t.get("result") == "SKIP":
                said = (t.get("stdout") or "").strip().splitlines()
                out.append((t["name"], said[-1] if said else ""))
    return out


def check(build, readme):
    allowed = expected_skips(readme)
    # meson names a test 'project:suite / name'; README.md may give either form.
    unexpected = [(n, why) for n, why in skipped(build) if n not in allowed and n.split(" / ")[-1] not in allowed]
    for name, why in unexpected:
        print(f"FAIL: {build}: test '{name}' skipped (exit 77), which README.md does not name as "
              f"expected on CI: {why}")
    if not unexpected:
        print(f"{build}: no unexpected skip (expected skips named in README.md: {sorted(allowed) or 'none'})")
    return 1 if unexpected else 0


def self_test(readme):
    """A fake build dir with one skip: red; with the skip named in a README: green."""
    with tempfile.TemporaryDirectory() as tmp:
        os.mkdir(os.path.join(tmp, "meson-logs"))
        with open(os.path.join(tmp, "meson-logs", "testlog.json"), "w") as f:
            for name, result in (("rdmasim:net / net", "OK"), ("rdmasim:tools / made-up-skip", "SKIP")):
                f.write(json.dumps({"name": name, "result": result, "returncode": 77 if result == "SKIP" else 0,
                                    "stdout": "SKIP: no such tool\n"}) + "\n")
        named = os.path.join(tmp, "README.md")
        with open(named, "w") as f:
            f.write(f"{BEGIN}\n* `made-up-skip`: why\n{END}\n")
        red, green, real = check(tmp, readme), check(tmp, named), expected_skips(readme)
    if red != 1 or green != 0:
        print(f"FAIL: self-test: a skip gave {red} (want 1), a named skip {green} (want 0)")
        return 1
    print(f"PASS: an unnamed skip fails, a named one passes; README.md names {sorted(real) or 'none'}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    sys.exit(self_test(sys.argv[2]) if sys.argv[1] == "--self-test" else check(sys.argv[1], sys.argv[2]))
