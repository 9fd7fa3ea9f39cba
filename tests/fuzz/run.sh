#!/usr/bin/env bash
# Runs every fuzz target for SECONDS over a scratch copy of its seed corpus
# (the committed corpus is never written). One line per target; the exit
# status is non-zero if any target found a crash, leak, timeout or OOM.
# Findings are kept in BUILD_DIR/fuzz-artifacts/<target>/, logs beside them.
# Targets run side by side, as many at once as there are CPUs (nproc): each
# still gets its SECONDS, and CI waits for the slowest, not the sum.
#
# Usage: tests/fuzz/run.sh SECONDS BUILD_DIR
#   BUILD_DIR configured with -Dfuzz=true (see tests/fuzz/meson.build).
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 SECONDS BUILD_DIR" >&2
    exit 2
fi
seconds=$1
build=$(cd "$2" && pwd) || exit 2
here=$(cd "$(dirname "$0")" && pwd)
targets="fuzz_frame fuzz_flow_spec fuzz_config fuzz_pcap_replay fuzz_roce_peer"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/rdmasim-fuzz.XXXXXX") || exit 2
trap 'rm -rf "$scratch"' EXIT INT TERM

# fuzz_one TARGET: runs it; its line goes to $scratch/TARGET.line, and
# $scratch/TARGET.failed exists if it did not pass.
fuzz_one() {
    local t=$1 exe="$build/tests/fuzz/$1" corpus="$scratch/$1" artifacts="$build/fuzz-artifacts/$1"
    if [ ! -x "$exe" ]; then
        echo "$t: MISSING $exe (configure with -Dfuzz=true)" >"$scratch/$t.line"
        touch "$scratch/$t.failed"
        return
    fi
    mkdir -p "$corpus" "$artifacts"
    if [ -d "$here/corpus/$t" ]; then cp "$here/corpus/$t"/* "$corpus"/ 2>/dev/null; fi
    local log="$artifacts/last-run.log"
    TMPDIR="$scratch" "$exe" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
        -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" >"$log" 2>&1
    local rc=$?
    local execs units
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    units=$(ls "$corpus" | wc -l)
    if [ $rc -eq 0 ]; then
        echo "$t: ok, ${seconds}s, ${execs:-?} execs, corpus $units" >"$scratch/$t.line"
    else
        local finding
        finding=$(grep -m 1 -E '^(==[0-9]+==ERROR|SUMMARY|.*deadly signal|.*-timeout|.*out-of-memory)' "$log")
        echo "$t: FINDING (exit $rc) ${finding:-see log}; artifacts and log in $artifacts" >"$scratch/$t.line"
        touch "$scratch/$t.failed"
    fi
}

cpus=$(nproc 2>/dev/null || echo 1)
for t in $targets; do
    while [ "$(jobs -rp | wc -l)" -ge "$cpus" ]; do wait -n; done
    fuzz_one "$t" &
done
wait

status=0
for t in $targets; do
    cat "$scratch/$t.line"
    [ -e "$scratch/$t.failed" ] && status=1
done
exit $status
