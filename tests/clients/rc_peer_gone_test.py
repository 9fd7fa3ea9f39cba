#!/usr/bin/python3
"""Issue 13, acceptance 4b: with the peer gone, an RC send completes with
IBV_WC_RETRY_EXC_ERR after retry_cnt retries, at the time the timeout
formula gives in virtual time; with no receive posted, with
IBV_WC_RNR_RETRY_EXC_ERR after rnr_retry RNR waits.

Each case runs rc_peer_gone alone under `rdmasim run --deterministic`: the
inline engine, whose clock moves only by `idle_tick_us` on each poll that
finds the CQ empty (sim/README.md, "Engines"). A timer due at d therefore
fires at the first tick at or after d, and the next one starts from there:
each of the n waits (retry: retry_cnt + 1 local ACK timeouts of 4.096 us *
2^timeout; rnr: rnr_retry RNR NAK timers) takes its length rounded up to a
whole number of ticks. So the elapsed time must be exactly
n * ceil(wait / tick) * tick, which is the formula's n * wait plus less than
n ticks. --stats must count the timeouts and retransmissions (or RNR NAKs)
and the frames nobody answered.

usage: rc_peer_gone_test.py RDMASIM RC_PEER_GONE
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

RNR_TIMER_US = [655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920,
                2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880,
                163840, 245760, 327680, 491520]

IDLE_POLLS = 1000  # the program polls its empty CQ this often before it starts
# (case, peer, timeout, retry_cnt, rnr_retry, min_rnr_timer, idle_tick_us)
CASES = [
    ("retry", "destroyed", 10, 3, None, None, 10),  # the default tick
    ("retry", "error", 8, 7, None, None, 1),
    ("retry", "reset", 14, 0, None, None, 10),
    ("retry", "destroyed", 10, 3, None, None, 7),  # a tick that divides nothing here
    ("rnr", None, 10, None, 3, 14, 10),  # 1.28 ms: whole ticks
    ("rnr", None, 10, None, 6, 5, 7),  # 60 us in 7 us ticks: 63 us each
]


def run_case(rdmasim, program, tmp, case):
    what, peer, timeout, retry_cnt, rnr_retry, timer, tick = case
    stats = os.path.join(tmp, "stats.json")
    cmd = [rdmasim, "run", "--deterministic", "--set", f"idle_tick_us={tick}", "--stats", stats, "--",
           program, "--case", what, "--timeout", str(timeout), "--idle-polls", str(IDLE_POLLS)]
    if what == "retry":
        cmd += ["--peer", peer, "--retry-cnt", str(retry_cnt)]
        waits, wait_ns, status = retry_cnt + 1, 4096 << timeout, "IBV_WC_RETRY_EXC_ERR"
    else:
        cmd += ["--rnr-retry", str(rnr_retry), "--min-rnr-timer", str(timer)]
        waits, wait_ns, status = rnr_retry, RNR_TIMER_US[timer] * 1000, "IBV_WC_RNR_RETRY_EXC_ERR"
    print("$ " + " ".join(cmd))
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    sys.stdout.write(r.stdout + r.stderr)
    failures = []
    if r.returncode != 0:
        return [f"exit status {r.returncode}"]
    m = re.search(r"status=(\S+) posted_ns=(\d+) completed_ns=(\d+) elapsed_ns=(\d+) formula_ns=(\d+)",
                  r.stdout)
    if not m:
        return ["no result line"]
    got_status, posted, elapsed, formula = m.group(1), int(m.group(2)), int(m.group(4)), int(m.group(5))
    tick_ns = tick * 1000
    if posted != IDLE_POLLS * tick_ns:  # the program's empty polls before its warm-up
        failures.append(f"posted at {posted} ns, not after {IDLE_POLLS} ticks of {tick_ns} ns")
    exact = waits * -(-wait_ns // tick_ns) * tick_ns  # each wait rounded up to whole ticks
    if got_status != status:
        failures.append(f"status {got_status}, expected {status}")
    if formula != waits * wait_ns:
        failures.append(f"the program's formula {formula} != {waits} * {wait_ns}")
    if elapsed != exact:
        failures.append(f"elapsed {elapsed} ns != {waits} * ceil({wait_ns} / {tick_ns}) * {tick_ns} = {exact}")
    if not (0 <= elapsed - formula < waits * tick_ns):
        failures.append(f"elapsed {elapsed} ns is not within [formula, formula + {waits} ticks)")

    with open(stats) as f:
        roce = json.load(f)["devices"][0]["port"]["roce"]
    unanswered = roce["unknown_qp"] + roce["rx"]["not_ready"]
    print(f"  elapsed {elapsed} ns, formula {formula} ns (+{elapsed - formula} ns, {waits} waits of "
          f"{wait_ns} ns in {tick_ns} ns ticks); stats: timeouts {roce['timeouts']} retransmitted "
          f"{roce['retransmitted']} rnr_naks_received {roce['rnr_naks_received']} unknown_qp "
          f"{roce['unknown_qp']} not_ready {roce['rx']['not_ready']} rnr {roce['rx']['rnr']}")
    if what == "retry":
        # The one-packet SEND went retry_cnt + 1 times, unanswered each time.
        want = {"timeouts": retry_cnt + 1, "retransmitted": retry_cnt, "unanswered": retry_cnt + 1}
        got = {"timeouts": roce["timeouts"], "retransmitted": roce["retransmitted"], "unanswered": unanswered}
    else:
        want = {"rnr_naks_received": rnr_retry + 1, "rnr": rnr_retry + 1, "retransmitted": rnr_retry,
                "timeouts": 0}
        got = {"rnr_naks_received": roce["rnr_naks_received"], "rnr": roce["rx"]["rnr"],
               "retransmitted": roce["retransmitted"], "timeouts": roce["timeouts"]}
    if got != want:
        failures.append(f"stats {got}, expected {want}")
    return failures


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    rdmasim, program = sys.argv[1:]
    tmp = tempfile.mkdtemp(prefix=f"rc-peer-gone-{os.getpid()}-")
    try:
        failed = 0
        for case in CASES:
            failures = run_case(rdmasim, program, tmp, case)
            if failures:
                failed += 1
                print("  FAIL: " + "; ".join(failures))
        print(f"{len(CASES) - failed} of {len(CASES)} cases passed")
        return 1 if failed else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
