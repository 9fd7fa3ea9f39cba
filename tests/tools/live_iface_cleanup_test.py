#!/usr/bin/python3
"""live_iface_test.py leaves nothing behind when `ip netns exec` fails.

Runs live_iface_test.py with an `ip` first on its PATH that passes every
command to the real one except `ip netns exec`, which it breaks:
  fail         every exec fails: exit 77 (skip) with a message saying the
               namespace cannot be entered;
  fail-sysctl  only the exec of sysctl fails, after the veth pair exists:
               exit 1 (a failure, not a skip);
  hang         the exec hangs; the test gets SIGTERM (what meson's timeout
               sends): it exits, killing the hung exec.
After each, the test's namespace (`ip netns list`, /run/netns/rdmasim-PID)
and its veth end (rsl<PID>h) must be gone.

usage: live_iface_cleanup_test.py RDMASIM LIVE_IFACE_TEST
Exit 0 when all holds, 1 otherwise, 77 (skip) without root.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

SHIM = """#!/bin/bash
# ip, except that `ip netns exec` breaks as MODE says.
if [ "$1" = netns ] && [ "$2" = exec ]; then
  case "$SHIM_MODE" in
    fail) echo "setting the network namespace failed: Operation not permitted (test shim)" >&2; exit 1 ;;
    fail-sysctl) if [ "$4" = sysctl ]; then echo "sysctl in the namespace failed (test shim)" >&2; exit 1; fi ;;
    hang) touch "$SHIM_MARK"; exec sleep 120 ;;
  esac
fi
exec {real} "$@"
"""

failures = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what, flush=True)
    if not ok:
        failures.append(what)


def leftovers(pid):
    ns, host = f"rdmasim-{pid}", f"rsl{pid}h"
    found = []
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    if ns in listed or os.path.exists(f"/run/netns/{ns}"):
        found.append(f"namespace {ns}")
    if subprocess.run(["ip", "link", "show", host], capture_output=True).returncode == 0:
        found.append(f"interface {host}")
    return found


def scrub(pid):
    subprocess.run(["ip", "link", "del", f"rsl{pid}h"], capture_output=True)
    subprocess.run(["ip", "netns", "del", f"rdmasim-{pid}"], capture_output=True)


def run_mode(rdmasim, test, shim_dir, mode):
    env = dict(os.environ, PATH=shim_dir + os.pathsep + os.environ.get("PATH", ""), SHIM_MODE=mode,
               SHIM_MARK=os.path.join(shim_dir, "hung"))
    p = subprocess.Popen(["/usr/bin/python3", test, rdmasim], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    if mode == "hang":
        deadline = time.monotonic() + 60
        while not os.path.exists(env["SHIM_MARK"]) and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.05)
        p.terminate()
    try:
        out, _ = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
    print(f"--- {mode}: status {p.returncode}\n{out.strip()}", flush=True)
    left = leftovers(p.pid)
    check(not left, f"{mode}: nothing left behind (found: {left})")
    scrub(p.pid)
    return p.returncode, out


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    rdmasim, test = sys.argv[1:]
    if os.geteuid() != 0:
        print("SKIP: needs root (it makes network namespaces)")
        return 77
    real = shutil.which("ip")
    if real is None:
        print("SKIP: no ip (iproute2)")
        return 77
    with tempfile.TemporaryDirectory(prefix="rdmasim-ipshim-") as shim_dir:
        with open(os.path.join(shim_dir, "ip"), "w") as f:
            f.write(SHIM.format(real=real))
        os.chmod(os.path.join(shim_dir, "ip"), 0o755)

        status, out = run_mode(rdmasim, test, shim_dir, "fail")
        check(status == 77, f"fail: exit 77 (skip), got {status}")
        check("SKIP: cannot enter the network namespace" in out and "test shim" in out,
              "fail: the skip says the namespace cannot be entered, with ip's message")
        check("Traceback" not in out, "fail: no traceback")

        status, out = run_mode(rdmasim, test, shim_dir, "fail-sysctl")
        check(status not in (0, 77), f"fail-sysctl: a failure, not a pass or a skip (got {status})")
        check("sysctl in the namespace failed" in out, "fail-sysctl: the failing command's message")

        status, out = run_mode(rdmasim, test, shim_dir, "hang")
        check(status not in (0, 77), f"hang + SIGTERM: a failure (got {status})")
    print(f"{'FAIL' if failures else 'PASS'}: {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
