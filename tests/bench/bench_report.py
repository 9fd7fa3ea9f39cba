"""The benchmark suite's report (bench.py): a row of the table, the table as
text and as Markdown, and the machine it ran on."""
import json
import os
import platform
import shutil
import statistics
import subprocess
import textwrap


def spread(values, fmt):
    return f"{fmt(min(values))}-{fmt(max(values))}" if values else ""


class Row:
    def __init__(self, case, workload, unit, sim=None, baseline_name="", baseline=None,
                 baseline_fixed=None, ratio=None, target="", met=None, note="", decimals=1):
        self.case, self.workload, self.unit = case, workload, unit
        self.sim = sim or []
        self.baseline_name, self.baseline = baseline_name, baseline or []
        self.baseline_fixed = baseline_fixed  # a reference figure, not measured here
        self.ratio, self.target, self.met, self.note = ratio, target, met, note
        self.decimals = decimals

    def median(self):
        return statistics.median(self.sim) if self.sim else None

    def base_median(self):
        if self.baseline:
            return statistics.median(self.baseline)
        return self.baseline_fixed

    def num(self, v):
        return "" if v is None else f"{v:.{self.decimals}f}"

    def cells(self):
        base = self.base_median()
        base_text = ""
        if base is not None:
            base_text = f"{self.num(base)} {self.unit}".strip()
            if self.baseline_name:
                base_text += f" ({self.baseline_name})"
        met = self.met if self.met in ("skip", "ERROR") else {True: "yes", False: "NO", None: "-"}[self.met]
        return [self.case, self.workload,
                f"{self.num(self.median())} {self.unit}".strip() if self.sim else "",
                spread(self.sim, self.num) if len(self.sim) > 1 else "", base_text,
                "" if self.ratio is None else f"{self.ratio:.2f}", self.target, met]

    def as_json(self):
        return {"case": self.case, "workload": self.workload, "unit": self.unit,
                "rdmasim_runs": self.sim, "rdmasim_median": self.median(),
                "baseline": self.baseline_name, "baseline_runs": self.baseline,
                "baseline_median": self.base_median(),
                "baseline_measured": bool(self.baseline), "ratio": self.ratio,
                "target": self.target, "met": self.met, "note": self.note}


def thp_mode():
    """Transparent huge pages: the bracketed word of the kernel's setting, or "unknown"."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            text = f.read()
        return text[text.index("[") + 1:text.index("]")]
    except (OSError, ValueError):
        return "unknown"


def probe(program, *args):
    """A machine probe's JSON line (fault_cost, hiccups), or None where it is not built or fails."""
    if not program or not os.access(program, os.X_OK):
        return None
    r = subprocess.run([program, *args], capture_output=True, text=True)
    return json.loads(r.stdout) if r.returncode == 0 else None


def machine(fault_cost=None, hiccups=None):
    """The machine, for the report's first line; `fault_cost`, `hiccups`: those programs' paths:
    first touch of 16 MiB (ns per 4 KiB), a second of spinning on the last CPU the process may use."""
    model = ""
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    virt = subprocess.run(["systemd-detect-virt"], capture_output=True, text=True).stdout.strip() \
        if shutil.which("systemd-detect-virt") else ""
    return {"cpu": model, "nproc": os.cpu_count(), "kernel": platform.release(),
            "virtualization": virt or "unknown", "load_before": os.getloadavg()[0],
            "thp": thp_mode(), "fault_cost": probe(fault_cost, "16"),
            "hiccups": probe(hiccups, "1", "2000", str(max(os.sched_getaffinity(0))))}


def table(rows, wrap=50):
    """The rows as text: the workload wrapped to `wrap` columns, each note on a line below."""
    head = ["case", "workload", "rdmasim (median)", "spread (min-max)", "baseline (median)",
            "ratio", "target", "met"]
    cells = [r.cells() for r in rows]
    width = [max(len(head[i]), *(len(c[i]) for c in cells)) for i in range(len(head))]
    width[1] = min(width[1], wrap)
    line = lambda c: "  ".join(str(v).ljust(width[i]) for i, v in enumerate(c)).rstrip()
    out = [line(head), line(["-" * w for w in width])]
    for r, c in zip(rows, cells):
        parts = textwrap.wrap(c[1], wrap) or [""]
        out.append(line([c[0], parts[0], *c[2:]]))
        out += [line(["", p] + [""] * 6) for p in parts[1:]]
        if r.note:
            out += [" " * (width[0] + 2) + p for p in textwrap.wrap(f"({r.note})", wrap + 40)]
    return "\n".join(out)


def markdown(rows):
    """The rows as a Markdown table (for tests/bench/RESULTS.md), notes in the workload cell."""
    head = ["case", "workload", "rdmasim (median)", "spread (min-max)", "baseline (median)",
            "ratio", "target", "met"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        c = r.cells()
        if r.note:
            c[1] += f" ({r.note})"
        out.append("| " + " | ".join(v.replace("|", "\\|") for v in c) + " |")
    return "\n".join(out) + "\n"
