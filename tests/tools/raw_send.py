#!/usr/bin/python3
"""A verbs program that sends frames on a raw-packet QP of rdmasim0 (run it
under `rdmasim run`): PD, CQ, raw-packet QP moved RESET -> INIT -> RTR -> RTS,
one MR holding every frame, one signalled IBV_WR_SEND per frame, then every
completion polled and checked.

usage: raw_send.py FRAMES.hex   (one frame per line, in hex)
Exit 0 when every send completed with IBV_WC_SUCCESS, 1 otherwise.
"""
import sys
import time

import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, SendWR

frames = [bytes.fromhex(line) for line in open(sys.argv[1]) if line.strip()]

with d.Context(name="rdmasim0") as ctx:
    pd = PD(ctx)
    cq = CQ(ctx, 2 * len(frames))
    cap = QPCap(max_send_wr=len(frames), max_recv_wr=1, max_send_sge=1, max_recv_sge=1)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RAW_PACKET, scq=cq, rcq=cq, cap=cap))
    qp.modify(QPAttr(qp_state=e.IBV_QPS_INIT, port_num=1), e.IBV_QP_STATE | e.IBV_QP_PORT)
    qp.modify(QPAttr(qp_state=e.IBV_QPS_RTR), e.IBV_QP_STATE)
    qp.modify(QPAttr(qp_state=e.IBV_QPS_RTS), e.IBV_QP_STATE)

    blob = b"".join(frames)
    mr = MR(pd, max(1, len(blob)), e.IBV_ACCESS_LOCAL_WRITE)
    mr.write(blob, len(blob))
    offset = 0
    for i, frame in enumerate(frames):
        qp.post_send(SendWR(wr_id=i, opcode=e.IBV_WR_SEND, num_sge=1,
                            sg=[SGE(mr.buf + offset, len(frame), mr.lkey)],
                            send_flags=e.IBV_SEND_SIGNALED))
        offset += len(frame)

    done = []
    deadline = time.monotonic() + 10
    while len(done) < len(frames) and time.monotonic() < deadline:
        n, wcs = cq.poll(len(frames))
        done += wcs[:n]
    bad = [wc for wc in done if wc.status != e.IBV_WC_SUCCESS or wc.opcode != e.IBV_WC_SEND]
    print(f"raw_send: {len(frames)} frames posted, {len(done)} completions, {len(bad)} bad")
    sys.exit(0 if len(done) == len(frames) and not bad else 1)
