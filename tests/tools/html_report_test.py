#!/usr/bin/python3
"""The HTML report (`rdmasim replay --report`, key `report` under `rdmasim run`).

Usage: /usr/bin/python3 tests/tools/html_report_test.py RDMASIM RSS_RECEIVE SAMPLE LOGDIR

Three reports: a generated capture of 1,000,000 frames (some of them runts,
so that drops show), the bundled SAMPLE with all four WQ flags, and
RSS_RECEIVE run under `rdmasim run --report`. Each must be under 1 MB, hold
the five charts (an <svg data-chart=...> each, with its data elements:
polylines for the charts over time, bars for the RSS spread and the status
mix, the RSS chart with its uniform-hash band) and the configuration, and
must be read back by headless Chromium (`--dump-dom`) with those elements as
SVG, then screenshot, and the PNG must show the charts' colours. The
screenshots stay in LOGDIR (their paths are printed).

Exits 77 when Chromium is missing or cannot start; prints one line per
check and exits 1 when any failed.
"""

import html.parser
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

FRAMES = 1_000_000
RUNT_EVERY = 1000          # every 1000th frame is a 10-byte runt: drops show
GAP_NS = 1_000             # 1 us apart: one second of capture time
MAX_BYTES = 1_000_000
CHARTS = {"rate": "polyline", "drops": "polyline", "delay": "polyline",
          "rss": "rect", "status": "rect"}
# Colours the charts draw with (sim/html_report.cpp): the first series / bar colour.
CHART_RGB = (0x1F, 0x77, 0xB4)

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)
    return ok


def write_capture(path):
    """Nanosecond pcap: UDP/IPv4 frames over 256 flows, every RUNT_EVERY-th a runt."""
    eth = b"\x02\x52\x44\x4d\x00\x00\x02\x00\x00\x00\x00\x01\x08\x00"
    frames = []
    for flow in range(256):
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 46, 0, 0, 64, 17, 0,
                         bytes([10, 0, 0, 1]), bytes([10, 0, 1, flow]))
        udp = struct.pack(">HHHH", 1024 + flow, 4791, 26, 0)
        frames.append(eth + ip + udp + bytes(18))
    runt = eth[:10]
    t0 = 1_700_000_000 * 10**9
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1))
        out = []
        for i in range(FRAMES):
            frame = runt if i % RUNT_EVERY == RUNT_EVERY - 1 else frames[i % 256]
            t = t0 + i * GAP_NS
            out.append(struct.pack("<IIII", t // 10**9, t % 10**9, len(frame), len(frame)))
            out.append(frame)
            if len(out) >= 20000:
                f.write(b"".join(out))
                out.clear()
        f.write(b"".join(out))


class Charts(html.parser.HTMLParser):
    """The charts of a page: data-chart -> {tag.class: count} of what each <svg> holds."""

    def __init__(self):
        super().__init__()
        self.charts = {}
        self.current = None
        self.tables = set()
        self.ticks = {}      # data-chart -> {"x-tick": [labels], "y-tick": [labels]}
        self.tick = None     # the list the <text> being read goes to

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and "id" in a:
            self.tables.add(a["id"])
        if tag == "svg" and "data-chart" in a:
            self.chart = a["data-chart"]
            self.current = self.charts.setdefault(a["data-chart"], {})
        elif self.current is not None:
            key = tag + ("." + a["class"] if "class" in a else "")
            self.current[key] = self.current.get(key, 0) + 1
            if tag == "text" and a.get("class") in ("x-tick", "y-tick"):
                chart = self.ticks.setdefault(self.chart, {})
                self.tick = chart.setdefault(a["class"], [])
                self.tick.append("")

    def handle_data(self, data):
        if self.tick is not None:
            self.tick[-1] += data

    def handle_endtag(self, tag):
        if tag == "text":
            self.tick = None
        if tag == "svg":  # the charts hold no nested <svg>
            self.current = None


def check_page(name, text):
    """The five charts with their data elements, and the configuration table."""
    p = Charts()
    p.feed(text)
    for chart, element in CHARTS.items():
        got = p.charts.get(chart, {})
        n = got.get(element + (".series" if element == "polyline" else ".bar"), 0)
        check(n > 0, f"{name}: chart '{chart}' has {n} {element} data element(s)")
    rss = p.charts.get("rss", {})
    check(rss.get("rect.band", 0) == 1 and rss.get("line.mean", 0) == 1,
          f"{name}: the RSS chart has the uniform-hash band and mean")
    check("config" in p.tables, f"{name}: the configuration table is there")
    for chart, ticks in sorted(p.ticks.items()):
        for axis, labels in sorted(ticks.items()):
            ok, why = round_ticks(labels)
            check(ok, f"{name}: chart '{chart}' {axis}s step by a round value with a unit "
                      f"({' | '.join(labels)}){'' if ok else ': ' + why}")
    check(all("y-tick" in p.ticks.get(c, {}) for c in CHARTS), f"{name}: every chart has y ticks")
    return p


TICK = re.compile(r"^(\d+(?:\.\d+)?)([kM]?)(?: (\S+))?$")


def round_ticks(labels):
    """(ok, why): labels '0 ms', '0.2 ms', ... evenly spaced from 0 by 1, 2 or 5 times a
    power of ten, each printed with no more digits than that step needs, one unit for all."""
    parsed = [TICK.match(label) for label in labels]
    if len(labels) < 2 or not all(parsed):
        return False, "not NUMBER[k|M] [UNIT]"
    scale = {"": 1, "k": 1e3, "M": 1e6}
    values = [float(m.group(1)) * scale[m.group(2)] for m in parsed]
    step = values[1] - values[0]
    mantissa = step / 10 ** math.floor(math.log10(step)) if step > 0 else 0
    if values[0] != 0 or round(mantissa, 6) not in (1.0, 2.0, 5.0):
        return False, f"step {step:g} is not 1, 2 or 5 times a power of ten"
    if any(abs(v - i * step) > step * 1e-6 for i, v in enumerate(values)):
        return False, "ticks not evenly spaced"
    if len({m.group(3) for m in parsed}) != 1:
        return False, "the unit changes along the axis"
    if any(len(m.group(1).split(".")[-1]) > 3 for m in parsed if "." in m.group(1)):
        return False, "more than 3 decimals"
    return True, ""


def png_pixels(path):
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB or RGBA PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), f"PNG depth {depth} colour type {ctype}"
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 0xFF
            elif f == 2:
                line[x] = (line[x] + b) & 0xFF
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 0xFF
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pr) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def chromium_cmd(profile):
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        return None
    return [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--no-first-run", "--hide-scrollbars", f"--user-data-dir={profile}"]


def check_in_chromium(name, page, chromium, shot):
    url = "file://" + os.path.abspath(page)
    dom = subprocess.run(chromium + ["--dump-dom", url], capture_output=True, text=True,
                         timeout=120)
    if check(dom.returncode == 0 and "<svg" in dom.stdout,
             f"{name}: chromium --dump-dom read the page"):
        check_page(name + " (chromium DOM)", dom.stdout)
    r = subprocess.run(chromium + [f"--screenshot={shot}", "--window-size=1000,2200", url],
                       capture_output=True, text=True, timeout=120)
    if not check(r.returncode == 0 and os.path.exists(shot), f"{name}: screenshot written"):
        print(r.stderr[-2000:])
        return
    print(f"     screenshot: {shot}")
    width, height, bpp, rows = png_pixels(shot)
    colours, chart_pixels = set(), 0
    for row in rows:
        for x in range(0, width * bpp, bpp):
            px = tuple(row[x:x + 3])
            colours.add(px)
            if all(abs(px[i] - CHART_RGB[i]) <= 8 for i in range(3)):
                chart_pixels += 1
    check(len(colours) > 16, f"{name}: screenshot not blank ({len(colours)} colours)")
    check(chart_pixels > 500, f"{name}: screenshot shows the charts ({chart_pixels} pixels of {CHART_RGB})")


def make_report(name, cmd, path, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    if not check(r.returncode == 0 and os.path.exists(path), f"{name}: {' '.join(cmd[1:4])}... wrote {path}"):
        print(r.stdout[-2000:], r.stderr[-2000:])
        return None
    size = os.path.getsize(path)
    check(size < MAX_BYTES, f"{name}: report is {size} bytes (< {MAX_BYTES})")
    text = open(path, encoding="utf-8").read()
    check_page(name, text)
    return r.stdout


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    rdmasim, rss_receive, sample, logdir = sys.argv[1:]
    logdir = os.path.join(logdir, "html-report")
    os.makedirs(logdir, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rdmasim-report-") as tmp:
        profile = os.path.join(tmp, "chromium-profile")
        chromium = chromium_cmd(profile)
        if chromium is None:
            print("SKIP: chromium not found (Debian package chromium; tools/dev setup installs it)")
            return 77
        try:
            probe = subprocess.run(chromium + ["--dump-dom", "about:blank"], capture_output=True,
                                   text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            print(f"SKIP: chromium cannot start: {e}")
            return 77
        if probe.returncode != 0 or "<html" not in probe.stdout:
            print(f"SKIP: chromium cannot start (status {probe.returncode}): {probe.stderr[-500:]}")
            return 77

        capture = os.path.join(tmp, "million.pcap")
        write_capture(capture)
        big = os.path.join(logdir, "million.html")
        out = make_report("1M frames", [rdmasim, "replay", capture, "--report", big, "--json"], big)
        if out is not None:
            j = json.loads(out)
            check(j["frames_offered"] == FRAMES and j["drops"]["runt_frames"] == FRAMES // RUNT_EVERY,
                  f"1M frames: {j['frames_offered']} offered, {j['drops']['runt_frames']} runts dropped")
            check('runt_frames (1000)' in open(big).read(), "1M frames: the drops chart names runt_frames")

        sample_page = os.path.join(logdir, "sample.html")
        out = make_report("sample", [rdmasim, "replay", sample, "--flags", "cvlan,fcs,pad,delay-drop",
                                     "--report", sample_page], sample_page)
        if out is not None:
            check(f"report: {sample_page}" in out, "sample: replay says where the report is")
            text = open(sample_page).read()
            check("cvlan,fcs,pad,delay-drop" in text, "sample: the configuration shows the WQ flags")

        run_page = os.path.join(logdir, "run.html")
        make_report("run", [rdmasim, "run", "--pcap", sample, "--report", run_page, "--",
                            rss_receive, "--frames", "393"], run_page)

        for name, page in (("1M frames", big), ("sample", sample_page), ("run", run_page)):
            if os.path.exists(page):
                check_in_chromium(name, page, chromium, page[:-len(".html")] + ".png")
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
