#!/usr/bin/python3
"""Generate the bundled sample capture tests/data/sample.pcap.

Usage: /usr/bin/python3 make_sample_pcap.py OUT.pcap

The output is deterministic: a fixed random seed, fixed timestamps (the
first frame at 1700000000.000000, then 10 us apart), little-endian classic
pcap (magic 0xa1b2c3d4, microsecond resolution), link type Ethernet (1),
snaplen 65535, no FCS in the frames. Re-running gives a byte-identical file.

Mix (about 400 frames):
  * TCP and UDP over IPv4 and IPv6 from many distinct 5-tuples (flows), about
    a third of them 802.1Q-tagged with varied PCP / DEI / VID (including VID 0
    priority tags, PCP 7, DEI 1 and VID 4094) so a test can check the full TCI;
  * a few ARP requests and replies (one of them tagged);
  * a few IPv4 fragments (two fragmented UDP datagrams, one tagged);
  * frame sizes from the 60-byte minimum (64 bytes when tagged) up to a full
    1500-byte IP packet (1514 / 1518 bytes);
  * exactly five jumbo frames (3000 to 9000 bytes) that do not fit a
    2048-byte receive buffer.

Debian's scapy is needed: run it with /usr/bin/python3.
"""

import random
import sys
from collections import Counter

from scapy.layers.inet import IP, TCP, UDP, fragment
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Dot1Q, Ether
from scapy.utils import RawPcapWriter

SEED = 0x5EED_2024
FIRST_TS_SEC = 1700000000
STEP_US = 10
DLT_EN10MB = 1
MIN_FRAME = 60          # without FCS
MIN_TAGGED_FRAME = 64   # a tag inserted on a minimum frame keeps it at 64
N_FLOWS = 96
N_FLOW_FRAMES = 376
N_ARP = 7
N_JUMBO = 5
JUMBO_SIZES = (3000, 4096, 6000, 8000, 9000)  # whole frame, untagged length

# (pcp, dei, vid) choices for tagged flows; None = untagged.
VLANS = [
    (0, 0, 0),      # priority tag: VID 0
    (0, 0, 1),
    (3, 0, 10),
    (5, 0, 100),
    (7, 0, 200),
    (6, 1, 300),
    (1, 1, 1234),
    (2, 0, 2047),
    (4, 1, 2048),
    (7, 1, 4094),
]


def pad(frame: bytes, tagged: bool) -> bytes:
    floor = MIN_TAGGED_FRAME if tagged else MIN_FRAME
    if len(frame) < floor:
        frame += bytes(floor - len(frame))
    return frame


def l2(rng_mac_src, rng_mac_dst, vlan):
    eth = Ether(src=rng_mac_src, dst=rng_mac_dst)
    if vlan is None:
        return eth
    pcp, dei, vid = vlan
    return eth / Dot1Q(prio=pcp, id=dei, vlan=vid)


def mac(rng, oui=b"\x02\x00\x5e"):
    tail = bytes(rng.randrange(256) for _ in range(3))
    return ":".join("%02x" % b for b in oui + tail)


def make_flows(rng):
    flows = []
    seen = set()
    n_tagged = 0
    while len(flows) < N_FLOWS:
        v6 = rng.random() < 0.35
        proto = "tcp" if rng.random() < 0.55 else "udp"
        if v6:
            src = "2001:db8:%x::%x" % (rng.randrange(1, 16), rng.randrange(1, 0xffff))
            dst = "2001:db8:%x::%x" % (rng.randrange(16, 32), rng.randrange(1, 0xffff))
        else:
            src = "10.%d.%d.%d" % (rng.randrange(256), rng.randrange(256), rng.randrange(1, 255))
            dst = "192.168.%d.%d" % (rng.randrange(256), rng.randrange(1, 255))
        sport = rng.randrange(1024, 65536)
        dport = rng.choice([5201, 9000, 12345, 20000, 33000, rng.randrange(1024, 65536)])
        key = (v6, proto, src, dst, sport, dport)
        if key in seen:
            continue
        seen.add(key)
        vlan = None
        if rng.random() < 0.35:
            # Round-robin so every TCI variant appears in the capture.
            vlan = VLANS[n_tagged % len(VLANS)]
            n_tagged += 1
        flows.append({
            "v6": v6, "proto": proto, "src": src, "dst": dst,
            "sport": sport, "dport": dport, "vlan": vlan,
            "smac": mac(rng), "dmac": mac(rng),
            "seq": rng.randrange(1 << 32), "ack": rng.randrange(1 << 32),
            "hlim": rng.choice([64, 128, 255]),
        })
    return flows


def ip_payload_size(rng):
    """Target IP total length (header included), 20/40 .. 1500."""
    r = rng.random()
    if r < 0.30:
        return 0            # minimal: no L4 payload
    if r < 0.38:
        return 1500         # full-size
    # In between: more small and mid-size packets than large ones.
    return rng.randrange(1, 1501) if rng.random() < 0.5 else rng.randrange(1, 600)


def flow_frame(rng, f):
    ip_len = ip_payload_size(rng)
    l3_hdr = 40 if f["v6"] else 20
    l4_hdr = 20 if f["proto"] == "tcp" else 8
    payload_len = max(0, ip_len - l3_hdr - l4_hdr) if ip_len else 0
    payload = rng.randbytes(payload_len)
    if f["proto"] == "tcp":
        flags = "A" if payload_len == 0 else rng.choice(["PA", "A"])
        if payload_len == 0 and rng.random() < 0.1:
            flags = rng.choice(["S", "SA", "FA", "R"])
        l4 = TCP(sport=f["sport"], dport=f["dport"], seq=f["seq"], ack=f["ack"],
                 flags=flags, window=rng.choice([502, 8192, 65535]))
        f["seq"] = (f["seq"] + payload_len) & 0xffffffff
    else:
        l4 = UDP(sport=f["sport"], dport=f["dport"])
    if f["v6"]:
        l3 = IPv6(src=f["src"], dst=f["dst"], hlim=f["hlim"],
                  fl=f["sport"] & 0xfffff)
    else:
        l3 = IP(src=f["src"], dst=f["dst"], ttl=f["hlim"], id=rng.randrange(65536),
                flags="DF" if f["proto"] == "tcp" else 0)
    pkt = l2(f["smac"], f["dmac"], f["vlan"]) / l3 / l4 / payload
    kind = "%s/%s/%s" % ("ipv6" if f["v6"] else "ipv4", f["proto"],
                          "tagged" if f["vlan"] else "untagged")
    return pad(bytes(pkt), f["vlan"] is not None), kind


def arp_frames(rng):
    out = []
    gw_mac = "02:00:5e:00:00:01"
    for i in range(N_ARP):
        host_mac = mac(rng)
        host_ip = "10.0.0.%d" % rng.randrange(2, 250)
        vlan = (0, 0, 10) if i == 3 else None
        base = l2(host_mac, "ff:ff:ff:ff:ff:ff", vlan)
        if i % 2 == 0:
            pkt = base / ARP(op=1, hwsrc=host_mac, psrc=host_ip,
                             hwdst="00:00:00:00:00:00", pdst="10.0.0.1")
        else:
            pkt = l2(gw_mac, host_mac, vlan) / ARP(op=2, hwsrc=gw_mac, psrc="10.0.0.1",
                                                   hwdst=host_mac, pdst=host_ip)
        out.append((pad(bytes(pkt), vlan is not None),
                    "arp/%s" % ("tagged" if vlan else "untagged")))
    return out


def fragment_frames(rng):
    out = []
    specs = [
        # (udp payload bytes, fragsize, vlan)
        (2800, 1480, None),
        (3500, 1400, (5, 0, 100)),
    ]
    for n, (size, fragsize, vlan) in enumerate(specs):
        dgram = IP(src="10.9.%d.1" % n, dst="192.168.9.%d" % (n + 1),
                   id=0x4000 + n) / UDP(sport=40000 + n, dport=9999) / rng.randbytes(size)
        dgram = IP(bytes(dgram))  # freeze checksums and lengths
        for frag in fragment(dgram, fragsize=fragsize):
            pkt = l2("02:00:5e:aa:00:%02x" % n, "02:00:5e:bb:00:%02x" % n, vlan) / frag
            out.append((pad(bytes(pkt), vlan is not None),
                        "ipv4-fragment/%s" % ("tagged" if vlan else "untagged")))
    return out


def jumbo_frames(rng):
    out = []
    for n, size in enumerate(JUMBO_SIZES):
        vlan = (3, 0, 10) if n in (1, 3) else None
        v6 = n == 2
        hdr = l2("02:00:5e:cc:00:%02x" % n, "02:00:5e:dd:00:%02x" % n, vlan)
        if v6:
            l3 = IPv6(src="2001:db8:ff::%x" % (n + 1), dst="2001:db8:fe::1", hlim=64)
        else:
            l3 = IP(src="10.200.0.%d" % (n + 1), dst="192.168.200.1", id=n + 1)
        l4 = TCP(sport=50000 + n, dport=5201, flags="PA", seq=rng.randrange(1 << 32))
        base_len = len(bytes(hdr / l3 / l4))
        if vlan is not None:
            base_len -= 4  # JUMBO_SIZES are untagged lengths; a tag adds 4
        pkt = hdr / l3 / l4 / rng.randbytes(size - base_len)
        out.append((bytes(pkt), "jumbo/%s" % ("tagged" if vlan else "untagged")))
    return out


def build(rng):
    flows = make_flows(rng)
    frames = []
    # Every flow appears at least once, then random flows with locality.
    order = list(range(N_FLOWS)) + [rng.randrange(N_FLOWS) for _ in range(N_FLOW_FRAMES - N_FLOWS)]
    rng.shuffle(order)
    for idx in order:
        frames.append(flow_frame(rng, flows[idx]))
    # Scatter the special frames among the flow frames; fragments of one
    # datagram stay together and in order.
    specials = [[x] for x in arp_frames(rng)] + [[x] for x in jumbo_frames(rng)]
    frags = fragment_frames(rng)
    groups = {}
    for fr in frags:
        groups.setdefault(fr[0][6:12], []).append(fr)  # group by source MAC
    specials += list(groups.values())
    rng.shuffle(specials)
    for group in specials:
        pos = rng.randrange(1, len(frames))
        frames[pos:pos] = group
    return frames


def write(path, frames):
    w = RawPcapWriter(path, linktype=DLT_EN10MB, endianness="<", nano=False,
                      snaplen=65535)
    w.write_header(None)
    for i, (data, _kind) in enumerate(frames):
        us = i * STEP_US
        w.write_packet(data, sec=FIRST_TS_SEC + us // 1_000_000,
                       usec=us % 1_000_000)
    w.close()


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: %s OUT.pcap\n" % argv[0])
        return 2
    rng = random.Random(SEED)
    frames = build(rng)
    write(argv[1], frames)
    kinds = Counter(k for _d, k in frames)
    sizes = [len(d) for d, _k in frames]
    print("wrote %s: %d frames, %d..%d bytes" % (argv[1], len(frames), min(sizes), max(sizes)))
    for k in sorted(kinds):
        print("  %-28s %d" % (k, kinds[k]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
