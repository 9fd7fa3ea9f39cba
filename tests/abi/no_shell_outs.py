#!/usr/bin/python3
"""The drop-in library runs inside other people's programs: it must never
start processes (no shell-outs) nor touch files of its own accord. It writes
only the files a user names: the capture (tx_capture, through libpcap's
dumper), the trace, the stats file and the HTML report, the last two
replacing FILE atomically (sim/stats_file.cpp: FILE.tmpPID beside it;
sim/html_report.cpp: FILE.tmp.PID; then rename(2) over FILE, and the
temporary file removed when the write fails: the only rename, unlink and
remove it calls); the wire socket a user names is made and removed by
libvdeplug (whose URL schemes net/vde_wire.cpp limits to ptp, vde and
vxvde: no cmd://). Nothing else of its own creates, removes or renames a
path. Checks its dynamic imports.

usage: no_shell_outs.py LIBRARY
"""
import re
import subprocess
import sys

FORBIDDEN = {
    # starting programs
    "system", "popen", "fork", "vfork", "clone", "posix_spawn", "posix_spawnp",
    "execl", "execle", "execlp", "execv", "execve", "execvp", "execvpe", "fexecve",
    # writing or changing files
    "creat", "mkdir", "rmdir", "truncate", "ftruncate", "renameat", "renameat2", "unlinkat",
}
out = subprocess.run(["objdump", "-T", sys.argv[1]], capture_output=True, text=True,
                     check=True).stdout
imports = {m.group(1) for m in re.finditer(r"\*UND\*\s+\S+\s+(?:\S+\s+)?(\w+)$", out, re.M)}
bad = sorted(imports & FORBIDDEN)
for name in bad:
    print(f"FAIL: the library imports {name}")
print(f"{len(imports)} imports checked")
print(f"{1 if not bad else 0} passed, {1 if bad else 0} failed")
sys.exit(1 if bad else 0)
