#!/usr/bin/python3
"""Layering: no source file includes a header from a layer above its own.

Usage: /usr/bin/python3 tests/layering/check_includes.py [SOURCE_ROOT]

The layers, top to bottom (README.md, "The code"):

    tools -> sim -> device -> datapath -> net

A file may include headers of its own layer and of the layers below it, and
one more rule: tools/ never includes device/ (a tool drives the HCA through
the verbs API and the Simulator's public API, never through its objects). For
every `#include "..."` in net/ datapath/ device/ sim/ tools/ (.hpp .cpp .h
.c), the header is resolved as the compiler does for quotes (next to the
including file first, then from the source root) and its layer is the first
folder of that path. An include that points up the stack fails the test,
named by file:line with both layers. Angle-bracket includes are system
headers (<net/if.h> is not our net/) and are not checked.

Before checking the tree, the script checks itself on a tiny temporary tree
with one upward include, so that it cannot pass by finding nothing. It
prints how many includes it checked; exits 0 when none points up, 1 when one
does, 2 when the self-test fails.
"""

import os
import re
import sys
import tempfile

LAYERS = ["net", "datapath", "device", "sim", "tools"]  # bottom to top
RANK = {name: i for i, name in enumerate(LAYERS)}
EXTENSIONS = (".hpp", ".cpp", ".h", ".c")
FORBIDDEN = {("tools", "device")}  # (includer, included) pairs refused although downward
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def layer_of(root, path):
    """The layer folder `path` (absolute) lies in, or None."""
    rel = os.path.relpath(path, root)
    first = rel.split(os.sep)[0]
    return first if first in RANK else None


def resolve(root, including_file, name):
    """Where a quoted include points: next to the includer, else the root."""
    beside = os.path.normpath(os.path.join(os.path.dirname(including_file), name))
    if os.path.exists(beside):
        return beside
    return os.path.normpath(os.path.join(root, name))


def sources(root):
    for layer in LAYERS:
        top = os.path.join(root, layer)
        for folder, _dirs, files in os.walk(top):
            for f in sorted(files):
                if f.endswith(EXTENSIONS):
                    yield os.path.join(folder, f)


def check(root):
    """Returns (number of includes checked, list of violation messages)."""
    root = os.path.abspath(root)
    checked = 0
    violations = []
    for path in sources(root):
        own = layer_of(root, path)
        with open(path, encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                checked += 1
                target = layer_of(root, resolve(root, path, m.group(1)))
                if target is not None and RANK[target] > RANK[own]:
                    violations.append(
                        f"{os.path.relpath(path, root)}:{lineno}: a {own}/ file includes "
                        f'"{m.group(1)}" from {target}/, a layer above it '
                        f"(layers point one way: {' -> '.join(reversed(LAYERS))})")
                elif (own, target) in FORBIDDEN:
                    violations.append(
                        f"{os.path.relpath(path, root)}:{lineno}: a {own}/ file includes "
                        f'"{m.group(1)}" from {target}/: tools use the verbs API and the '
                        f"Simulator's public API, not the device's objects")
    return checked, violations


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def self_test():
    """The checker must catch an upward include and pass the downward ones."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="rdmasim-layering-") as tmp:
        write(tmp, "net/frame.hpp", "#pragma once\n#include <net/if.h>\n")
        write(tmp, "datapath/port.hpp", '#pragma once\n#include "net/frame.hpp"\n')
        write(tmp, "device/wq.hpp", '#pragma once\n#include "datapath/port.hpp"\n')
        write(tmp, "sim/engine.hpp", '#pragma once\n#include "device/wq.hpp"\n')
        write(tmp, "tools/replay.cpp",
              '#include "sim/engine.hpp"\n#include "net/frame.hpp"\n'
              '// #include "not/a/real/include.hpp" stays a comment\n')
        checked, violations = check(tmp)
        if violations:
            problems.append(f"a clean tree gave violations: {violations}")
        if checked != 5:
            problems.append(f"a clean tree: {checked} includes checked, expected 5")

        # One upward include, by root path; one by a path relative to the file.
        write(tmp, "datapath/rss.cpp",
              '#include "datapath/port.hpp"\n\n  #  include "device/wq.hpp"\n')
        write(tmp, "net/crc.c", '#include "../sim/engine.hpp"\n')
        write(tmp, "tools/run.cpp", '#include "sim/engine.hpp"\n#include "device/wq.hpp"\n')
        checked, violations = check(tmp)
        expected = ["datapath/rss.cpp:3:", "net/crc.c:1:", "tools/run.cpp:2:"]
        found = sorted(v.split(" ")[0] for v in violations)
        if found != expected:
            problems.append(f"upward includes found at {found}, expected {expected}")
        else:
            rss = next(v for v in violations if v.startswith("datapath/rss.cpp:3:"))
            if "a datapath/ file" not in rss or "from device/" not in rss:
                problems.append(f"the message does not name both layers: {rss}")
    return problems


def main():
    if len(sys.argv) > 2:
        print(__doc__)
        return 2
    root = sys.argv[1] if len(sys.argv) == 2 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir)

    problems = self_test()
    if problems:
        for p in problems:
            print(f"self-test FAILED: {p}")
        return 2
    print("self-test: an upward include in a temporary tree is caught")

    checked, violations = check(root)
    if checked == 0:
        print(f"no includes found under {os.path.abspath(root)}: wrong source root?")
        return 2
    for v in violations:
        print(v)
    print(f"{checked} includes checked in {', '.join(l + '/' for l in LAYERS)}: "
          f"{len(violations)} point up the stack")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
