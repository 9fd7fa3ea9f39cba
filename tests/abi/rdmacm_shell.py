#!/usr/bin/python3
"""The drop-in librdmacm.so.1 loads, finds its table and fails as it says.

usage: /usr/bin/python3 tests/abi/rdmacm_shell.py LIBDIR

LIBDIR is the build's sim/ (or an install's LIBDIR/rdmasim/), holding
librdmacm.so.1 beside libibverbs.so.1. Each case runs in a child python
that loads LIBDIR/librdmacm.so.1 with ctypes (RTLD_LOCAL, as pyverbs' own
modules are loaded) and prints what it saw as JSON:

  * under rdmasim's libibverbs (LD_LIBRARY_PATH=LIBDIR, what `rdmasim run`
    sets): that libibverbs is the one loaded (librdmacm needs it), nothing
    on stderr about a missing table, rdma_event_str answers rdma-core's
    strings (compared with the system librdmacm's when it is installed);
    rsocket, rbind, riomap and riowrite fail with ENOSYS, with one line on
    stderr for all of them;
  * under the system's libibverbs (loaded first): no table, so
    rdma_create_event_channel and rdma_get_devices are NULL and
    rdma_create_id -1, all with ENOSYS, rdma_event_str still answers, and
    stderr says once that the program needs `rdmasim run`;
  * rdmacm-utils' rping and ucmatose (when installed) start with
    LD_BIND_NOW=1: every name and version they import is there.

The connection manager's behaviour is not checked here: the table's slots
are being filled (device/rdmacm/ops_table.cpp).
Exit 0 when all hold, 1 otherwise.
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import checklist  # noqa: E402
from checklist import check  # noqa: E402

SYSTEM_VERBS = "/usr/lib/x86_64-linux-gnu/libibverbs.so.1"
NEEDS_RUN = "rdmasim: librdmacm.so.1 needs rdmasim's libibverbs.so.1"
RSOCKETS = "rdmasim: rsockets are not emulated (rsocket): see README.md, \"Limits\""
EVENTS = list(range(-1, 18)) + [1000]  # every enumerator, and a few outside

# The child: argv[1] the librdmacm to load, argv[2] a libibverbs to load
# first with RTLD_GLOBAL ("" for none), argv[3] "all" or "events".
CHILD = r'''
import ctypes, errno, json, sys
if sys.argv[2]:
    ctypes.CDLL(sys.argv[2], mode=ctypes.RTLD_GLOBAL)
cm = ctypes.CDLL(sys.argv[1], use_errno=True)
cm.rdma_event_str.restype = ctypes.c_char_p
cm.rdma_event_str.argtypes = [ctypes.c_int]
out = {"events": [cm.rdma_event_str(e).decode() for e in json.loads(sys.argv[4])]}
def failed(fn, restype, *args):
    f = getattr(cm, fn)
    f.restype = restype
    ctypes.set_errno(0)
    r = f(*args)
    return [r, errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno())]
if sys.argv[3] == "all":
    out["create_event_channel"] = failed("rdma_create_event_channel", ctypes.c_void_p)
    out["get_devices"] = failed("rdma_get_devices", ctypes.c_void_p, None)
    id_ = ctypes.c_void_p()
    out["create_id"] = failed("rdma_create_id", ctypes.c_int, None, ctypes.byref(id_), None, 0x0106)
    out["rsocket"] = failed("rsocket", ctypes.c_int, 2, 1, 0)
    out["rbind"] = failed("rbind", ctypes.c_int, 3, None, 0)
    out["riomap"] = failed("riomap", ctypes.c_int64, 3, None, 0, 0, 0, ctypes.c_int64(0))
    out["riowrite"] = failed("riowrite", ctypes.c_size_t, 3, None, 0, ctypes.c_int64(0), 0)
out["verbs"] = sorted({l.split()[-1] for l in open("/proc/self/maps") if "libibverbs" in l})
print(json.dumps(out))
'''


def child(lib, preload="", what="all", env_extra=None):
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH" and k != "LD_PRELOAD"}
    env.update(env_extra or {})
    p = subprocess.run([sys.executable, "-c", CHILD, lib, preload, what, json.dumps(EVENTS)],
                       capture_output=True, text=True, env=env, timeout=60)
    try:
        return json.loads(p.stdout), p.stderr
    except json.JSONDecodeError:
        return None, f"exit {p.returncode}: {p.stdout}{p.stderr}"


def under_rdmasim(libdir, lib):
    got, err = child(lib, env_extra={"LD_LIBRARY_PATH": libdir})
    if not check(got is not None, "loads under rdmasim's libibverbs", err):
        return
    ours = os.path.realpath(os.path.join(libdir, "libibverbs.so.1"))
    check([os.path.realpath(p) for p in got["verbs"]] == [ours],
          "the libibverbs loaded with it is rdmasim's", got["verbs"])
    check(NEEDS_RUN not in err, "it finds the table: nothing said about a missing one", err)
    ev = dict(zip(EVENTS, got["events"]))
    check(ev[9] == "RDMA_CM_EVENT_ESTABLISHED" and ev[0] == "RDMA_CM_EVENT_ADDR_RESOLVED"
          and ev[15] == "RDMA_CM_EVENT_TIMEWAIT_EXIT" and ev[16] == "UNKNOWN EVENT"
          and ev[-1] == "UNKNOWN EVENT", "rdma_event_str: the enumerators' names, UNKNOWN EVENT else",
          ev)
    if os.path.exists("/usr/lib/x86_64-linux-gnu/librdmacm.so.1"):
        system, serr = child("librdmacm.so.1", what="events")
        check(system is not None and system["events"] == got["events"],
              "rdma_event_str answers what the system librdmacm answers, value for value",
              f"{system and system['events']} {serr}")
    check(got["rsocket"] == [-1, "ENOSYS"] and got["rbind"] == [-1, "ENOSYS"],
          "rsocket(AF_INET, SOCK_STREAM, 0) and rbind: -1, ENOSYS", got)
    check(got["riomap"] == [-1, "ENOSYS"] and got["riowrite"] == [2**64 - 1, "ENOSYS"],
          "riomap: (off_t) -1, riowrite: (size_t) -1, ENOSYS", got)
    check(err.count("rsockets are not emulated") == 1 and RSOCKETS in err,
          "one line on stderr for all the rsocket calls, naming the first", err)


def under_system(lib):
    if not os.path.exists(SYSTEM_VERBS):
        print(f"note: {SYSTEM_VERBS} not found: the no-table case is not checked")
        return
    got, err = child(lib, preload=SYSTEM_VERBS)
    if not check(got is not None, "loads under the system's libibverbs", err):
        return
    check([os.path.realpath(p) for p in got["verbs"]] == [os.path.realpath(SYSTEM_VERBS)],
          "the libibverbs loaded is the system's", got["verbs"])
    check(got["create_event_channel"] == [None, "ENOSYS"] and got["get_devices"] == [None, "ENOSYS"]
          and got["create_id"] == [-1, "ENOSYS"],
          "no table: rdma_create_event_channel, rdma_get_devices NULL, rdma_create_id -1, ENOSYS",
          got)
    check(got["events"][EVENTS.index(9)] == "RDMA_CM_EVENT_ESTABLISHED",
          "no table: rdma_event_str still answers", got["events"])
    check(err.count(NEEDS_RUN) == 1, "no table: stderr says so once", err)


def real_programs(libdir):
    for prog in ("rping", "ucmatose"):
        path = shutil.which(prog)
        if path is None:
            print(f"note: {prog} not found (rdmacm-utils): not checked")
            continue
        env = dict(os.environ, LD_LIBRARY_PATH=libdir)
        p = subprocess.run([path], capture_output=True, text=True, timeout=60,
                           env=dict(env, LD_TRACE_LOADED_OBJECTS="1"))
        libs = dict(re.findall(r"^\s*(lib(?:rdmacm|ibverbs)\.so\.1) => (\S+)", p.stdout, re.M))
        check({k: os.path.realpath(v) for k, v in libs.items()} ==
              {k: os.path.realpath(os.path.join(libdir, k)) for k in ("librdmacm.so.1", "libibverbs.so.1")},
              f"{prog} loads both drop-in libraries", p.stdout)
        # -h is no option of theirs: they print their usage and exit, after
        # the loader bound every import (LD_BIND_NOW).
        p = subprocess.run([path, "-h"], capture_output=True, text=True, timeout=60,
                           env=dict(env, LD_BIND_NOW="1"))
        out = p.stdout + p.stderr
        check(p.returncode not in (127, -6) and prog in out and "symbol lookup error" not in out
              and "version `" not in out and "error while loading" not in out,
              f"{prog} starts on them with LD_BIND_NOW=1 (prints its usage)", f"exit {p.returncode}: {out}")


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        sys.exit(1)
    libdir = os.path.abspath(sys.argv[1])
    lib = os.path.join(libdir, "librdmacm.so.1")
    if not check(os.path.exists(lib) and os.path.exists(os.path.join(libdir, "libibverbs.so.1")),
                 f"librdmacm.so.1 beside libibverbs.so.1 in {libdir}"):
        checklist.finish()
    under_rdmasim(libdir, lib)
    under_system(lib)
    real_programs(libdir)
    checklist.finish()


if __name__ == "__main__":
    main()
