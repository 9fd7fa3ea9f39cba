#!/usr/bin/python3
"""A program whose two threads call exit() at once (examples/exit_race.c),
run many times under `rdmasim run --stats - --report -`: it never crashes,
and each run writes the stats document and the HTML report exactly once,
whole (sim/dropin.cpp: the exit handler and the loader's fini may run in the
two threads at the same time).

usage: exit_race_test.py RDMASIM EXIT_RACE [RUNS]
"""
import json
import os
import subprocess
import sys

rdmasim, program = sys.argv[1:3]
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 200
env = {k: v for k, v in os.environ.items() if not k.startswith("RDMASIM_")}
bad = []
for i in range(runs):
    p = subprocess.run([rdmasim, "run", "--stats", "-", "--report", "-", "--", program],
                       capture_output=True, text=True, env=env, timeout=60)
    out = p.stdout
    problems = []
    if p.returncode != 0:
        problems.append(f"exit status {p.returncode}")
    if out.count("</html>") != 1:
        problems.append(f"{out.count('</html>')} reports")
    if out.count('"schema": 1') != 1:
        problems.append(f"{out.count(chr(34) + 'schema' + chr(34) + ': 1')} stats documents")
    else:
        start = out.find('{\n  "config"')
        end = out.find("<!DOCTYPE", start)  # the report follows the stats
        doc = out[start:end] if end > 0 else out[start:]
        try:
            json.loads(doc)
        except ValueError as e:
            problems.append(f"stats document not whole: {e}")
    if problems:
        bad.append(i)
        if len(bad) <= 3:
            print(f"FAIL run {i}: {'; '.join(problems)}\n     stderr: {p.stderr.strip()[-400:]!r}")
print(f"{runs - len(bad)}/{runs} runs exited 0 with one stats document and one report")
sys.exit(1 if bad else 0)
