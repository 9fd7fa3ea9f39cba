"""What rping's hosts sent, read back by tshark (issue 32, acceptance 2).

Each side's --tx-capture holds its CM MADs (UD SEND ONLY to QP1, Q_Key
0x80010000) and its RC traffic. Checked: the client sent REQ, RTU and
DREQ, the server REP and DREP, nothing else of the CM; the REQ's service ID
is rdma_cm's for TCP port PORT; the REQ's local QPN is the QP the server's
RC packets go to, the REP's the one the client's go to, and the DREQ names
the server's QP."""
import subprocess

FIELDS = ["_ws.col.Info", "infiniband.bth.opcode", "infiniband.bth.destqp",
          "infiniband.deth.q_key", "infiniband.cm.req.serviceid", "infiniband.cm.req.localqpn",
          "infiniband.cm.rep.localqpn", "infiniband.cm.req.remoteqpneecn"]
CM = {"CM: ConnectRequest": "REQ", "CM: ConnectReply": "REP", "CM: ReadyToUse": "RTU",
      "CM: DisconnectRequest": "DREQ", "CM: DisconnectReply": "DREP", "CM: ConnectReject": "REJ"}
UD_SEND_ONLY = 0x64


def rows(pcap):
    cmd = ["tshark", "-r", pcap, "-d", "udp.port==4791,infiniband", "-T", "fields",
           "-E", "separator=|", "-E", "occurrence=f"]
    for f in FIELDS:
        cmd += ["-e", f]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [dict(zip(FIELDS, line.split("|"))) for line in out.splitlines() if line.strip()]


def num(v):
    return int(v, 0) if v else None


def summary(pcap):
    """(CM messages in order with their rows, set of RC destination QPs)."""
    cm, rc_dest = [], set()
    for r in rows(pcap):
        info = r["_ws.col.Info"]
        name = next((n for key, n in CM.items() if key in info), None)
        if name is not None:
            cm.append((name, r))
        elif r["infiniband.bth.opcode"] and num(r["infiniband.bth.opcode"]) < 0x20:
            rc_dest.add(num(r["infiniband.bth.destqp"]))
    return cm, rc_dest


def check_captures(check, client_pcap, server_pcap, port):
    c_cm, c_rc = summary(client_pcap)
    s_cm, s_rc = summary(server_pcap)
    check([n for n, _ in c_cm] == ["REQ", "RTU", "DREQ"], "capture: the client sent REQ, RTU, DREQ",
          f"got {[n for n, _ in c_cm]}")
    check([n for n, _ in s_cm] == ["REP", "DREP"], "capture: the server sent REP, DREP",
          f"got {[n for n, _ in s_cm]}")
    gsi = all(num(r["infiniband.bth.opcode"]) == UD_SEND_ONLY and num(r["infiniband.bth.destqp"]) == 1
              and num(r["infiniband.deth.q_key"]) == 0x80010000 for _, r in c_cm + s_cm)
    check(gsi, "capture: every CM MAD a UD SEND ONLY to QP1, Q_Key 0x80010000")
    req = next((r for n, r in c_cm if n == "REQ"), None)
    rep = next((r for n, r in s_cm if n == "REP"), None)
    dreq = next((r for n, r in c_cm if n == "DREQ"), None)
    if req is None or rep is None or dreq is None:
        return
    want_sid = 0x0000000001060000 | port
    check(num(req["infiniband.cm.req.serviceid"]) == want_sid,
          f"capture: the REQ's service ID is rdma_cm's for TCP port {port} ({want_sid:#018x})",
          f"got {req['infiniband.cm.req.serviceid']}")
    check(s_rc == {num(req["infiniband.cm.req.localqpn"])},
          "capture: the REQ's local QPN is where the server's RC packets go",
          f"REQ {req['infiniband.cm.req.localqpn']}, server's RC to {s_rc}")
    check(c_rc == {num(rep["infiniband.cm.rep.localqpn"])},
          "capture: the REP's local QPN is where the client's RC packets go",
          f"REP {rep['infiniband.cm.rep.localqpn']}, client's RC to {c_rc}")
    check(num(dreq["infiniband.cm.req.remoteqpneecn"]) == num(rep["infiniband.cm.rep.localqpn"]),
          "capture: the DREQ names the server's QP",
          f"DREQ {dreq['infiniband.cm.req.remoteqpneecn']}, REP {rep['infiniband.cm.rep.localqpn']}")
