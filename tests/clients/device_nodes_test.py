#!/usr/bin/python3
"""`rdmasim run`'s device nodes: UCX lists the devices, the host stays as it was.

usage: /usr/bin/python3 tests/clients/device_nodes_test.py RDMASIM

  * `ucx_info -d` under `rdmasim run` lists "Memory domain: rdmasim0" with
    rc_verbs and ud_verbs, as root and as an ordinary user (uid 65534, a
    user namespace); with `--device-nodes off` it does not;
  * afterwards the host's /dev and /sys/class hold what they held (no
    /dev/infiniband, /sys/class/infiniband made where there was none);
  * inside, the sysfs files read back as README.md says, /dev/pts, /dev/shm
    (the host's: a file made inside shows outside) and /sys/class/net work;
  * in a network namespace of the test's own whose veth holds the device's
    `ip`: device/net/IFNAME, gid_attrs/ndevs/0 and `ip -j addr show IFNAME`
    (what rdma-core's tests read) name it; without such an interface there
    is no device/net;
  * a process holding a capability as an ordinary user cannot get a user
    namespace without losing it: `auto` says so in one line and runs the
    program, `on` fails with status 1 and runs nothing.

Exit 0 when all hold, 1 otherwise; 77 (skip) without root, ucx_info or iproute2.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
IP = "10.77.0.1"
# Runs inside `rdmasim run`: every file of the emulated sysfs and what the
# rest of /dev and /sys looks like, as JSON.
READER = r"""
import json, os, subprocess, sys
out = {"files": {}, "links": {}}
for top in ("/sys/class/infiniband", "/sys/class/infiniband_verbs"):
    for d, dirs, files in os.walk(top):
        for f in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
            p = os.path.join(d, f)
            if os.path.islink(p):
                out["links"][p] = os.path.realpath(p)
            else:
                out["files"][p] = open(p).read()
st = os.stat("/dev/infiniband/uverbs-rdmasim0")
import stat
out["chr"] = stat.S_ISCHR(st.st_mode) and os.access("/dev/infiniband/uverbs-rdmasim0", os.R_OK | os.W_OK)
out["pts"] = os.listdir("/dev/pts")
out["net"] = sorted(os.listdir("/sys/class/net"))
open(os.path.join("/dev/shm", sys.argv[1]), "w").write("inside")
out["uid"] = os.getuid()
if os.path.isdir("/sys/class/infiniband/rdmasim0/device/net"):
    name = os.listdir("/sys/class/infiniband/rdmasim0/device/net")[0]
    addr = json.loads(subprocess.check_output(["ip", "-j", "addr", "show", name]))
    out["ip_of_net"] = addr[0]["addr_info"][0]["local"]
print(json.dumps(out))
"""


class Checks:
    def __init__(self):
        self.failures = []

    def __call__(self, ok, what, detail=""):
        print(("ok: " if ok else "FAIL: ") + what)
        if not ok:
            self.failures.append(what)
            print(detail)


def host_state():
    """What the host's /dev and /sys/class hold, and its mounts' count."""
    return {"dev": sorted(os.listdir("/dev")), "class": sorted(os.listdir("/sys/class")),
            "mounts": len(open("/proc/self/mountinfo").read().splitlines())}


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    return p.returncode, p.stdout, p.stderr


def lists_rdmasim0(out):
    """Whether ucx_info -d shows rdmasim0's memory domain with rc_verbs and ud_verbs."""
    section = out.split("Memory domain: rdmasim0", 1)
    if len(section) < 2:
        return False
    body = section[1].split("Memory domain:", 1)[0]
    return "Transport: rc_verbs" in body and "Transport: ud_verbs" in body


def readable_copy(rdmasim, tmp):
    """An rdmasim and its library directory uid 65534 can read: the build's
    own when it can, else copies in `tmp` (RDMASIM_LIBDIR names the copy)."""
    libdir = os.path.join(os.path.dirname(os.path.dirname(rdmasim)), "sim")
    probe = ["test", "-x", rdmasim, "-a", "-r", os.path.join(libdir, "libibverbs.so.1")]
    if subprocess.run(NOBODY + probe).returncode == 0:
        return rdmasim, {}
    print(f"note: {rdmasim} is not readable by uid 65534; running copies from {tmp}")
    os.chmod(tmp, 0o755)
    shutil.copy(rdmasim, tmp)
    lib = os.path.join(tmp, "lib")
    os.mkdir(lib)
    for name in os.listdir(libdir):
        if name.startswith(("libibverbs.so", "librdmacm.so")):
            shutil.copy(os.path.join(libdir, name), lib, follow_symlinks=True)
    return os.path.join(tmp, "rdmasim"), {"RDMASIM_LIBDIR": lib}


def check_ucx(rdmasim, check, tmp):
    rc, out, err = run([rdmasim, "run", "--", "ucx_info", "-d"])
    check(rc == 0 and lists_rdmasim0(out), "root: ucx_info -d lists rdmasim0 with rc_verbs and ud_verbs",
          f"exit {rc}\n{out[-3000:]}\n{err}")
    rc, out, err = run([rdmasim, "run", "--device-nodes", "off", "--", "ucx_info", "-d"])
    check(rc == 0 and "Memory domain: rdmasim0" not in out, "--device-nodes off: ucx_info -d does not list rdmasim0",
          f"exit {rc}\n{out[-3000:]}\n{err}")
    exe, extra = readable_copy(rdmasim, tmp)
    env = dict(os.environ, **extra)
    rc, out, err = run(NOBODY + [exe, "run", "--", "ucx_info", "-d"], env)
    check(rc == 0 and lists_rdmasim0(out), "uid 65534: ucx_info -d lists rdmasim0 (a user namespace)",
          f"exit {rc}\n{out[-3000:]}\n{err}")
    rc, out, err = run(NOBODY + [exe, "run", "--", "id", "-u"], env)
    check(rc == 0 and out.strip() == "65534" and err == "", "uid 65534: the program sees its own uid, no warning",
          f"exit {rc}\n{out}\n{err}")
    return exe, env


def expected_files(netdev):
    d, port = "/sys/class/infiniband/rdmasim0", "/sys/class/infiniband/rdmasim0/ports/1"
    want = {f"{d}/node_type": "1: CA\n", f"{d}/node_guid": "0200:00ff:fe00:0001\n",
            f"{d}/board_id": "RDMASIM\n", f"{d}/hca_type": "rdmasim\n",
            f"{port}/link_layer": "Ethernet\n", f"{port}/state": "4: ACTIVE\n",
            f"{port}/phys_state": "5: LinkUp\n", f"{port}/gids/0": "0000:0000:0000:0000:0000:ffff:0a4d:0001\n",
            f"{port}/gids/1": "fe80:0000:0000:0000:0000:0000:0000:0001\n", f"{port}/gids/2": "0000:" * 7 + "0000\n",
            f"{port}/gid_attrs/types/0": "RoCE v2\n", f"{port}/gid_attrs/types/1": "RoCE v2\n",
            f"{port}/pkeys/0": "0xffff\n", f"{d}/device/numa_node": "-1\n",
            "/sys/class/infiniband_verbs/uverbs-rdmasim0/ibdev": "rdmasim0\n",
            "/sys/class/infiniband_verbs/uverbs-rdmasim1/ibdev": "rdmasim1\n"}
    if netdev:
        want[f"{port}/gid_attrs/ndevs/0"] = want[f"{port}/gid_attrs/ndevs/1"] = netdev + "\n"
    return want


def read_inside(prefix, rdmasim, check, what, env=None):
    """READER under rdmasim run (two devices, device 0's addresses fixed)."""
    tag = f"rdmasim-nodes-{os.getpid()}"
    cmd = prefix + [rdmasim, "run", "--devices", "2", "--set", "mac=02:00:00:00:00:01", "--set", f"ip={IP}",
                    "--set", "ip6=fe80::1", "--", "/usr/bin/python3", "-c", READER, tag]
    rc, out, err = run(cmd, env)
    shm = os.path.join("/dev/shm", tag)
    seen = os.path.exists(shm) and open(shm).read() == "inside"
    if os.path.exists(shm):
        os.unlink(shm)
    check(rc == 0, f"{what}: the reader ran", f"exit {rc}\n{out}\n{err}")
    if rc != 0:
        return None
    got = json.loads(out)
    check(got["chr"], f"{what}: /dev/infiniband/uverbs-rdmasim0 a character node, readable and writable")
    check(seen and "lo" in got["net"] and "ptmx" in got["pts"],
          f"{what}: /dev/shm is the host's, /dev/pts and /sys/class/net list their entries",
          json.dumps([got["net"], got["pts"]]))
    return got


def check_sysfs(got, netdev, check, what):
    want = expected_files(netdev)
    wrong = {p: (got["files"].get(p), v) for p, v in want.items() if got["files"].get(p) != v}
    check(not wrong, f"{what}: the sysfs files read back", json.dumps(wrong, indent=1))
    ndevs = [p for p in got["files"] if "/gid_attrs/ndevs/" in p]
    net_link = "/sys/class/infiniband/rdmasim0/device/net/" + (netdev or "")
    if netdev:
        check(got["links"].get(net_link, "").endswith(f"/devices/virtual/net/{netdev}"),
              f"{what}: device/net/{netdev} is the interface's sysfs directory", json.dumps(got["links"]))
        check(got.get("ip_of_net") == IP, f"{what}: ip -j addr show {netdev} gives {IP} (rdma-core's tests)",
              json.dumps(got.get("ip_of_net")))
    else:
        check(not got["links"] and not ndevs and "ip_of_net" not in got,
              f"{what}: no device/net and no gid_attrs/ndevs (no interface holds {IP})",
              json.dumps([got["links"], ndevs]))


def check_netns(rdmasim, check):
    ns, veth = f"rdmasim-nodes{os.getpid() % 100000}", f"rsn{os.getpid() % 100000}"
    sh = lambda *c: subprocess.run(c, check=True, capture_output=True)
    try:
        sh("ip", "netns", "add", ns)
        sh("ip", "-n", ns, "link", "add", veth, "type", "veth", "peer", "name", veth + "p")
        sh("ip", "-n", ns, "addr", "add", f"{IP}/24", "dev", veth)
        sh("ip", "-n", ns, "link", "set", veth, "up")
        got = read_inside(["ip", "netns", "exec", ns], rdmasim, check, "netns with the device's ip")
        if got:
            check_sysfs(got, veth, check, "netns with the device's ip")
    finally:
        subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)


def check_refusal(exe, env, check):
    """A capability an ordinary user holds: no user namespace for it."""
    caps = NOBODY + ["--inh-caps=+net_raw", "--ambient-caps=+net_raw"]
    rc, out, err = run(caps + [exe, "run", "--", "echo", "ran"], env)
    lines = err.strip().splitlines()
    check(rc == 0 and out == "ran\n" and len(lines) == 1 and "UCX will not list" in err and "unshare" in err,
          "auto, no namespace to be had: one line on stderr, the program runs", f"exit {rc}\n{out}\n{err}")
    rc, out, err = run(caps + [exe, "run", "--device-nodes", "on", "--", "echo", "ran"], env)
    check(rc == 1 and out == "" and "device_nodes = on" in err and "unshare" in err,
          "on, no namespace to be had: status 1 naming unshare, the program not run", f"exit {rc}\n{out}\n{err}")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    if os.geteuid() != 0 or not shutil.which("ucx_info") or not shutil.which("ip"):
        print("SKIP: needs root (CI runs as root), ucx_info (ucx-utils) and iproute2")
        return 77
    rdmasim = os.path.abspath(sys.argv[1])
    check = Checks()
    before = host_state()
    for path in ("/dev/infiniband", "/sys/class/infiniband", "/sys/class/infiniband_verbs"):
        if os.path.exists(path):
            print(f"note: {path} exists on this host: the graft of its parent is not exercised")
    with tempfile.TemporaryDirectory(prefix="rdmasim-nodes-") as tmp:
        exe, env = check_ucx(rdmasim, check, tmp)
        got = read_inside([], rdmasim, check, "root")
        if got:
            check_sysfs(got, None, check, "root")
        got = read_inside(NOBODY, exe, check, "uid 65534", env)
        if got:
            check(got["uid"] == 65534, "uid 65534: the reader's uid is its own")
            check_sysfs(got, None, check, "uid 65534")
        check_netns(rdmasim, check)
        check_refusal(exe, env, check)
    after = host_state()
    check(after == before, "the host's /dev, /sys/class and mounts are as they were",
          json.dumps({k: (before[k], after[k]) for k in before if before[k] != after[k]}))
    print(f"{'FAILED' if check.failures else 'passed'}: {len(check.failures)} failure(s)")
    return 1 if check.failures else 0


if __name__ == "__main__":
    sys.exit(main())
