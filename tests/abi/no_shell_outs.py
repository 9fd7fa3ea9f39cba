#!/usr/bin/python3
"""The drop-in library runs inside other people's programs: it must never
start processes (no shell-outs) nor touch files of its own accord. It writes
only the capture file a user names (tx_capture, through libpcap's dumper),
and the wire socket a user names is made and removed by libvdeplug (whose
URL schemes net/vde_wire.cpp limits to ptp, vde and vxvde: no cmd://), and
the HTML report a user names (key `report`) is written to FILE.tmp.PID and
renamed onto FILE (removed again when the write fails: sim/html_report.cpp);
nothing else of its own creates, removes or renames a path. Checks its
dynamic imports: `rename` is allowed for that report alone.

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
    "creat", "unlink", "mkdir", "rmdir", "truncate", "ftruncate",
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
