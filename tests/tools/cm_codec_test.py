#!/usr/bin/python3
"""CM MADs of net/cm_mad.* read back by tshark's InfiniBand dissector.

Usage: /usr/bin/python3 tests/tools/cm_codec_test.py CM_FRAMES

CM_FRAMES is build/tests/net/cm_frames (tests/net/cm_frames.cpp). It writes
one RoCE v2 frame per CM message (REQ over IPv4 and over IPv6, MRA, REJ,
REP, RTU, DREQ, DREP, SIDR_REQ, SIDR_REP), each a UD SEND ONLY to QP1 with
DETH Q_Key 0x80010000 and source QP 1 around a 256-byte MAD, and lists
what each carries. tshark decodes the file as InfiniBand over UDP 4791 and
must find, for every frame, the GSI addressing, the CM MAD header (base
version 1, class 0x07, class version 2, Send, the transaction ID), the
message type, and the message's fields:

* REQ, REP, REJ, RTU, DREQ, DREP: from tshark's CM fields, rdma_cm's IP
  header in the REQ's private data included. Wireshark 4.0 reads a REQ's
  primary flow label from 3 bytes and its packet rate from the flow label's
  first byte (the IBA has a 20-bit label and 6 reserved bits in one word,
  the rate in its last byte): those two are checked on the raw MAD bytes.
* MRA, SIDR_REQ, SIDR_REP: Wireshark 4.0 names them ("Dissector Not
  Implemented") without fields; their fields are read here from tshark's
  raw MAD data at the IBA's offsets (tables 107, 119 and 120).

Exits 0 when all holds, 1 on the first difference, 77 (skip) without tshark.
"""

import shutil
import subprocess
import sys
import tempfile
import os

ROCE_PORT = 4791

# tshark's Info column for each attribute.
INFO = {
    "REQ": "CM: ConnectRequest", "MRA": "CM: MsgRcptAck", "REJ": "CM: ConnectReject",
    "REP": "CM: ConnectReply", "RTU": "CM: ReadyToUse", "DREQ": "CM: DisconnectRequest",
    "DREP": "CM: DisconnectReply", "SIDR_REQ": "CM: ServiceIDResReq",
    "SIDR_REP": "CM: ServiceIDResReqResp",
}
ATTR_ID = {"REQ": 0x10, "MRA": 0x11, "REJ": 0x12, "REP": 0x13, "RTU": 0x14, "DREQ": 0x15,
           "DREP": 0x16, "SIDR_REQ": 0x17, "SIDR_REP": 0x18}

COMMON = {
    "protocols": "frame.protocols", "info": "_ws.col.Info",
    "opcode": "infiniband.bth.opcode", "destqp": "infiniband.bth.destqp",
    "qkey": "infiniband.deth.q_key", "srcqp": "infiniband.deth.srcqp",
    "base_version": "infiniband.mad.baseversion", "mgmt_class": "infiniband.mad.mgmtclass",
    "class_version": "infiniband.mad.classversion", "method": "infiniband.mad.method",
    "tid": "infiniband.mad.transactionid", "attr_id": "infiniband.mad.attributeid",
    "data": "infiniband.mad.data",
}
# Our name -> tshark's field, per message (values compared as integers).
FIELDS = {
    "REQ": {
        "local_comm_id": "infiniband.cm.req", "service_id": "infiniband.cm.req.serviceid",
        "local_ca_guid": "infiniband.cm.req.localcaguid", "local_qpn": "infiniband.cm.req.localqpn",
        "responder_resources": "infiniband.cm.req.responderres",
        "initiator_depth": "infiniband.cm.req.initdepth",
        "remote_cm_response_timeout": "infiniband.cm.req.remoteresptout",
        "e2e": "infiniband.cm.req.e2eflowctrl", "starting_psn": "infiniband.cm.req.startpsn",
        "local_cm_response_timeout": "infiniband.cm.req.localresptout",
        "retry_count": "infiniband.cm.req.retrcount", "pkey": "infiniband.cm.req.pkey",
        "path_mtu": "infiniband.cm.req.pppmtu", "rnr_retry_count": "infiniband.cm.req.rnrretrcount",
        "max_cm_retries": "infiniband.cm.req.maxcmretr",
        "traffic_class": "infiniband.cm.req.prim_tfcclass",
        "hop_limit": "infiniband.cm.req.prim_hoplim", "sl": "infiniband.cm.req.prim_sl",
        "local_ack_timeout": "infiniband.cm.req.prim_localacktout",
        "ip_version": "infiniband.cm.req.ip_cm.ipv", "cma_port": "infiniband.cm.req.ip_cm.sport",
    },
    "REP": {
        "local_comm_id": "infiniband.cm.rep", "remote_comm_id": "infiniband.cm.rep.remotecommid",
        "local_qkey": "infiniband.cm.rep.localqkey", "local_qpn": "infiniband.cm.rep.localqpn",
        "starting_psn": "infiniband.cm.rep.startpsn",
        "responder_resources": "infiniband.cm.rep.respres",
        "initiator_depth": "infiniband.cm.rep.initdepth",
        "target_ack_delay": "infiniband.cm.rep.tgtackdelay",
        "failover_accepted": "infiniband.cm.rep.failoveracc", "e2e": "infiniband.cm.rep.e2eflowctrl",
        "rnr_retry_count": "infiniband.cm.rep.rnrretrcount", "srq": "infiniband.cm.rep.srq",
        "local_ca_guid": "infiniband.cm.rep.localcaguid",
    },
    "REJ": {
        "local_comm_id": "infiniband.cm.rej.localcommid",
        "remote_comm_id": "infiniband.cm.rej.remotecommid",
        "message_rejected": "infiniband.cm.rej.msgrej", "reason": "infiniband.cm.rej.reason",
    },
    "RTU": {"local_comm_id": "infiniband.cm.rtu.localcommid",
            "remote_comm_id": "infiniband.cm.rtu.remotecommid"},
    "DREQ": {"local_comm_id": "infiniband.cm.dreq.localcommid",
             "remote_comm_id": "infiniband.cm.dreq.remotecommid",
             # Wireshark names the DREQ's field under "req".
             "remote_qpn_eecn": "infiniband.cm.req.remoteqpneecn"},
    "DREP": {"local_comm_id": "infiniband.cm.drsp.localcommid",
             "remote_comm_id": "infiniband.cm.drsp.remotecommid"},
}
# Fields read from the raw CM data (MAD byte 24 on): (first byte, bytes,
# mask, shift) after the IBA's tables, for what Wireshark 4.0 does not decode.
RAW = {
    "REQ": {"flow_label": (88, 4, 0xFFFFF000, 12), "packet_rate": (91, 1, 0x3F, 0)},
    "MRA": {"local_comm_id": (0, 4, None, 0), "remote_comm_id": (4, 4, None, 0),
            "message_mraed": (8, 1, 0xC0, 6), "service_timeout": (9, 1, 0xF8, 3)},
    "SIDR_REQ": {"request_id": (0, 4, None, 0), "pkey": (4, 2, None, 0),
                 "service_id": (8, 8, None, 0)},
    "SIDR_REP": {"request_id": (0, 4, None, 0), "status": (4, 1, None, 0),
                 "qpn": (8, 3, None, 0), "service_id": (12, 8, None, 0),
                 "qkey": (20, 4, None, 0)},
}


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def written(tool, pcap):
    """[(n, attr, {field: int})] as cm_frames lists them."""
    out = subprocess.run([tool, "write", pcap], check=True, capture_output=True, text=True).stdout
    frames = []
    for line in out.splitlines():
        n, attr, *pairs = line.split()
        frames.append((int(n), attr, {k: int(v) for k, v in (p.split("=") for p in pairs)}))
    if sorted({attr for _, attr, _ in frames}) != sorted(INFO):
        fail(f"cm_frames wrote {[a for _, a, _ in frames]}, expected one of each CM message")
    return frames


def tshark_rows(pcap, columns):
    cmd = ["tshark", "-r", pcap, "-d", f"udp.port=={ROCE_PORT},infiniband", "-T", "fields",
           "-E", "separator=/t"]
    for field in columns:
        cmd += ["-e", field]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        fail(f"{' '.join(cmd)}: exit {res.returncode}: {res.stderr}")
    return [dict(zip(columns, line.split("\t"))) for line in res.stdout.splitlines()]


def number(text, what):
    if text == "":
        fail(f"{what}: tshark shows no value")
    return int(text, 0)


def check_common(n, attr, fields, row):
    if not row["frame.protocols"].endswith(":udp:infiniband"):
        fail(f"frame {n}: protocols {row['frame.protocols']!r}")
    if row["_ws.col.Info"] != INFO[attr]:
        fail(f"frame {n}: tshark calls it {row['_ws.col.Info']!r}, expected {INFO[attr]!r}")
    expected = {"infiniband.bth.opcode": 100, "infiniband.bth.destqp": 1,
                "infiniband.deth.q_key": 0x80010000, "infiniband.deth.srcqp": 1,
                "infiniband.mad.baseversion": 1, "infiniband.mad.mgmtclass": 7,
                "infiniband.mad.classversion": 2, "infiniband.mad.method": 3,
                "infiniband.mad.transactionid": fields["tid"],
                "infiniband.mad.attributeid": ATTR_ID[attr]}
    for field, value in expected.items():
        if number(row[field], f"frame {n} {field}") != value:
            fail(f"frame {n} ({attr}): {field} is {row[field]}, expected {value:#x}")


def check_fields(n, attr, fields, row):
    checked = 0
    for ours, theirs in FIELDS.get(attr, {}).items():
        if number(row[theirs], f"frame {n} {theirs}") != fields[ours]:
            fail(f"frame {n} ({attr}): tshark's {theirs} is {row[theirs]}, "
                 f"cm_frames wrote {ours}={fields[ours]}")
        checked += 1
    data = bytes.fromhex(row["infiniband.mad.data"])
    if len(data) != 232:
        fail(f"frame {n}: {len(data)} bytes of MAD data, expected 232")
    for ours, (offset, size, mask, shift) in RAW.get(attr, {}).items():
        value = int.from_bytes(data[offset:offset + size], "big")
        if mask is not None:
            value = (value & mask) >> shift
        if value != fields[ours]:
            fail(f"frame {n} ({attr}): {ours} at CM byte {offset} is {value}, "
                 f"cm_frames wrote {fields[ours]}")
        checked += 1
    return checked


def check_req_addresses(n, fields, row):
    """The GIDs and rdma_cm's addresses, in the family cm_frames chose."""
    if fields["ip_version"] == 4:
        want = {"infiniband.cm.req.prim_localgid_ipv4": "192.0.2.1",
                "infiniband.cm.req.prim_remotegid_ipv4": "192.0.2.2",
                "infiniband.cm.req.ip_cm.sip4": "192.0.2.1",
                "infiniband.cm.req.ip_cm.dip4": "192.0.2.2"}
    else:
        want = {"infiniband.cm.req.prim_localgid": "fe80::1",
                "infiniband.cm.req.prim_remotegid": "fe80::2",
                "infiniband.cm.req.ip_cm.sip6": "fe80::1",
                "infiniband.cm.req.ip_cm.dip6": "fe80::2"}
    for field, value in want.items():
        if row[field] != value:
            fail(f"frame {n} (REQ): {field} is {row[field]!r}, expected {value}")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    tool = sys.argv[1]
    if shutil.which("tshark") is None:
        print("SKIP: tshark not installed (Debian package tshark; tools/dev installs it)")
        return 77
    columns = list(COMMON.values()) + [f for m in FIELDS.values() for f in m.values()] + [
        "infiniband.cm.req.prim_localgid", "infiniband.cm.req.prim_remotegid",
        "infiniband.cm.req.prim_localgid_ipv4", "infiniband.cm.req.prim_remotegid_ipv4",
        "infiniband.cm.req.ip_cm.sip4", "infiniband.cm.req.ip_cm.dip4",
        "infiniband.cm.req.ip_cm.sip6", "infiniband.cm.req.ip_cm.dip6"]
    with tempfile.TemporaryDirectory(prefix="cm-codec-") as tmp:
        pcap = os.path.join(tmp, "cm.pcap")
        frames = written(tool, pcap)
        rows = tshark_rows(pcap, columns)
    if len(rows) != len(frames):
        fail(f"tshark decoded {len(rows)} frames, cm_frames wrote {len(frames)}")
    checked = 0
    for (n, attr, fields), row in zip(frames, rows):
        check_common(n, attr, fields, row)
        checked += check_fields(n, attr, fields, row)
        if attr == "REQ":
            check_req_addresses(n, fields, row)
        print(f"frame {n}: {INFO[attr]} ({attr}) as written")
    print(f"tshark: {len(rows)} CM MADs, every message type, {checked} fields as written")
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
