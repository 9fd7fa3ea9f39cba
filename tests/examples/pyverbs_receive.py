#!/usr/bin/python3
"""Receive Ethernet frames on a raw-packet QP with pyverbs (python3-pyverbs).

Run it under rdmasim, which feeds the device from a capture:

    build/tools/rdmasim run --deterministic --pcap tests/data/sample.pcap -- \\
        /usr/bin/python3 tests/examples/pyverbs_receive.py --frames 393

--deterministic lets the program set the pace: a frame arrives when a poll
finds the CQ empty. Without it the capture plays at full speed, faster than
Python polls, and the frames beyond the posted WQEs are dropped
(rx_out_of_buffer), as a NIC drops them.

It prints the first frames (length, addresses, EtherType) and a summary line:
"received N frames, E error completions". Exit status 0 when N + E reached
--frames, 1 when the capture went quiet first (--idle-ms), 2 on bad usage.
"""
import argparse
import struct
import sys
import time

import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.cq import CQ
from pyverbs.flow import Flow, FlowAttr
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR

BUF = 2048   # bytes per receive buffer: a frame longer than this completes with LOC_LEN_ERR
DEPTH = 64   # receive WQEs kept posted


def mac(b):
    return ":".join(f"{x:02x}" for x in b)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="rdmasim0")
    ap.add_argument("--frames", type=int, default=10, help="stop after this many completions")
    ap.add_argument("--show", type=int, default=5, help="print this many frames")
    ap.add_argument("--idle-ms", type=int, default=3000, help="give up after this long without one")
    a = ap.parse_args()

    # 1. The device, a protection domain and one CQ for both queues.
    with d.Context(name=a.device) as ctx:
        pd = PD(ctx)
        cq = CQ(ctx, DEPTH)
        # 2. A raw-packet QP. Handing pyverbs a QPAttr moves it through INIT
        #    and RTR to RTS, which is what a raw QP needs to receive (RTR) and send (RTS).
        init = QPInitAttr(qp_type=e.IBV_QPT_RAW_PACKET, scq=cq, rcq=cq,
                          cap=QPCap(max_send_wr=1, max_recv_wr=DEPTH, max_recv_sge=1))
        qp = QP(pd, init, QPAttr(port_num=1))
        # 3. One registered buffer, cut into DEPTH slots; WQE i owns slot i (wr_id = i).
        mr = MR(pd, BUF * DEPTH, e.IBV_ACCESS_LOCAL_WRITE)

        def post(i):
            qp.post_recv(RecvWR(wr_id=i, num_sge=1, sg=[SGE(mr.buf + i * BUF, BUF, mr.lkey)]))

        for i in range(DEPTH):
            post(i)
        # 4. A flow rule with no specs catches every frame of the port. Under
        #    `rdmasim run` the replay starts when the first flow is attached.
        flow = Flow(qp, FlowAttr(port=1))

        # 5. Poll, read each frame out of its slot, re-post the slot.
        received = errors = 0
        last = time.monotonic()
        while received + errors < a.frames:
            n, wcs = cq.poll(num_entries=DEPTH)
            if n == 0:
                if (time.monotonic() - last) * 1000 > a.idle_ms:
                    break
                time.sleep(0.0005)
                continue
            last = time.monotonic()
            for wc in wcs:
                if wc.status != e.IBV_WC_SUCCESS:
                    errors += 1   # e.g. IBV_WC_LOC_LEN_ERR: the frame did not fit in BUF
                else:
                    received += 1
                    if received <= a.show:
                        frame = mr.read(wc.byte_len, wc.wr_id * BUF)
                        ethertype, = struct.unpack_from("!H", frame, 12)
                        print(f"frame {received}: {wc.byte_len} bytes, {mac(frame[6:12])} -> "
                              f"{mac(frame[0:6])}, ethertype {ethertype:#06x}")
                post(wc.wr_id)
        print(f"received {received} frames, {errors} error completions")
        # 6. Teardown in reverse order (pyverbs would also close them with the context).
        for obj in (flow, qp, mr, cq, pd):
            obj.close()
    return 0 if received + errors >= a.frames else 1


if __name__ == "__main__":
    sys.exit(main())
