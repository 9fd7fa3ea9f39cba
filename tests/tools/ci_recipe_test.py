#!/usr/bin/python3
"""The CI recipe of the top README ("Testing RDMA code in CI") is the file
tests/examples/ci_recipe.sh, byte for byte, and it works: run as a user's job
would run it (RDMASIM, PROGRAM, CAPTURE, OUT from the environment), over the
wq_recover example, it passes, and the stats file it leaves agrees with the
trace (each fault kind counted as often as the trace has fault lines of that
kind, the verb-fail by verb), balances (port and every queue: frames =
delivered + drops + held; the source's frames plus the duplicates = the
frames offered) and holds the numbers the README quotes. With a program
that does not reach its goal, the recipe fails.

usage: ci_recipe_test.py RDMASIM WQ_RECOVER SAMPLE_PCAP README SCRIPT
"""
import collections
import json
import os
import re
import subprocess
import sys
import tempfile


def readme_block(readme):
    """The ```bash block of README that starts with the script's first line."""
    text = open(readme).read()
    m = re.search(r"```bash\n(#!/bin/bash\n.*?)```\n", text, re.S)
    return m.group(1) if m else None


def run_recipe(script, rdmasim, program, pcap, out):
    env = dict(os.environ, RDMASIM=rdmasim, PROGRAM=program, CAPTURE=pcap, OUT=out)
    return subprocess.run(["/bin/bash", script], env=env, cwd=os.path.dirname(out),
                          capture_output=True, text=True, timeout=300)


def balanced(c):
    return c["frames"] == c["delivered"] + sum(c["drops"].values()) + c["held"]


def main():
    if len(sys.argv) != 6:
        print(__doc__)
        return 2
    # Absolute: the recipe runs in a directory of its own.
    rdmasim, wq_recover, pcap, readme, script = map(os.path.abspath, sys.argv[1:])
    failures = []
    checks = 0

    def check(ok, what):
        nonlocal checks
        checks += 1
        if not ok:
            failures.append(what)

    check(readme_block(readme) == open(script).read(),
          "the README's recipe block and tests/examples/ci_recipe.sh differ")

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out")
        r = run_recipe(script, rdmasim, f"{wq_recover} --min-frames 300", pcap, out)
        print(r.stdout + r.stderr)
        check(r.returncode == 0, f"the recipe failed (exit {r.returncode})")
        if r.returncode != 0:
            print("FAIL: the recipe failed; nothing more to check")
            return 1
        stats = json.load(open(os.path.join(out, "stats.json")))
        trace = [json.loads(line) for line in open(os.path.join(out, "trace.jsonl"))]
        leftovers = [f for f in os.listdir(out) if ".tmp" in f]
        check(not leftovers, f"temporary files left beside the stats file: {leftovers}")

        check(stats["schema"] == 1, "schema is not 1")
        check(stats["writer"] == "drop-in", "writer is not drop-in")
        check(stats["config"]["seed"] == 7 and stats["config"]["engine"] == "inline",
              "config lacks the seed or the inline engine")
        dev = stats["devices"][0]
        port = dev["port"]
        check(balanced(port), f"port does not balance: {port}")
        for q in dev["queues"]:
            check(balanced(q), f"queue {q['qp_num']:#x} does not balance")
        check(sum(q["frames"] for q in dev["queues"]) ==
              port["frames"] - port["drops"]["fault_drops"] - port["drops"]["steering_miss"],
              "the queues' frames are not the port's, less the frames no queue saw")
        check(dev["source"]["frames"] + dev["faults"]["duplicate"] == port["frames"],
              "source frames + duplicates != frames offered")

        fired = collections.Counter(e["kind"] for e in trace if e["event"] == "fault")
        for kind, n in dev["faults"].items():
            check(fired.get(kind, 0) == n, f"{kind}: {n} in the stats, {fired.get(kind, 0)} in the trace")
        verbs = collections.Counter(e["verb"] for e in trace if e.get("kind") == "verb-fail")
        for verb, n in dev["verb_fails"].items():
            check(verbs.get(verb, 0) == n, f"verb-fail {verb}: {n} in the stats, {verbs.get(verb, 0)} in the trace")
        completions = sum(1 for e in trace if e["event"] == "completion")
        check(completions == port["delivered"] + port["flushed_wqes"],
              "the trace's completions are not the deliveries and the flushes")

        # What the README says this run gives.
        check((port["delivered"], port["drops"]["fault_drops"], port["drops"]["wq_not_ready"],
               dev["faults"]["duplicate"], dev["source"]["frames"]) == (358, 16, 28, 9, 393),
              "the README's numbers (358 delivered, 16 lost, 28 wq_not_ready, 9 duplicates, 393 frames) "
              f"are not this run's: {port['delivered']}, {port['drops']['fault_drops']}, "
              f"{port['drops']['wq_not_ready']}, {dev['faults']['duplicate']}, {dev['source']['frames']}")
        kinds = {q["index"]: q for q in dev["queues"] if q["kind"] == "wq"}
        check(sorted(kinds) == [0, 1] and kinds[0]["flushed_wqes"] == 256 and kinds[1]["delivered"] > 0,
              "not two WQs, the first flushed and the second receiving")

        # The recipe can fail: a goal the program cannot reach fails step 1.
        r = run_recipe(script, rdmasim, f"{wq_recover} --min-frames 100000 --idle-ms 300", pcap,
                       os.path.join(tmp, "fail"))
        check(r.returncode != 0, "the recipe passed a program that missed its goal")

    for f in failures:
        print("FAIL:", f)
    print(f"{checks - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
