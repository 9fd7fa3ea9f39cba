#!/usr/bin/python3
"""ibv_devinfo and ibv_devices (rdma-core's own tools, unmodified) on rdmasim.

usage: devinfo_test.py RDMASIM
"""
import re
import subprocess
import sys

rdmasim = sys.argv[1]
failures = []
checks = 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")


def run(*args):
    p = subprocess.run([rdmasim, "run", "--devices", "2", "--", *args],
                       capture_output=True, text=True, timeout=60)
    print(f"$ {' '.join(args)}  (exit {p.returncode})\n{p.stdout}{p.stderr}")
    return p


p = run("ibv_devinfo", "-v")
check(p.returncode == 0, "ibv_devinfo exits 0")
out = p.stdout
check(re.search(r"hca_id:\s+rdmasim0", out), "rdmasim0 listed")
check(re.search(r"hca_id:\s+rdmasim1", out), "rdmasim1 listed (--devices 2)")
check(re.search(r"state:\s+PORT_ACTIVE", out), "port PORT_ACTIVE")
check(re.search(r"link_layer:\s+Ethernet", out), "link layer Ethernet")
guid = re.search(r"node_guid:\s+([0-9a-f:]+)", out)
check(guid and guid.group(1).replace(":", "").strip("0") != "", "non-zero node GUID")
check(re.search(r"phys_port_cnt:\s+1", out), "one port")
check(re.search(r"max_qp:\s+[1-9]", out), "max_qp non-zero")
check(re.search(r"GID\[\s*0\]:\s+::ffff:169\.254\.", out), "GID 0: IPv4-mapped, RFC 3927 by default")
check(re.search(r"GID\[\s*1\]:\s+fe80:", out), "GID 1: IPv6 link-local by default")

p = run("ibv_devices")
check(p.returncode == 0, "ibv_devices exits 0")
check(re.search(r"rdmasim0\s+[0-9a-f]{16}", p.stdout), "ibv_devices lists rdmasim0 with its GUID")

# Bad configuration: a clear, specific error, never a crash.
p = subprocess.run([rdmasim, "run", "--set", "caps.pad_align=96", "--", "ibv_devices"],
                   capture_output=True, text=True, timeout=60)
check(p.returncode != 0 and "caps.pad_align" in p.stderr, "bad configuration names the key")

# The same mistake reaching the drop-in library through the environment, as it
# would inside someone else's program: ibv_get_device_list fails and logs why.
import os
env = dict(os.environ)
lib = subprocess.run([rdmasim, "env"], capture_output=True, text=True).stdout
for line in lib.splitlines():
    if line.startswith("export LD_LIBRARY_PATH="):
        env["LD_LIBRARY_PATH"] = line.split("=", 1)[1].strip("'")
env["RDMASIM_DEVICES"] = "0"
p = subprocess.run(["ibv_devices"], capture_output=True, text=True, env=env, timeout=60)
print(f"$ RDMASIM_DEVICES=0 ibv_devices  (exit {p.returncode})\n{p.stdout}{p.stderr}")
check(p.returncode != 0, "ibv_devices fails on a bad RDMASIM_DEVICES")
check("RDMASIM_DEVICES" in p.stderr and "'0'" in p.stderr, "the log names the variable and the value")

print(f"{checks - len(failures)} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
