#!/usr/bin/python3
"""Issue 13, acceptance 3: what two emulated hosts send, captured with
`--tx-capture` on both sides, is RoCE v2 as tshark and scapy read it.

usage: roce_capture_test.py RDMASIM [--wire ptp|shm]

--wire shm: the same over a shared-memory wire (shm://DIR/sock, issue 31):
the frames must be the same as on ptp://.

Runs (each side under its own `rdmasim run --wire ptp://DIR/sock
--tx-capture SIDE.pcap --stats SIDE.json`):
  ibv_rc_pingpong -s 100 / -s 4096 / -s 2100 -n 5 -c   SEND ONLY; FIRST, MIDDLE, LAST; ACKs
  ibv_ud_pingpong -s 100 -n 5 -c                       UD SEND ONLY with DETH
  ib_read_bw -n 5, ib_write_bw -n 5                    READ request and responses; WRITE, ACKs

Every frame of both captures is ARP or IPv4/UDP 4791 that tshark decodes as
InfiniBand (`-d udp.port==4791,infiniband`); the ICRC of every RoCE frame
equals scapy's RoCE contrib computation and tshark's invariant CRC field;
the RoCE frames are as many as the side's `tx_packets`. Per side, the
opcodes, PSNs (consecutive from the PSN the program printed on its "local
address" line), destination QPs, AckReq bits, AETH syndromes and MSNs, RETH
lengths, DETH Q_Keys and source QPs, pad counts and payload lengths are the
sequence the spec gives for what the program does; the pingpongs' payloads
are their buffers byte for byte (0x7b, with the 0 that `-c` writes at the
start of each page). A packet sent again (go-back-N after a loss) must
repeat the first copy's opcode; the comparison is of first copies. A READ
asked again from a lost response's PSN (for the rest of its bytes) is
answered from there, starting with READ FIRST; every PSN gets a response.

Exit 0 when all holds, 1 otherwise, 77 (skip) without tshark.
"""

import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from two_hosts import Checks, Pair, local_qpn_psn, roce_counters  # noqa: E402

from scapy.all import Ether, load_contrib, raw, rdpcap  # noqa: E402

load_contrib("roce")
from scapy.contrib.roce import BTH  # noqa: E402

ROCE_PORT = 4791
MTU = 1024  # the pingpongs' and perftest's path MTU on the default port
PSN_MOD = 1 << 24
PAGE = os.sysconf("SC_PAGESIZE")
ACK_SYNDROME = 0x1F  # ACK, credits invalid (no end-to-end flow control)
NAK_SEQ_SYNDROME = 0x60  # NAK, PSN sequence error: a packet before this one was lost
UD_QKEY = 0x11111111  # the pingpongs' Q_Key

# RC opcodes (IBA table 38); UD SEND ONLY
SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_ONLY = 0x00, 0x01, 0x02, 0x04
WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST = 0x06, 0x07, 0x08
READ_REQUEST, READ_FIRST, READ_MIDDLE, READ_LAST, READ_ONLY = 0x0C, 0x0D, 0x0E, 0x0F, 0x10
ACK = 0x11
UD_SEND_ONLY = 0x64

# Extension headers between the BTH and the payload, by opcode: RETH 16,
# AETH 4, DETH 8 (scapy's BTH payload holds them).
EXTENSION_BYTES = {WRITE_FIRST: 16, READ_REQUEST: 16, READ_FIRST: 4, READ_LAST: 4, READ_ONLY: 4, ACK: 4,
                   UD_SEND_ONLY: 8}

FIELDS = ["frame.number", "frame.protocols", "infiniband.bth.opcode", "infiniband.bth.psn",
          "infiniband.bth.destqp", "infiniband.bth.a", "infiniband.bth.padcnt", "infiniband.aeth.syndrome",
          "infiniband.aeth.msn", "infiniband.reth.dmalen", "infiniband.deth.q_key", "infiniband.deth.srcqp",
          "infiniband.invariant.crc"]

check = Checks()


def num(text):
    return None if text == "" else int(text, 0)


def decode(pcap):
    """Every frame of `pcap`: dict of the tshark fields (None when absent) plus
    `wire` (the bytes), `payload` (after the transport headers, pad and ICRC
    cut) and `icrc_ok` (scapy's ICRC equals the frame's)."""
    cmd = ["tshark", "-r", pcap, "-d", f"udp.port=={ROCE_PORT},infiniband", "--disable-protocol", "rpcordma",
           "--disable-heuristic", "mellanox_eoib", "-T", "fields", "-E", "separator=/t"]
    for f in FIELDS:
        cmd += ["-e", f]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        check(False, f"{' '.join(cmd)}: exit {res.returncode}: {res.stderr}")
        return []
    frames = []
    for line, pkt in zip(res.stdout.splitlines(), rdpcap(pcap), strict=True):
        cols = line.split("\t")
        f = {"number": int(cols[0]), "protocols": cols[1]}
        for name, text in zip(("opcode", "psn", "destqp", "ackreq", "pad", "syndrome", "msn", "dmalen",
                               "qkey", "srcqp", "tshark_icrc"), cols[2:]):
            f[name] = num(text)
        f["wire"] = raw(pkt)
        f["arp"] = f["wire"][12:14] == b"\x08\x06"
        if not f["arp"]:
            p = Ether(ip_frame(f["wire"]))
            if BTH in p:
                body = raw(p[BTH].payload)
                f["payload"] = body[EXTENSION_BYTES.get(p[BTH].opcode, 0):len(body) - p[BTH].padcount]
                f["icrc_ok"] = ip_frame(f["wire"])[-4:] == p[BTH].compute_icrc(None)
        frames.append(f)
    return frames


def ip_frame(wire):
    """An untagged IPv4 frame without its Ethernet padding."""
    total = int.from_bytes(wire[16:18], "big")
    return wire[:14 + total]


def check_frames(label, frames, stats):
    """Every frame ARP or RoCE v2 that tshark decodes, ICRC checked by scapy; returns the RoCE ones."""
    roce = []
    for f in frames:
        if f["arp"]:
            check(f["protocols"].endswith("eth:ethertype:arp"), f"{label} frame {f['number']}: ARP as tshark reads it")
            continue
        if not check(":ip:udp:infiniband" in f["protocols"] and f["opcode"] is not None,
                     f"{label} frame {f['number']}: tshark reads {f['protocols']!r}, not RoCE v2"):
            continue
        check(f.get("icrc_ok"), f"{label} frame {f['number']} (opcode {f['opcode']:#x} PSN {f['psn']}): "
                                f"ICRC {ip_frame(f['wire'])[-4:].hex()} is not scapy's")
        check(f["tshark_icrc"] == int.from_bytes(ip_frame(f["wire"])[-4:], "big"),
              f"{label} frame {f['number']}: tshark's invariant CRC {f['tshark_icrc']} is not the frame's")
        roce.append(f)
    arp = len(frames) - len(roce)
    check(arp <= 4, f"{label}: {arp} ARP frames (a request and a reply each way at most)")
    # Frames lost in the ARP wait queue never reach the wire (nor the capture).
    r = roce_counters(stats) if stats else None
    sent, lost = (r["tx_packets"], r["arp_wait"]["overflow"]) if r else (None, 0)
    check(sent == len(roce) + lost, f"{label}: {len(roce)} RoCE frames captured and {lost} lost waiting "
                                    f"for ARP, the port counted {sent} sent")
    return roce


def first_copies(label, frames):
    """The frames in order with packets sent again (same PSN) left out; a copy must repeat the opcode."""
    seen, out = {}, []
    for f in frames:
        if f["psn"] in seen:
            check(seen[f["psn"]] == f["opcode"], f"{label} frame {f['number']}: PSN {f['psn']} sent again "
                                                 f"as opcode {f['opcode']:#x}, first as {seen[f['psn']]:#x}")
            continue
        seen[f["psn"]] = f["opcode"]
        out.append(f)
    return out


def compare(label, got, want):
    """`got` frames against `want` dicts (the fields each must have); reports the first difference."""
    check(len(got) == len(want), f"{label}: {len(got)} frames, the spec gives {len(want)}")
    for i, (f, w) in enumerate(zip(got, want)):
        diff = {k: (f.get(k), v) for k, v in w.items() if f.get(k) != v}
        if not check(not diff, f"{label}: frame {f['number']} (#{i}): (got, expected) {diff}"):
            return
    print(f"  {label}: {len(got)} frames as the spec gives them")


def segments(size, mtu=MTU):
    """Payload lengths of a message's packets."""
    n = max(1, -(-size // mtu))
    return [mtu] * (n - 1) + [size - mtu * (n - 1)]


def opcodes(first, middle, last, only, n):
    return [only] if n == 1 else [first] + [middle] * (n - 2) + [last]


def pingpong_buffer(size):
    """What the pingpongs send with -c: their 0x7b buffer with 0 at the start of each page."""
    b = bytearray(b"\x7b" * size)
    for i in range(0, size, PAGE):
        b[i] = 0
    return bytes(b)


def rc_pingpong_side(label, frames, me, peer, size, iters):
    """One side's SENDs (each message's packets at consecutive PSNs) and its ACKs for the peer's."""
    data = first_copies(label + " SENDs", [f for f in frames if f["opcode"] != ACK])
    acks = first_copies(label + " ACKs", [f for f in frames if f["opcode"] == ACK])
    lens = segments(size)
    ops = opcodes(SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_ONLY, len(lens))
    want = []
    for m in range(iters):
        for j, (op, n) in enumerate(zip(ops, lens)):
            want.append({"opcode": op, "psn": (me[1] + m * len(lens) + j) % PSN_MOD, "destqp": peer[0],
                         "ackreq": int(j == len(lens) - 1), "pad": (4 - n % 4) % 4})
    compare(label + " SENDs", data, want)
    payload = b"".join(f.get("payload", b"") for f in data)
    check(payload == pingpong_buffer(size) * iters,
          f"{label}: the SEND payloads are not the pingpong's buffer ({len(payload)} bytes)")
    compare(label + " ACKs", acks, [{"opcode": ACK, "psn": (peer[1] + (m + 1) * len(lens) - 1) % PSN_MOD,
                                     "destqp": peer[0], "syndrome": ACK_SYNDROME, "msn": m + 1}
                                    for m in range(iters)])


def ud_pingpong_side(label, frames, me, peer, size, iters):
    want = [{"opcode": UD_SEND_ONLY, "psn": (me[1] + m) % PSN_MOD, "destqp": peer[0], "qkey": UD_QKEY,
             "srcqp": me[0], "pad": (4 - size % 4) % 4} for m in range(iters)]
    compare(label + " UD SENDs", frames, want)
    check(all(f.get("payload") == pingpong_buffer(size) for f in frames),
          f"{label}: a UD payload is not the pingpong's {size}-byte buffer")


def read_bw_sides(frames, me, peer, size, iters):
    """ib_read_bw: the client's READ requests, the server's responses.

    After a lost response the requester asks again from the first PSN it
    misses (a READ request at that PSN for the rest of the bytes), and the
    responder answers from there, starting with READ FIRST (or ONLY)."""
    n = len(segments(size))
    base = me["client"][1]
    firsts = {(base + m * n) % PSN_MOD: m for m in range(iters)}
    originals, retries = [], {}
    for f in frames["client"]:
        off = (f["psn"] - base) % PSN_MOD
        if f["psn"] in firsts and f["psn"] not in {o["psn"] for o in originals}:
            originals.append(f)
        elif check(f["opcode"] == READ_REQUEST and off < iters * n and f["dmalen"] == (n - off % n) * MTU,
                   f"client frame {f['number']}: READ request again at PSN {f['psn']} for {f['dmalen']} bytes, "
                   f"not the rest of a READ ({(n - off % n) * MTU} bytes)"):
            retries[f["psn"]] = f
    compare("client READ requests", originals,
            [{"opcode": READ_REQUEST, "psn": (base + m * n) % PSN_MOD, "destqp": peer["client"][0],
              "dmalen": size} for m in range(iters)])
    covered = set()
    for f in frames["server"]:
        off = (f["psn"] - base) % PSN_MOD
        j = off % n
        ops = {opcodes(READ_FIRST, READ_MIDDLE, READ_LAST, READ_ONLY, n)[j] if off < iters * n else None}
        if f["psn"] in retries:
            ops.add(READ_ONLY if j == n - 1 else READ_FIRST)
        elif j > 0 and any(0 < (f["psn"] - r) % PSN_MOD <= j for r in retries):
            ops.add(READ_LAST if j == n - 1 else READ_MIDDLE)
        aeth = f["opcode"] != READ_MIDDLE
        check(f["opcode"] in ops and f["destqp"] == peer["server"][0] and len(f.get("payload", b"")) == MTU
              and (not aeth or f["syndrome"] == ACK_SYNDROME),
              f"server frame {f['number']}: opcode {f['opcode']:#x} PSN {f['psn']} to QP {f['destqp']:#x}, "
              f"{len(f.get('payload', b''))} bytes, syndrome {f['syndrome']}: expected one of "
              f"{sorted(o for o in ops if o is not None)} with {MTU} bytes")
        covered.add(off)
    check(covered == set(range(iters * n)),
          f"server: the READ responses cover {len(covered)} of the {iters * n} PSNs")
    print(f"  server READ responses: {len(frames['server'])} frames for {iters * n} PSNs, every PSN answered; "
          f"{len(retries)} READ request(s) sent again after a loss")


def write_bw_sides(frames, me, peer, size, iters):
    """ib_write_bw: the client's WRITEs at consecutive PSNs; the server's (coalesced) ACKs."""
    n = len(segments(size))
    writes = first_copies("client WRITEs", frames["client"])
    want = []
    for m in range(iters):
        for j, op in enumerate(opcodes(WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST, None, n)):
            w = {"opcode": op, "psn": (me["client"][1] + m * n + j) % PSN_MOD, "destqp": peer["client"][0]}
            if op == WRITE_FIRST:
                w["dmalen"] = size
            if op == WRITE_LAST:
                w["ackreq"] = 1
            want.append(w)
    compare("client WRITEs", writes, want)
    acks = frames["server"]
    first, last = me["client"][1], (me["client"][1] + iters * n - 1) % PSN_MOD
    offsets = [(f["psn"] - first) % PSN_MOD for f in acks]
    # A WRITE packet the wire lost (a full peer queue on a loaded machine, as
    # ib_read_bw's lost responses above) is answered by a sequence-error NAK,
    # and the client sends the rest again (first_copies keeps the first copy).
    naks = [f for f in acks if f["syndrome"] == NAK_SEQ_SYNDROME]
    check(acks and all(f["opcode"] == ACK and f["syndrome"] in (ACK_SYNDROME, NAK_SEQ_SYNDROME)
                       and f["destqp"] == peer["server"][0] for f in acks),
          "server: only ACKs (syndrome 0x1f), or sequence-error NAKs (0x60) after a loss, to the client's QP")
    check(not naks or len(frames["client"]) > len(writes),
          f"server: {len(naks)} sequence-error NAK(s), but the client sent no WRITE again")
    check(offsets == sorted(offsets) and all(o < iters * n for o in offsets),
          f"server: ACK PSNs {[f['psn'] for f in acks]} are not increasing within the WRITEs' {first}..{last}")
    check(acks and acks[-1]["psn"] == last and acks[-1]["msn"] == iters,
          f"server: the last ACK is not for PSN {last} with MSN {iters}")
    print(f"  server ACKs: {len(acks) - len(naks)} for {iters} WRITEs of {n} packets, the last for PSN {last}, "
          f"MSN {iters}; {len(naks)} sequence-error NAK(s) after a loss")


def run(rdmasim, tmp, tag, args):
    """Runs the pair with both captures; returns (frames by side, (QPN, PSN) by side, peer's by side)."""
    caps = {side: os.path.join(tmp, tag + "-" + side + ".pcap") for side in ("server", "client")}
    pair = Pair(rdmasim, tmp, tag, args, server_opts=["--tx-capture", caps["server"]],
                client_opts=["--tx-capture", caps["client"]], scheme=SCHEME)
    pair.run()
    what = " ".join(args)
    if not check(pair.server.rc == 0 and pair.client.rc == 0,
                 f"{what}: server and client exit 0 (got {pair.server.rc}, {pair.client.rc})"):
        print(pair.show())
        return None
    me, peer, frames = {}, {}, {}
    for side, prog in (("server", pair.server), ("client", pair.client)):
        addresses = local_qpn_psn(prog.stdout)
        if not check(len(addresses) == 1, f"{what}: the {side} prints one 'local address ... PSN' line"):
            print(pair.show())
            return None
        me[side] = addresses[0]
        frames[side] = check_frames(f"{what}: {side}", decode(caps[side]), pair.stats(side))
    peer = {"server": me["client"], "client": me["server"]}
    print(f"{what}: server QPN {me['server'][0]:#x} PSN {me['server'][1]:#x}, "
          f"client QPN {me['client'][0]:#x} PSN {me['client'][1]:#x}; "
          f"{len(frames['server'])} + {len(frames['client'])} RoCE frames, every ICRC checked")
    return frames, me, peer


SCHEME = "ptp"  # the wire: --wire


def main():
    global SCHEME
    argv = sys.argv[1:]
    if len(argv) == 3 and argv[1] == "--wire" and argv[2] in ("ptp", "shm"):
        SCHEME = argv[2]
        argv = argv[:1]
    if len(argv) != 1:
        print(__doc__)
        return 2
    rdmasim = argv[0]
    if shutil.which("tshark") is None:
        print("SKIP: tshark not installed (Debian package tshark; tools/dev installs it)")
        return 77
    with tempfile.TemporaryDirectory(prefix="roce-capture-") as tmp:
        for size in (100, 4096, 2100):
            iters = 5
            got = run(rdmasim, tmp, f"rc-{size}", ["ibv_rc_pingpong", "-g", "0", "-d", "rdmasim0", "-s", str(size),
                                                   "-n", str(iters), "-c"])
            if got:
                frames, me, peer = got
                for side in ("server", "client"):
                    rc_pingpong_side(f"rc -s {size} {side}", frames[side], me[side], peer[side], size, iters)
        got = run(rdmasim, tmp, "ud-100", ["ibv_ud_pingpong", "-g", "0", "-d", "rdmasim0", "-s", "100", "-n", "5",
                                           "-c"])
        if got:
            frames, me, peer = got
            for side in ("server", "client"):
                ud_pingpong_side(f"ud -s 100 {side}", frames[side], me[side], peer[side], 100, 5)
        got = run(rdmasim, tmp, "read-bw", ["ib_read_bw", "-d", "rdmasim0", "-x", "0", "-n", "5"])
        if got:
            read_bw_sides(*got, 65536, 5)
        got = run(rdmasim, tmp, "write-bw", ["ib_write_bw", "-d", "rdmasim0", "-x", "0", "-n", "5"])
        if got:
            write_bw_sides(*got, 65536, 5)
    return check.report()


if __name__ == "__main__":
    sys.exit(main())
