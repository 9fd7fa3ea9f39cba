#!/usr/bin/python3
"""--stats FILE and --report FILE write where they are told, and leave what
is there what it was (sim/output_file.hpp): a FIFO is written in place and
read here, a character device stays one (a null device made with mknod in a
temporary directory, a pseudo-terminal, then the machine's /dev/null), "-"
is standard output, a regular file is replaced.

usage: output_files_test.py RDMASIM

The program is ibv_devinfo under `rdmasim run`: it opens the device, so the
simulator writes both documents when it exits.
"""
import json
import os
import stat
import subprocess
import sys
import tempfile
import threading
import tty

import checklist
from checklist import check


rdmasim = sys.argv[1]
TIMEOUT = 60


def run(*args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RDMASIM_")}
    return subprocess.run([rdmasim, "run", *args, "--", "ibv_devinfo"], capture_output=True, text=True,
                          env=env, timeout=TIMEOUT)


def is_stats(text):
    try:
        return json.loads(text).get("schema") == 1
    except ValueError:
        return False


def reader(path, out, opener=None):
    """Reads `path` (or the fd `opener` gives) to its end in a thread; the text lands in out[0]."""
    def body():
        fd = opener() if opener else os.open(path, os.O_RDONLY)
        chunks = []
        while True:
            try:
                b = os.read(fd, 65536)
            except OSError:  # a pty's master reads EIO once the slave is closed
                break
            if not b:
                break
            chunks.append(b)
        os.close(fd)
        out[0] = b"".join(chunks).decode(errors="replace")
    t = threading.Thread(target=body, daemon=True)
    t.start()
    return t


tmp = tempfile.mkdtemp(prefix="rdmasim-out-")

# A FIFO for each document, read here: written in place, still FIFOs after.
stats_fifo, report_fifo = os.path.join(tmp, "stats.fifo"), os.path.join(tmp, "report.fifo")
os.mkfifo(stats_fifo)
os.mkfifo(report_fifo)
got_stats, got_report = [None], [None]
readers = [reader(stats_fifo, got_stats), reader(report_fifo, got_report)]
p = run("--stats", stats_fifo, "--report", report_fifo)
for t in readers:  # a reader still waiting for a writer after this never gets one
    t.join(timeout=5)
check(p.returncode == 0, "FIFOs: the program exits 0", p.stderr)
check(stat.S_ISFIFO(os.stat(stats_fifo).st_mode) and stat.S_ISFIFO(os.stat(report_fifo).st_mode),
      "FIFOs: still FIFOs after the run", oct(os.stat(stats_fifo).st_mode))
check(got_stats[0] is not None and is_stats(got_stats[0]), "FIFO: the stats document came through it",
      repr(got_stats[0])[:300])
check(got_report[0] is not None and got_report[0].rstrip().endswith("</html>"),
      "FIFO: the HTML report came through it", repr(got_report[0])[:300])
check(not [n for n in os.listdir(tmp) if ".tmp" in n], "FIFOs: no temporary file left", os.listdir(tmp))

# A null device of our own (mknod, as root): never the machine's /dev/null
# while the code under test might still rename over it.
null_ok = False
null = os.path.join(tmp, "null")
try:
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
except PermissionError:
    null = None
if null:
    p = run("--stats", null, "--report", null)
    st = os.stat(null)
    null_ok = p.returncode == 0 and stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)
    check(p.returncode == 0, "a mknod'd null device: the program exits 0", p.stderr)
    check(stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3),
          "a mknod'd null device: still the null device after --stats and --report", oct(st.st_mode))
    check(not [n for n in os.listdir(tmp) if ".tmp" in n], "null device: no temporary file left", os.listdir(tmp))

# A pseudo-terminal's slave, a character device anyone may open: the stats
# document arrives at the master.
master, slave = os.openpty()
tty.setraw(slave)  # no newline translation
slave_path = os.ttyname(slave)
got_tty = [None]
t = reader(None, got_tty, opener=lambda: master)
p = run("--stats", slave_path)
os.close(slave)
t.join(timeout=10)
check(p.returncode == 0, "a terminal: the program exits 0", p.stderr)
check(got_tty[0] is not None and is_stats(got_tty[0]), "a terminal: the stats document was written to it",
      repr(got_tty[0])[:300])

# The machine's /dev/null, only once the code wrote a null device in place.
if null_ok or os.geteuid() != 0:
    p = run("--stats", "/dev/null", "--report", "/dev/null")
    st = os.stat("/dev/null")
    check(p.returncode == 0 and stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3),
          "/dev/null: still the null device", f"{p.stderr} {oct(st.st_mode)}")

# "-": standard output, after what the program printed.
p = run("--stats", "-")
text = p.stdout
start = text.find('{\n  "config"')
check(p.returncode == 0 and "hca_id:" in text, "-: the program's own output is there", p.stderr)
check(start > 0 and is_stats(text[start:]), "-: the stats document follows it on standard output", text[-300:])
check(not os.path.exists("-") or os.path.getmtime("-") < os.path.getmtime(tmp),
      "-: no file named '-' written")

# A regular file is replaced (atomically, as before).
regular = os.path.join(tmp, "stats.json")
with open(regular, "w") as f:
    f.write("old")
p = run("--stats", regular)
with open(regular) as f:
    check(p.returncode == 0 and is_stats(f.read()), "a regular file: replaced by the document")

for name in os.listdir(tmp):
    os.remove(os.path.join(tmp, name))
os.rmdir(tmp)
checklist.finish()
