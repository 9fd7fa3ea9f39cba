#!/usr/bin/python3
"""Exit statuses of every rdmasim subcommand (README.md, "Exit codes").

usage: exit_codes_test.py RDMASIM SAMPLE_PCAP

0 success, 1 a runtime error, 2 a usage error (command line, option or
configuration value), for replay, run, env, config and no subcommand at all;
`rdmasim run` returns the program's status, 128+N when signal N killed it,
127/126 when it cannot be started, passes on a signal sent to rdmasim, and
takes the program with it when rdmasim itself is killed.
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

import checklist
from checklist import check


rdmasim, sample = sys.argv[1:3]


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RDMASIM_")}
    env.update(extra)
    return env


def expect(status, args, env=None, stderr_has=(), stdout_has=()):
    """Runs rdmasim ARGS; checks the status and that stderr/stdout mention the words."""
    p = subprocess.run([rdmasim, *args], capture_output=True, text=True,
                       env=clean_env(**(env or {})), timeout=60)
    label = " ".join(f"{k}={v}" for k, v in (env or {}).items())
    label = (label + " " if label else "") + "rdmasim " + " ".join(args)
    problems = []
    if p.returncode != status:
        problems.append(f"status {p.returncode}, expected {status}")
    problems += [f"stderr does not mention {w!r}" for w in stderr_has if w not in p.stderr]
    problems += [f"stdout does not mention {w!r}" for w in stdout_has if w not in p.stdout]
    if status in (1, 2) and not p.stderr.strip():  # rdmasim's own errors say what went wrong
        problems.append("nothing on stderr")
    check(not problems, f"{status}  {label}",
          "; ".join(problems) + f"\nstderr: {p.stderr.strip()[-600:]!r}")


tmp = tempfile.mkdtemp(prefix="rdmasim-exit-")
missing = os.path.join(tmp, "missing.pcap")
not_exec = os.path.join(tmp, "not-executable")
open(not_exec, "w").close()
bad_toml = os.path.join(tmp, "bad.toml")
with open(bad_toml, "w") as f:
    f.write("burst = 0\n")

# No subcommand, an unknown one, help.
expect(2, [])
expect(2, ["frobnicate"])
expect(2, ["--log-level", "loud", "replay"])
expect(0, ["--help"], stdout_has=("replay", "run", "env", "config"))
expect(0, ["--version"], stdout_has=("rdmasim 0.",))
for sub in ("replay", "run", "env", "config"):
    expect(0, [sub, "--help"])

# replay
expect(0, ["replay", sample, "--json"], stdout_has=('"frames_offered"',))
expect(2, ["replay", "--wqs", "0"])
expect(2, ["replay", "--no-such-option"])
expect(2, ["replay", "--flags", "cvlan,bogus"], stderr_has=("bogus",))
expect(2, ["replay", "--rss-fields", "src-mac"], stderr_has=("src-mac",))
expect(2, ["replay", sample, "--speed", "original", "--engine", "inline"], stderr_has=("--engine thread",))
expect(2, ["replay", sample, "--speed", "fast"], stderr_has=("speed",))
expect(2, ["replay", sample, "--iface", "lo"], stderr_has=("two sources",))
expect(2, ["replay", sample], env={"RDMASIM_BURST": "0"}, stderr_has=("RDMASIM_BURST",))
expect(2, ["replay", sample], env={"RDMASIM_CONFIG": bad_toml}, stderr_has=(bad_toml,))
expect(1, ["replay", missing], stderr_has=(missing,))
expect(1, ["replay", sample], env={"RDMASIM_CONFIG": missing}, stderr_has=(missing,))

# run
expect(0, ["run", "--", "true"])
expect(0, ["run", "--pcap", sample, "--", "ibv_devinfo"], stdout_has=("rdmasim0",))
expect(3, ["run", "--", "sh", "-c", "exit 3"])
expect(2, ["run"])
expect(2, ["run", "--no-such-option", "--", "true"])
expect(2, ["run", "--set", "burst", "--", "true"], stderr_has=("KEY=VALUE",))
expect(2, ["run", "--set", "no_such_key=1", "--", "true"], stderr_has=("no_such_key",))
expect(2, ["run", "--set", "caps.pad_align=7", "--", "true"], stderr_has=("caps.pad_align",))
expect(2, ["run", "--pcap", sample, "--iface", "lo", "--", "true"], stderr_has=("two sources",))
expect(1, ["run", "--pcap", missing, "--", "true"], stderr_has=(missing,))
expect(1, ["run", "--", "true"], env={"RDMASIM_LIBDIR": tmp}, stderr_has=(tmp, "libibverbs.so.1"))
expect(127, ["run", "--", os.path.join(tmp, "no-such-program")], stderr_has=("no-such-program",))
expect(126, ["run", "--", not_exec], stderr_has=(not_exec,))
expect(128 + signal.SIGTERM, ["run", "--", "sh", "-c", "kill -TERM $$"])
expect(128 + signal.SIGSEGV, ["run", "--", "sh", "-c", "kill -SEGV $$"], stderr_has=("Segmentation fault",))

# A signal sent to rdmasim reaches the program; killing rdmasim kills it too.
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
    proc = subprocess.Popen([rdmasim, "run", "--", "sh", "-c", "echo $$; exec sleep 30"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env())
    child = int(proc.stdout.readline())
    proc.send_signal(sig)
    try:
        status = proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        status = None
    check(status == 128 + sig, f"{sig.name} to rdmasim run: the program gets it, status {128 + sig}",
          f"status {status}")
proc = subprocess.Popen([rdmasim, "run", "--", "sh", "-c", "echo $$; exec sleep 30"],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env())
child = int(proc.stdout.readline())
proc.kill()
proc.wait()
deadline = time.monotonic() + 5
while time.monotonic() < deadline and os.path.exists(f"/proc/{child}"):
    time.sleep(0.05)
check(not os.path.exists(f"/proc/{child}") or " Z " in open(f"/proc/{child}/stat").read(),
      "SIGKILL to rdmasim run: the program does not outlive it")

# env
expect(0, ["env", "--pcap", sample], stdout_has=("export RDMASIM_PCAP=",))
expect(2, ["env", "--no-such-option"])
expect(2, ["env", "--set", "engine=warp"], stderr_has=("engine",))
expect(1, ["env", "--pcap", missing], stderr_has=(missing,))

# config
expect(0, ["config", "--reference"], stdout_has=("| `devices` |",))
expect(0, ["config", "--check"], stdout_has=("configuration ok",))
expect(0, ["config", "--check", "--set", "devices=2"], stdout_has=("2 device(s)",))
expect(2, ["config"])
expect(2, ["config", "--reference", "--check"])
expect(2, ["config", "--reference", "--set", "devices=2"])
expect(2, ["config", "--check", "--set", "devices=99"], stderr_has=("devices",))
expect(2, ["config", "--check"], env={"RDMASIM_ENGINE": "warp"}, stderr_has=("RDMASIM_ENGINE",))
expect(1, ["config", "--check"], env={"RDMASIM_CONFIG": missing}, stderr_has=(missing,))

# Every value is checked before the program starts (issue 29, item 8): a
# value that would fail only inside the program is status 2 naming the key,
# the value and the forms the key takes, and the program never starts.
started = os.path.join(tmp, "started")
for key, value, forms in [
        ("wire", "bogus://x", "ptp://PATH, vde://PATH, vxvde://GROUP or shm://PATH"),
        ("wire.1", "tap://tap0", "ptp://PATH, vde://PATH, vxvde://GROUP or shm://PATH"),
        ("wire", "ptp://", "with a socket path"),
        ("wire", "ptp:///" + "x" * 120, "at most 106 bytes"),
        ("iface", "an-interface-name-too-long", "an interface name"),
        ("pcap_live", "eth/0", "an interface name"),
        ("filter", "port fourty", "a BPF expression"),
        ("stats", "out/", "a file name"),
        ("report", tmp + "/", "a file name"),
        ("trace", "out/", "a file name"),
        ("tx_capture", "out/", "a file name")]:
    devices = ["--set", "devices=2"] if key.endswith(".1") else []
    expect(2, ["config", "--check", *devices, "--set", f"{key}={value}"], stderr_has=(f"{key} = '{value}'", forms))
    expect(2, ["run", *devices, "--set", f"{key}={value}", "--", "touch", started],
           stderr_has=(f"{key} = '{value}'", forms))
expect(2, ["run", "--wire", "bogus://x", "--", "touch", started], stderr_has=("wire = 'bogus://x'",))
expect(2, ["run", "--", "touch", started], env={"RDMASIM_WIRE": "bogus://x"}, stderr_has=("RDMASIM_WIRE",))
expect(2, ["run", "--start", "manual", "--", "touch", started], stderr_has=("start = 'manual'",))
missing_dir = os.path.join(tmp, "no-such-dir", "stats.json")
expect(1, ["run", "--stats", missing_dir, "--", "touch", started], stderr_has=("stats", missing_dir))
expect(1, ["config", "--check", "--set", f"report={missing_dir}"], stderr_has=("report", missing_dir))
expect(1, ["run", "--pcap", tmp, "--", "touch", started], stderr_has=(tmp, "a directory"))
check(not os.path.exists(started), "no refused configuration started the program")

os.remove(not_exec)
os.remove(bad_toml)
os.rmdir(tmp)
checklist.finish()
