#!/usr/bin/python3
"""`rdmasim replay` against bad and odd capture files.

Usage: /usr/bin/python3 tests/tools/replay_bad_input_test.py RDMASIM

Files that cannot be replayed (missing, a directory, empty, not a capture,
cut inside the file header, a link type with no IP over Ethernet) must give a
clear one-line error on stderr that names the file, and a non-zero exit
status; never a crash (signal), a C++ "terminate called" or a hang.

Files that are odd but replayable (records cut to the snaplen, jumbo frames
larger than the receive buffers, pcapng with unknown blocks and options,
several interfaces) must replay with exit status 0 and a JSON report whose
counters balance: frames_offered == delivered + sum(drops).

Prints one line per case and 'N passed, M failed' at the end; exits 1 when
any case failed.
"""

import json
import os
import struct
import subprocess
import sys
import tempfile

TIMEOUT = 60  # seconds per rdmasim run


# --------------------------------------------------------------------------
# File images


def pcap_header(linktype=1, snaplen=65535):
    return struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, snaplen, linktype)


def pcap_record(data, caplen=None, length=None):
    caplen = len(data) if caplen is None else caplen
    length = len(data) if length is None else length
    return struct.pack("<IIII", 1, 0, caplen, length) + data


def frame(n, seed=0):
    """An Ethernet frame of n bytes to broadcast, ether type 0x88b5."""
    body = bytes((seed + i) & 0xFF for i in range(n))
    head = b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x02" + b"\x88\xb5"
    return (head + body[14:])[:n] if n >= 14 else body


def block(kind, body):
    body += b"\0" * (-len(body) % 4)
    total = 12 + len(body)
    return struct.pack("<II", kind, total) + body + struct.pack("<I", total)


def shb():
    return block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))


def idb(linktype=1, snaplen=65535, options=b""):
    return block(1, struct.pack("<HHI", linktype, 0, snaplen) + options)


def epb(data, interface=0, options=b""):
    body = struct.pack("<IIIII", interface, 0, 1000000, len(data), len(data)) + data
    body += b"\0" * (-len(body) % 4)
    return block(6, body + options)


def opt(code, value):
    return struct.pack("<HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


END_OF_OPTIONS = b"\0\0\0\0"


# --------------------------------------------------------------------------
# Runner


class Runner:
    def __init__(self, rdmasim, tmp):
        self.rdmasim = rdmasim
        self.tmp = tmp
        self.passed = 0
        self.failed = 0

    def path(self, name, content=None):
        p = os.path.join(self.tmp, name)
        if content is not None:
            with open(p, "wb") as f:
                f.write(content)
        return p

    def run(self, path, *extra):
        return subprocess.run(
            [self.rdmasim, "replay", path, "--engine", "inline", *extra],
            capture_output=True, text=True, timeout=TIMEOUT, check=False)

    def result(self, name, problems):
        if problems:
            self.failed += 1
            print(f"FAIL {name}")
            for p in problems:
                print(f"     {p}")
        else:
            self.passed += 1
            print(f"ok   {name}")

    def expect_error(self, name, path, must_mention=()):
        """Non-zero exit, a one-line error naming the file and `must_mention`."""
        problems = []
        try:
            r = self.run(path)
        except subprocess.TimeoutExpired:
            self.result(name, [f"no answer within {TIMEOUT} s"])
            return
        if r.returncode < 0:
            problems.append(f"killed by signal {-r.returncode}")
        elif r.returncode == 0:
            problems.append("exit status 0 for a file that cannot be replayed")
        err = r.stderr.strip()
        if not err:
            problems.append("nothing on stderr")
        if path not in err:
            problems.append(f"stderr does not name the file: {err!r}")
        for word in must_mention:
            if word.lower() not in err.lower():
                problems.append(f"stderr does not mention {word!r}: {err!r}")
        for bad in ("terminate called", "Segmentation", "Aborted", "what():"):
            if bad in r.stderr:
                problems.append(f"stderr shows a crash ({bad!r}): {err!r}")
        if len(err.splitlines()) > 3:
            problems.append(f"error is not short: {len(err.splitlines())} lines")
        self.result(name, problems)

    def expect_replay(self, name, path, frames, delivered, drops, extra=()):
        """Exit 0; the JSON report balances and has the expected counts."""
        problems = []
        try:
            r = self.run(path, "--json", *extra)
        except subprocess.TimeoutExpired:
            self.result(name, [f"no answer within {TIMEOUT} s"])
            return
        if r.returncode != 0:
            problems.append(f"exit status {r.returncode}: {r.stderr.strip()!r}")
            self.result(name, problems)
            return
        try:
            out = json.loads(r.stdout)
        except ValueError as e:
            self.result(name, [f"stdout is not JSON ({e}): {r.stdout[:200]!r}"])
            return
        dropped = sum(out["drops"].values())
        if out["frames_offered"] != out["delivered"] + dropped:
            problems.append(f"does not balance: {out['frames_offered']} offered, "
                            f"{out['delivered']} delivered, {dropped} dropped")
        if out["frames_offered"] != frames:
            problems.append(f"frames_offered {out['frames_offered']}, expected {frames}")
        if out["delivered"] != delivered:
            problems.append(f"delivered {out['delivered']}, expected {delivered}")
        for reason, n in drops.items():
            if out["drops"].get(reason) != n:
                problems.append(f"drops[{reason}] = {out['drops'].get(reason)}, expected {n}")
        self.result(name, problems)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    rdmasim = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="rdmasim-bad-input-") as tmp:
        t = Runner(rdmasim, tmp)
        good = pcap_header() + pcap_record(frame(60))

        # --- cannot be replayed: a clear error ---
        t.expect_error("missing file", t.path("does-not-exist.pcap"), ["No such file"])
        os.mkdir(t.path("a-directory.pcap"))
        t.expect_error("a directory", t.path("a-directory.pcap"), ["directory"])
        t.expect_error("empty file", t.path("empty.pcap", b""))
        t.expect_error("text file", t.path("notes.pcap", b"this is not a capture\n" * 10))
        t.expect_error("cut inside the file header", t.path("cut-header.pcap", good[:10]))
        t.expect_error("pcapng cut inside the section header",
                       t.path("cut-shb.pcapng", shb()[:14]))
        t.expect_error("link type IEEE802_11_RADIO (127)",
                       t.path("wifi.pcap", pcap_header(127) + pcap_record(frame(60))),
                       ["IEEE802_11_RADIO", "not supported"])
        t.expect_error("unknown link type 65000",
                       t.path("lt65000.pcap", pcap_header(65000) + pcap_record(frame(60))),
                       ["65000", "not supported"])
        t.expect_error("pcapng whose interface carries no IP over Ethernet",
                       t.path("wifi.pcapng", shb() + idb(127) + epb(frame(60))),
                       ["IEEE802_11_RADIO", "not supported"])
        if os.geteuid() != 0:  # root reads anything
            p = t.path("unreadable.pcap", good)
            os.chmod(p, 0)
            t.expect_error("unreadable file", p, ["Permission denied"])

        # --- odd but replayable: exit 0, counters balance ---
        t.expect_replay("records longer than the snaplen are counted truncated",
                        t.path("snaplen.pcap", pcap_header(snaplen=64)
                               + pcap_record(frame(100)) + pcap_record(frame(60))),
                        frames=2, delivered=1, drops={"truncated_capture": 1})
        t.expect_replay("jumbo frames larger than the buffers are length errors",
                        t.path("jumbo.pcap", pcap_header()
                               + pcap_record(frame(9000)) + pcap_record(frame(60))
                               + pcap_record(frame(9018))),
                        frames=3, delivered=1, drops={"length_errors": 2})
        idb_options = (opt(2, b"eth0") + opt(0x7777, b"\1\2\3\4\5") + opt(2988, b"\xcc" * 7)
                       + END_OF_OPTIONS)
        epb_options = opt(1, b"hi") + opt(0x4242, b"\x09" * 3) + END_OF_OPTIONS
        t.expect_replay("pcapng with unknown blocks and options",
                        t.path("unknown-blocks.pcapng", shb()
                               + block(0x0BAD0001, b"\xee" * 10)
                               + idb(options=idb_options)
                               + block(0x80000123, b"\x11" * 33)
                               + epb(frame(64), options=epb_options)
                               + block(0x00000BAD, b"")
                               + epb(frame(68))),
                        frames=2, delivered=2, drops={})
        t.expect_replay("pcapng with several interfaces",
                        t.path("interfaces.pcapng", shb() + idb() + idb() + idb()
                               + epb(frame(60), 0) + epb(frame(100), 1)
                               + epb(frame(90), 2)),
                        frames=3, delivered=3, drops={})

        # The engine pulls a mapped capture 32 records at a time: --count
        # must still stop at its frame, mid-burst, truncated records included.
        many = pcap_header(snaplen=80) + b"".join(
            pcap_record(frame(100 if i % 10 == 3 else 60, i)) for i in range(100))
        t.expect_replay("--count 37 stops mid-burst at the 37th frame",
                        t.path("many.pcap", many), frames=37, delivered=33,
                        drops={"truncated_capture": 4}, extra=("--count", "37"))

        print(f"{t.passed} passed, {t.failed} failed")
        return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(main())
