#!/usr/bin/python3
"""The RoCE transport's frames, decoded by independent implementations.

Usage: /usr/bin/python3 tests/tools/roce_transport_test.py ROCE_CONVERSATION

ROCE_CONVERSATION is build/tests/datapath/roce_conversation
(tests/datapath/roce_conversation.cpp): two RC QPs and two UD QPs run a
scripted conversation and every frame sent is written to a pcap. This test
holds what the IB spec says that conversation must look like on the wire,
written out by hand below, and checks the file against it:

1. tshark decodes every frame as InfiniBand over UDP 4791 with the expected
   opcode, PSN, destination QP, AckReq bit, AETH syndrome and MSN.
2. scapy's RoCE layer recomputes every ICRC; the UDP source port is the one
   Linux derives from the two QPNs.

Exits 0 when all holds, 1 on the first difference, 77 (skip) without tshark.
"""

import os
import shutil
import subprocess
import sys
import tempfile

from scapy.all import Ether, UDP, rdpcap, raw, load_contrib  # noqa: E402

load_contrib("roce")
from scapy.contrib.roce import BTH  # noqa: E402

ROCE_PORT = 4791
A, B, UD_DEST = 0x11, 0x22, 0x44
ACK = 0x1F  # ACK, credit count "invalid"
SEQ_NAK = 0x60  # NAK, PSN sequence error
RNR_NAK_10US = 0x21  # RNR NAK, timer code 1 (10 us)

# (opcode, PSN, destination QP, AckReq, AETH syndrome or None, MSN or None)
EXPECTED = [
    # A 2500-byte SEND at MTU 1024: FIRST, MIDDLE, LAST (AckReq); one ACK.
    (0x00, 100, B, 0, None, None),
    (0x01, 101, B, 0, None, None),
    (0x02, 102, B, 1, None, None),
    (0x11, 102, A, 0, ACK, 1),
    # A 1500-byte WRITE with immediate: FIRST (RETH), LAST with immediate.
    (0x06, 103, B, 0, None, None),
    (0x09, 104, B, 1, None, None),
    (0x11, 104, A, 0, ACK, 2),
    # A 3000-byte READ: one request, three responses on PSNs 105..107.
    (0x0C, 105, B, 1, None, None),
    (0x0D, 105, A, 0, ACK, 3),
    (0x0E, 106, A, 0, None, None),
    (0x0F, 107, A, 0, ACK, 3),
    # FETCH_ADD and its atomic ACK.
    (0x14, 108, B, 1, None, None),
    (0x12, 108, A, 0, ACK, 4),
    # A 3000-byte SEND whose MIDDLE (110) is lost: the LAST draws a NAK
    # sequence error for 110; MIDDLE and LAST again; an ACK.
    (0x00, 109, B, 0, None, None),
    (0x01, 110, B, 0, None, None),
    (0x02, 111, B, 1, None, None),
    (0x11, 110, A, 0, SEQ_NAK, 4),
    (0x01, 110, B, 0, None, None),
    (0x02, 111, B, 1, None, None),
    (0x11, 111, A, 0, ACK, 5),
    # A SEND with no receive WQE: RNR NAK (10 us), the SEND again, an ACK.
    (0x04, 112, B, 1, None, None),
    (0x11, 112, A, 0, RNR_NAK_10US, 5),
    (0x04, 112, B, 1, None, None),
    (0x11, 112, A, 0, ACK, 6),
    # UD SEND_ONLY with a DETH (no AckReq, no ACK).
    (0x64, 7, UD_DEST, 0, None, None),
]


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def flow_label(lqpn, rqpn):
    """Linux's rdma_calc_flow_label, as the README of net/ describes it."""
    v = lqpn * rqpn
    v ^= v >> 20
    v ^= v >> 40
    return v & 0xFFFFF


def udp_sport(fl):
    """Linux's rdma_flow_label_to_udp_sport."""
    fl_low = fl & 0x03FFF
    fl_high = fl & 0xFC000
    fl_low ^= fl_high >> 14
    return fl_low | 0xC000


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    if shutil.which("tshark") is None:
        print("SKIP: tshark is not installed")
        sys.exit(77)
    with tempfile.TemporaryDirectory() as tmp:
        pcap = os.path.join(tmp, "conversation.pcap")
        subprocess.run([sys.argv[1], pcap], check=True)
        cmd = ["tshark", "-r", pcap, "-d", f"udp.port=={ROCE_PORT},infiniband",
               "--disable-protocol", "rpcordma", "--disable-heuristic", "mellanox_eoib",
               "-T", "fields", "-E", "separator=,", "-e", "frame.protocols",
               "-e", "infiniband.bth.opcode", "-e", "infiniband.bth.psn",
               "-e", "infiniband.bth.destqp", "-e", "infiniband.bth.a",
               "-e", "infiniband.aeth.syndrome", "-e", "infiniband.aeth.msn"]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            fail(f"{' '.join(cmd)}: exit {res.returncode}: {res.stderr}")
        lines = res.stdout.splitlines()
        if len(lines) != len(EXPECTED):
            fail(f"tshark decoded {len(lines)} frames, expected {len(EXPECTED)}:\n{res.stdout}")
        for n, (line, exp) in enumerate(zip(lines, EXPECTED), 1):
            protos, opcode, psn, dqp, ackreq, syn, msn = line.split(",")
            if ":udp:infiniband" not in protos:
                fail(f"frame {n}: protocols {protos!r}, expected ...:udp:infiniband")
            got = (int(opcode), int(psn), int(dqp, 0), int(ackreq in ("1", "True")),
                   int(syn) if syn else None, int(msn) if msn else None)
            if got != exp:
                fail(f"frame {n}: (opcode, psn, destqp, ackreq, syndrome, msn) = {got}, "
                     f"expected {exp}")
        print(f"tshark: {len(lines)} frames, the conversation the spec gives")

        for n, pkt in enumerate(rdpcap(pcap), 1):
            wire = raw(pkt)
            total = int.from_bytes(wire[16:18], "big")
            p = Ether(wire[:14 + total])
            if BTH not in p:
                fail(f"frame {n}: scapy finds no BTH")
            datagram = wire[14:14 + total]
            if p[BTH].compute_icrc(None) != datagram[-4:]:
                fail(f"frame {n}: ICRC {datagram[-4:].hex()} is not scapy's")
            dqp = p[BTH].dqpn
            src_qp = {B: A, A: B}.get(dqp)
            if src_qp is not None and p[UDP].sport != udp_sport(flow_label(src_qp, dqp)):
                fail(f"frame {n}: UDP source port {p[UDP].sport:#x}")
        print("scapy: every ICRC matches, UDP source ports as Linux derives them")


if __name__ == "__main__":
    main()
