#!/usr/bin/python3
"""--stats FILE (sim/README.md, "Statistics") and `rdmasim stats FILE`:

* `rdmasim run --stats` over the C example with a fault plan: one schema-1
  document whose counters balance, whose faults are the trace's fault lines,
  and whose destroyed WQs are all there; the same file from RDMASIM_STATS and
  from a TOML `stats = "..."`; `rdmasim env` makes the path absolute;
* `rdmasim replay --stats`: the counters its own --json reports;
* frames a raw-packet QP sends counted under "send";
* `rdmasim stats FILE` prints the tables (exit 0), `--json` the document;
  a missing, non-JSON, schema-less, other-schema or malformed file is exit 1
  with the path in the message; usage errors exit 2;
* a stats file that cannot be written: a message naming the path, no crash,
  the program's own exit status kept, no temporary file left.

usage: stats_test.py RDMASIM RSS_RECEIVE RAW_SEND SAMPLE_PCAP
"""
import collections
import copy
import json
import os
import re
import subprocess
import sys
import tempfile

PLAN = "seed=7; drop:p=0.1; duplicate:every=50; reorder:every=30,window=4"

failures = []
checks = 0


def check(ok, what):
    global checks
    checks += 1
    if not ok:
        failures.append(what)


def run(cmd, env=None, cwd=None):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, **(env or {})), cwd=cwd)


def balanced(c):
    return c["frames"] == c["delivered"] + sum(c["drops"].values()) + c["held"]


def run_example(rdmasim, example, pcap, tmp, stats_args, env=None, tag="a"):
    trace = os.path.join(tmp, f"trace-{tag}.jsonl")
    r = run([rdmasim, "run", "--deterministic", "--pcap", pcap, "--faults", PLAN, "--trace", trace,
             *stats_args, "--", example, "--frames", "100000", "--idle-ms", "300"], env=env, cwd=tmp)
    return r, trace


def check_document(doc, trace_path, what):
    check(doc.get("schema") == 1, f"{what}: schema is not 1")
    dev = doc["devices"][0]
    port = dev["port"]
    check(balanced(port), f"{what}: the port does not balance: {port}")
    check(dev["source"]["frames"] + dev["faults"]["duplicate"] == port["frames"],
          f"{what}: source frames + duplicates != frames offered")
    check(all(balanced(q) for q in dev["queues"]), f"{what}: a queue does not balance")
    wqs = [q for q in dev["queues"] if q["kind"] == "wq"]
    check([q["index"] for q in wqs] == [0, 1, 2, 3] and all(q["destroyed"] for q in wqs),
          f"{what}: not the 4 WQs, destroyed, in creation order")
    check(sum(q["delivered"] for q in wqs) == port["delivered"], f"{what}: WQ deliveries != the port's")
    drops = dev["port"]["drops"]
    # Every reason, zero or not (datapath/counters.hpp kDropNames: 14 today).
    check(len(drops) >= 14 and dev["queues"][0]["drops"].keys() == drops.keys()
          and "cqe_errors" in drops, f"{what}: not every drop reason listed")
    events = [json.loads(line) for line in open(trace_path)]
    fired = collections.Counter(e["kind"] for e in events if e["event"] == "fault")
    check(all(fired.get(k, 0) == n for k, n in dev["faults"].items()) and sum(fired.values()) > 0,
          f"{what}: fault counts {dev['faults']} are not the trace's {dict(fired)}")
    completions = sum(1 for e in events if e["event"] == "completion")
    check(completions == port["delivered"] + drops["length_errors"],
          f"{what}: {completions} completions in the trace, the stats say otherwise")
    check(doc["config"]["faults"] == PLAN and doc["config"]["seed"] == 7, f"{what}: the plan is not in config")


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    # Absolute: the programs run in a directory of their own.
    rdmasim, example, raw_send, pcap = map(os.path.abspath, sys.argv[1:])
    with tempfile.TemporaryDirectory() as tmp:
        # Three spellings, one document.
        docs = []
        r, trace = run_example(rdmasim, example, pcap, tmp, ["--stats", "flag.json"], tag="flag")
        check(r.returncode in (0, 1) and os.path.exists(os.path.join(tmp, "flag.json")),
              f"--stats: no file ({r.returncode}: {r.stderr})")
        docs.append(json.load(open(os.path.join(tmp, "flag.json"))))
        check_document(docs[-1], trace, "--stats")
        r, trace = run_example(rdmasim, example, pcap, tmp, [],
                               env={"RDMASIM_STATS": os.path.join(tmp, "env.json")}, tag="env")
        docs.append(json.load(open(os.path.join(tmp, "env.json"))))
        check_document(docs[-1], trace, "RDMASIM_STATS")
        toml = os.path.join(tmp, "rdmasim.toml")
        with open(toml, "w") as f:
            f.write(f'stats = "{os.path.join(tmp, "toml.json")}"\n')
        r, trace = run_example(rdmasim, example, pcap, tmp, [], env={"RDMASIM_CONFIG": toml}, tag="toml")
        docs.append(json.load(open(os.path.join(tmp, "toml.json"))))
        check_document(docs[-1], trace, "TOML stats")
        check(docs[0]["devices"] == docs[1]["devices"] == docs[2]["devices"],
              "the three spellings gave different counters")
        check(not [f for f in os.listdir(tmp) if ".tmp" in f], "a temporary file was left")

        r = run([rdmasim, "env", "--stats", "rel.json"], cwd=tmp)
        check(f"export RDMASIM_STATS='{os.path.join(os.path.realpath(tmp), 'rel.json')}'" in r.stdout
              or f"export RDMASIM_STATS='{os.path.join(tmp, 'rel.json')}'" in r.stdout,
              f"rdmasim env: the stats path is not absolute: {r.stdout}")

        # rdmasim replay: the file and the replay's own report agree.
        r = run([rdmasim, "replay", pcap, "--faults", PLAN, "--json", "--stats", os.path.join(tmp, "replay.json")])
        check(r.returncode == 0, f"replay --stats exited {r.returncode}: {r.stderr}")
        report = json.loads(r.stdout)
        doc = json.load(open(os.path.join(tmp, "replay.json")))
        dev = doc["devices"][0]
        check(doc["writer"] == "replay" and balanced(dev["port"]), "replay: writer or balance wrong")
        check(dev["port"]["frames"] == report["frames_offered"] and dev["port"]["drops"] == report["drops"]
              and dev["faults"] == report["faults"], "replay: the stats file disagrees with --json")
        check(sorted(q["delivered"] for q in dev["queues"] if q["kind"] == "wq") ==
              sorted(w["delivered"] for w in report["wqs"]), "replay: per-WQ deliveries differ")

        # What a device sends.
        r = run([rdmasim, "run", "--stats", "send.json", "--", raw_send, "--pcap", pcap], cwd=tmp)
        send = json.load(open(os.path.join(tmp, "send.json")))["devices"][0]["send"]
        check(r.returncode == 0 and send["frames"] == 393 and send["bytes"] > 0 and send["not_sent"] == 0,
              f"raw_send: send counters {send} (exit {r.returncode})")
        # Transmit-side faults: their counters balance, beside the port's send counters.
        r = run([rdmasim, "run", "--stats", "tx.json", "--tx-capture", "tx.pcap", "--faults",
                 "seed=7; drop:p=0.1,dir=tx; duplicate:every=50,dir=tx", "--", raw_send, "--pcap", pcap],
                cwd=tmp)
        dev = json.load(open(os.path.join(tmp, "tx.json")))["devices"][0]
        tx = dev.get("tx_faults", {})
        check(r.returncode == 0 and tx.get("sent") == 393 and tx["fault_drops"] == dev["faults"]["drop"] > 0
              and tx["duplicated"] == dev["faults"]["duplicate"] > 0
              and tx["sent"] + tx["duplicated"] == tx["passed"] + tx["fault_drops"] + tx["fcs_drops"]
              + tx["failed"] + tx["held"], f"tx faults: counters {tx} (exit {r.returncode})")

        # rdmasim stats FILE: the tables.
        flag = os.path.join(tmp, "flag.json")
        r = run([rdmasim, "stats", flag])
        check(r.returncode == 0, f"rdmasim stats exited {r.returncode}: {r.stderr}")
        out = r.stdout
        port = docs[0]["devices"][0]["port"]
        faults = docs[0]["devices"][0]["faults"]
        for pattern in (rf"^  offered +{port['frames']}$",
                        rf"^  delivered +{port['delivered']}$",
                        rf"^  fault_drops +{port['drops']['fault_drops']}$",
                        r"^  faults: 'seed=7; drop:p=0\.1; duplicate:every=50; reorder:every=30,window=4' \(seed 7\)$",
                        rf"^  faults injected: drop {faults['drop']}, duplicate {faults['duplicate']}, "
                        rf"reorder {faults['reorder']}$",
                        r"^  queue +kind +index +state +frames +delivered +dropped +held +flushed$",
                        r"^  verbs failed: none$"):
            check(re.search(pattern, out, re.M), f"rdmasim stats: no line matching {pattern!r} in\n{out}")
        check(sum(1 for l in out.splitlines() if " destroyed " in l) == 4, "rdmasim stats: not 4 WQ rows")
        r = run([rdmasim, "stats", "--json", flag])
        check(r.returncode == 0 and json.loads(r.stdout) == docs[0], "rdmasim stats --json is not the file")

        # Bad files: exit 1, the path named.
        def bad(name, content, expect):
            path = os.path.join(tmp, name)
            if content is not None:
                with open(path, "w") as f:
                    f.write(content)
            r = run([rdmasim, "stats", path])
            check(r.returncode == 1 and path in r.stderr and expect in r.stderr and not r.stdout,
                  f"rdmasim stats {name}: exit {r.returncode}, stderr {r.stderr!r}, stdout {r.stdout[:80]!r}")

        bad("missing.json", None, "cannot open")
        bad("empty.json", "", "not JSON")
        bad("text.json", "hello", "not JSON")
        bad("noschema.json", '{"devices": []}', "no \"schema\"")
        bad("schema2.json", '{"schema": 2}', "schema 2")
        half = copy.deepcopy(docs[0])
        del half["devices"][0]["port"]
        bad("malformed.json", json.dumps(half), "malformed")
        bad("wrongtype.json", json.dumps(dict(docs[1], devices="x")), "malformed")

        # Usage errors: exit 2.
        for args in (["stats"], ["stats", flag, "extra"], ["stats", "--bogus", flag]):
            r = run([rdmasim, *args])
            check(r.returncode == 2, f"rdmasim {' '.join(args)}: exit {r.returncode}, not 2")

        # A file that cannot be written: said, not a crash; nothing left behind.
        # Under run its missing directory is found before the program starts.
        nodir = os.path.join(tmp, "no-such-dir", "s.json")
        r = run([rdmasim, "run", "--stats", nodir, "--", raw_send, "--pcap", pcap], cwd=tmp)
        check(r.returncode == 1 and f"stats = '{nodir}'" in r.stderr and "No such file or directory" in r.stderr,
              f"unwritable stats under run: exit {r.returncode}, stderr {r.stderr!r}")
        target = os.path.join(tmp, "a-directory")
        os.mkdir(target)
        os.mkdir(os.path.join(target, "x"))
        r = run([rdmasim, "replay", pcap, "--stats", target])
        check(r.returncode == 1 and f"stats {target}: neither a regular file" in r.stderr,
              f"stats onto a directory under replay: exit {r.returncode}, stderr {r.stderr!r}")
        check(not [f for f in os.listdir(tmp) if ".tmp" in f], "a temporary file was left after a failure")

    for f in failures:
        print("FAIL:", f)
    print(f"{checks - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
