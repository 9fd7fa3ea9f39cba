#!/bin/bash
# Testing RDMA code in CI with rdmasim: run a verbs program under a fault
# plan, then check its exit status and what rdmasim counted. Settings, from
# the environment: RDMASIM (the rdmasim binary), PROGRAM (the program and its
# arguments), CAPTURE (the traffic it receives), OUT (a directory for the
# results). Needs jq.
set -euo pipefail
RDMASIM=${RDMASIM:-build/tools/rdmasim}
PROGRAM=${PROGRAM:-build/tests/examples/wq_recover --min-frames 300}
CAPTURE=${CAPTURE:-tests/data/sample.pcap}
OUT=${OUT:-rdmasim-out}
mkdir -p "$OUT"

# 5% of the frames lost, every 40th duplicated, WQ 0 fatal after 150
# frames, the 2nd ibv_create_wq failing with ENOMEM. With --deterministic
# the same plan and seed give the same run, every time.
FAULTS='seed=7; drop:p=0.05; duplicate:every=40; wq-fatal:wq=0,after=150; verb-fail:create_wq,nth=2,errno=ENOMEM'

# 1. The program's own verdict: its exit status (set -e stops on failure).
"$RDMASIM" run --pcap "$CAPTURE" --deterministic --faults "$FAULTS" \
    --trace "$OUT/trace.jsonl" --stats "$OUT/stats.json" \
    -- $PROGRAM | tee "$OUT/program.txt"

# 2. What rdmasim counted, as tables in the job's log.
"$RDMASIM" stats "$OUT/stats.json"

# 3. The error paths were taken, and every frame offered has one outcome.
jq -e '.devices[0] | .faults["wq-fatal"] == 1 and .verb_fails.create_wq == 1
       and .port.frames == .port.delivered + ([.port.drops[]] | add) + .port.held' \
    "$OUT/stats.json"

# 4. Every frame rdmasim delivered reached the program's count.
received=$(sed -n 's/^received \([0-9]*\) frames.*/\1/p' "$OUT/program.txt")
jq -e --argjson n "$received" '.devices[0].port.delivered == $n' "$OUT/stats.json"
