#!/usr/bin/python3
"""The pyverbs example on rdmasim: every frame of the sample capture reaches
it (the jumbo ones as length errors: they do not fit its 2 KiB buffers), and
the frames it prints are the capture's, as scapy reads them.

usage: pyverbs_receive_test.py RDMASIM EXAMPLE SAMPLE_PCAP
"""
import re
import subprocess
import sys

from scapy.all import rdpcap

BUF = 2048


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    rdmasim, example, sample = sys.argv[1:]
    frames = rdpcap(sample)
    fits = [bytes(f) for f in frames if len(f) <= BUF]
    show = 8
    p = subprocess.run([rdmasim, "run", "--deterministic", "--pcap", sample, "--",
                        "/usr/bin/python3", example, "--frames", str(len(frames)), "--show", str(show)],
                       capture_output=True, text=True, timeout=300)
    print(p.stdout, p.stderr, sep="")
    failures = 0

    def check(ok, what):
        nonlocal failures
        print(("ok:   " if ok else "FAIL: ") + what)
        failures += not ok

    check(p.returncode == 0, f"exit status 0 (got {p.returncode})")
    want = f"received {len(fits)} frames, {len(frames) - len(fits)} error completions"
    check(want in p.stdout, f"the summary says '{want}'")
    lines = re.findall(r"^frame (\d+): (\d+) bytes, (\S+) -> (\S+), ethertype (0x[0-9a-f]+)$", p.stdout, re.M)
    check(len(lines) == show, f"{show} frames printed (got {len(lines)})")
    for (n, length, src, dst, etype), raw in zip(lines, fits):
        mac = lambda b: ":".join(f"{x:02x}" for x in b)
        expect = (len(raw), mac(raw[6:12]), mac(raw[0:6]), int.from_bytes(raw[12:14], "big"))
        check((int(length), src, dst, int(etype, 16)) == expect, f"frame {n} is the capture's ({expect})")
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
