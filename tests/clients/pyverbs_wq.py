#!/usr/bin/python3
"""pyverbs on rdmasim (run under `rdmasim run`): open rdmasim0, create a PD,
a CQ and a WQ with all four creation flags, move it to RDY, post receives,
fill the ring, then drive it to ERR and read every WR back as a flush."""
import errno
import sys

import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.wq import WQ, WQAttr, WQInitAttr
from pyverbs.wr import SGE, RecvWR

checks = 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        print(f"FAIL: {what}")
        print(f"{checks - 1} passed, 1 failed")
        sys.exit(1)


names = [dev.name.decode() for dev in d.get_device_list()]
check("rdmasim0" in names, f"rdmasim0 listed (got {names})")

with d.Context(name="rdmasim0") as ctx:
    attr = ctx.query_device_ex()
    caps = attr.raw_packet_caps
    for bit in (e.IBV_RAW_PACKET_CAP_CVLAN_STRIPPING, e.IBV_RAW_PACKET_CAP_SCATTER_FCS,
                e.IBV_RAW_PACKET_CAP_DELAY_DROP):
        check(caps & bit, f"raw_packet_caps has {bit:#x}")
    check(attr.device_cap_flags_ex & e._IBV_DEVICE_PCI_WRITE_END_PADDING, "end padding capability")

    pd = PD(ctx)
    cq = CQ(ctx, 64)
    flags = (e.IBV_WQ_FLAGS_CVLAN_STRIPPING | e.IBV_WQ_FLAGS_SCATTER_FCS |
             e.IBV_WQ_FLAGS_DELAY_DROP | e.IBV_WQ_FLAGS_PCI_WRITE_END_PADDING)
    wia = WQInitAttr(wq_context=None, wq_pd=pd, wq_cq=cq, wq_type=e.IBV_WQT_RQ, max_wr=16,
                     max_sge=1, comp_mask=e.IBV_WQ_INIT_ATTR_FLAGS, create_flags=flags)
    wq = WQ(ctx, wia)

    # A reserved creation flag is refused, as device/README.md, "Work queues", says.
    bad = WQInitAttr(wq_context=None, wq_pd=pd, wq_cq=cq, wq_type=e.IBV_WQT_RQ, max_wr=16,
                     max_sge=1, comp_mask=e.IBV_WQ_INIT_ATTR_FLAGS, create_flags=1 << 4)
    try:
        WQ(ctx, bad)
        check(False, "reserved WQ flag refused")
    except PyverbsRDMAError as ex:
        check(ex.error_code == errno.EOPNOTSUPP, f"reserved flag -> EOPNOTSUPP (got {ex.error_code})")

    wq.modify(WQAttr(attr_mask=e.IBV_WQ_ATTR_STATE, wq_state=e.IBV_WQS_RDY))
    mr = MR(pd, 16 * 2048, e.IBV_ACCESS_LOCAL_WRITE)
    for i in range(16):
        wq.post_recv(RecvWR(wr_id=i, num_sge=1, sg=[SGE(mr.buf + i * 2048, 2048, mr.lkey)]))
    try:
        wq.post_recv(RecvWR(wr_id=99, num_sge=1, sg=[SGE(mr.buf, 2048, mr.lkey)]))
        check(False, "a 17th WQE on a 16-entry ring is refused")
    except PyverbsRDMAError as ex:
        check(ex.error_code == errno.ENOMEM, f"full ring -> ENOMEM (got {ex.error_code})")

    # ERR flushes every outstanding WQE, in posting order.
    wq.modify(WQAttr(attr_mask=e.IBV_WQ_ATTR_STATE, wq_state=e.IBV_WQS_ERR))
    got = []
    for _ in range(100):
        n, wcs = cq.poll(16)
        got += wcs[:n]
        if len(got) >= 16:
            break
    check(len(got) == 16, f"16 flush completions (got {len(got)})")
    check([wc.wr_id for wc in got] == list(range(16)), "flushed in posting order")
    check(all(wc.status == e.IBV_WC_WR_FLUSH_ERR for wc in got), "status IBV_WC_WR_FLUSH_ERR")

    # ERR -> RDY is illegal.
    try:
        wq.modify(WQAttr(attr_mask=e.IBV_WQ_ATTR_STATE, wq_state=e.IBV_WQS_RDY))
        check(False, "ERR -> RDY refused")
    except PyverbsRDMAError as ex:
        check(ex.error_code == errno.EINVAL, f"ERR -> RDY -> EINVAL (got {ex.error_code})")

    for obj in (wq, mr, cq, pd):
        obj.close()

print(f"{checks} passed, 0 failed")
