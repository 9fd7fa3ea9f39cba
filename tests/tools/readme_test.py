#!/usr/bin/python3
"""Every command in README.md's shell blocks runs, as written, from the source root.

usage: readme_test.py SOURCE_ROOT BUILD_DIR

The README's commands name `build/` (the default build directory), so the test
runs only when BUILD_DIR is SOURCE_ROOT/build (else it skips, exit 77). Each
```sh or ```bash block is one bash script, run with `set -eo pipefail` from the
source root, except that:
* a line `.ci/run` runs verbatim (the test suite itself, the sanitizer and fuzz
  runs, the release build) is not run again here: CI runs it on every commit,
  and running `tools/dev test` from inside the suite would recurse;
* a block that prints `echo "status $?"` documents exit codes: it runs without
  `-e`, and every `# status N` comment must match the status printed;
* a block with `# terminal N` comments is N programs run side by side, as a
  person would: each terminal's last command starts in the background, the
  next terminal once it has printed a line beginning with `ready` (the last
  one may also have ended); when all have, each gets an Enter on its
  standard input (a program held at "ready" goes on);
* a block that creates a network namespace needs root: without it the block is
  skipped with a note; its `ip ... del` lines run again at the end, whatever
  happened.
Files the commands leave at the top of the source tree (sent.pcap, run1.jsonl,
...) are removed at the end; what they write under build*/ stays.
"""

import os
import re
import shutil
import subprocess
import sys
import threading
import time

TIMEOUT = 600
FENCE = re.compile(r"^```(sh|bash)\s*$")


def blocks(readme):
    """(first line number, [lines]) of each sh/bash block."""
    out, cur, start = [], None, 0
    for n, line in enumerate(readme.splitlines(), 1):
        if cur is None:
            if FENCE.match(line):
                cur, start = [], n + 1
        elif line.startswith("```"):
            out.append((start, cur))
            cur = None
        else:
            cur.append(line)
    return out


def command_of(line):
    """The line without its trailing comment and spaces (quotes respected roughly)."""
    s = line.strip()
    if s.startswith("#"):
        return ""
    return re.sub(r"\s+#\s.*$", "", s).strip()


class Run:
    def __init__(self, root):
        self.root = root
        self.checks = self.failures = 0
        with open(os.path.join(root, ".ci/run")) as f:
            self.ci = {command_of(l) for l in f if command_of(l)}

    def check(self, ok, what):
        self.checks += 1
        if not ok:
            self.failures += 1
        print(("ok:   " if ok else "FAIL: ") + what, flush=True)

    def bash(self, script, errexit=True, timeout=TIMEOUT):
        head = "set -eo pipefail\n" if errexit else ""
        return subprocess.run(["bash", "-c", head + script], cwd=self.root, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)

    def strip_ci(self, start, lines):
        """The block with the lines .ci/run runs commented out."""
        out = []
        for i, line in enumerate(lines):
            cmd = command_of(line)
            if cmd and cmd in self.ci:
                print(f"note: README.md:{start + i}: `{cmd}` is run by .ci/run, not again here")
                out.append("# (run by .ci/run) " + line)
            else:
                out.append(line)
        return out

    def plain(self, where, lines):
        p = self.bash("\n".join(lines))
        self.check(p.returncode == 0, f"{where}: exit status {p.returncode}"
                   + ("" if p.returncode == 0 else "\n" + p.stdout[-4000:]))

    def statuses(self, where, lines):
        want = [int(m.group(1)) for l in lines for m in [re.search(r"#\s*status (\d+)", l)] if m]
        p = self.bash("\n".join(lines), errexit=False)
        got = [int(x) for x in re.findall(r"^status (\d+)$", p.stdout, re.M)]
        self.check(want and got == want, f"{where}: statuses {got}, documented {want}"
                   + ("" if got == want else "\n" + p.stdout[-4000:]))

    def terminals(self, where, lines):
        parts, cur = [], None
        for line in lines:
            if re.match(r"\s*#\s*terminal \d+", line):
                cur = []
                parts.append(cur)
            elif cur is not None and command_of(line):
                cur.append(line)
        procs = []
        try:
            for i, part in enumerate(parts):
                for line in part[:-1]:
                    p = self.bash(line)
                    self.check(p.returncode == 0, f"{where}: terminal {i + 1}: `{line}`")
                proc = subprocess.Popen(["bash", "-c", part[-1]], cwd=self.root, text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT)
                lines_seen, ready = [], threading.Event()

                def pump(proc=proc, seen=lines_seen, ready=ready):
                    for l in proc.stdout:
                        seen.append(l)
                        if l.startswith("ready"):
                            ready.set()
                    ready.set()  # ended: do not wait for it any longer

                threading.Thread(target=pump, daemon=True).start()
                procs.append((i + 1, proc, lines_seen))
                # The last terminal may have finished already: no terminal waits for it
                # (its exit status is checked below).
                last = i == len(parts) - 1
                self.check(ready.wait(60) and (last or proc.poll() is None), f"{where}: terminal {i + 1} is ready")
            for _, proc, _ in procs:  # Enter in every terminal
                try:
                    proc.stdin.write("\n")
                    proc.stdin.close()
                except (BrokenPipeError, OSError):
                    pass
            for n, proc, seen in procs:
                rc = proc.wait(timeout=TIMEOUT)
                time.sleep(0.1)  # the pump thread's last lines
                self.check(rc == 0, f"{where}: terminal {n} exits with {rc}"
                           + ("" if rc == 0 else "\n" + "".join(seen)[-4000:]))
        finally:
            for _, proc, _ in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()

    def namespaces(self, where, lines):
        if os.geteuid() != 0:
            print(f"SKIP: {where}: creates a network namespace, needs root")
            return
        cleanup = [l for l in lines if re.match(r"\s*ip (-n \S+ )?(link|netns) del", l)]
        try:
            self.plain(where, lines)
        finally:
            for line in cleanup:
                for cmd in command_of(line).split(";"):
                    subprocess.run(["bash", "-c", cmd + " 2>/dev/null"], cwd=self.root)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    root = os.path.realpath(sys.argv[1])
    build = os.path.realpath(sys.argv[2])
    if build != os.path.join(root, "build"):
        print(f"SKIP: the README's commands use build/, this build is {build}")
        return 77
    with open(os.path.join(root, "README.md")) as f:
        found = blocks(f.read())
    run = Run(root)
    before = set(os.listdir(root))
    try:
        for start, lines in found:
            where = f"README.md:{start}"
            body = run.strip_ci(start, lines)
            if not any(command_of(l) for l in body):
                continue
            text = "\n".join(body)
            t0 = time.monotonic()
            if 'echo "status $?"' in text:
                run.statuses(where, body)
            elif re.search(r"^\s*#\s*terminal \d+", text, re.M):
                run.terminals(where, body)
            elif re.search(r"^\s*ip netns add", text, re.M):
                run.namespaces(where, body)
            else:
                run.plain(where, body)
            print(f"      ({time.monotonic() - t0:.1f} s)")
    finally:
        for name in sorted(set(os.listdir(root)) - before):
            if name.startswith("build"):
                continue
            path = os.path.join(root, name)
            print(f"note: removing {name}, left by the README's commands")
            shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.remove(path)
    run.check(len(found) >= 10, f"{len(found)} shell blocks found in README.md")
    print(f"{run.checks - run.failures} passed, {run.failures} failed")
    return 1 if run.failures else 0


if __name__ == "__main__":
    sys.exit(main())
