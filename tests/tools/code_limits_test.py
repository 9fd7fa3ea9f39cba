#!/usr/bin/python3
"""Code limits: no production file over 400 lines, no function over 60.

usage: code_limits_test.py SOURCE_ROOT

Production code is every .cpp .hpp .h .c file under sim/ device/
datapath/ net/ tools/ (issue 30's limits; tests/ and examples/ are not
production code). A file's length is its number of lines. A function's
length is what universal-ctags says of it, end line minus line plus one:

    ctags --language-force=C++ --kinds-C++=f --fields=+ne --output-format=json

(-R over the folders, as the house rules measure, gives the same tags; the
test names the files so that a .c or .h file is read as C++ too). A lambda
long enough is a function of its own to ctags (`__anon...` in the scope it
stands in); it is printed as a lambda inside its function.

Data tables are not code: ALLOWED names the few functions that are one
table, each with its reason; nothing else is let through.

Before it measures the tree the test proves it catches one: a made-up tree
in a temporary folder with a 61-line function and a 401-line file must
fail, and a 60-line function and a 400-line file must pass. Without ctags
(Debian package universal-ctags, `tools/dev setup` installs it) it fails
with that message: a limit nobody measures is no limit.
Exit 0 when every file and function is within the limits, 1 otherwise.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 60
FOLDERS = ("sim", "device", "datapath", "net", "tools")
EXTENSIONS = (".cpp", ".hpp", ".h", ".c")

# (file, function as printed: Scope::name) -> why it may be longer.
ALLOWED = {
    ("sim/config_keys.cpp", "Config::keys"):
        "the configuration keys' table, one entry a key (README.md's reference is made from it)",
}

ANON = re.compile(r"__anon[0-9a-f]+")


def sources(root):
    """The production files, relative to root, sorted."""
    out = []
    for folder in FOLDERS:
        for top, dirs, files in os.walk(os.path.join(root, folder)):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "build")))
            out += [os.path.relpath(os.path.join(top, f), root)
                    for f in files if f.endswith(EXTENSIONS)]
    return sorted(out)


def printed_name(tag):
    """`Class::method`, `free_function`, `<lambda> in make_qp`: the scope
    without its namespaces (rdmasim::device::) and anonymous namespaces."""
    parts = [p for p in tag.get("scope", "").split("::") if p and p != "rdmasim"]
    kind = tag.get("scopeKind", "")
    if kind == "namespace":
        parts = []  # a free function: its namespace is its folder
    elif kind in ("class", "struct"):
        parts = parts[-1:]
    name = tag["name"]
    if ANON.fullmatch(name):
        owner = ANON.sub("", "::".join(parts)).strip(":").split("::")[-1]
        return f"<lambda> in {owner}" if owner else "<lambda>"
    parts = [p for p in parts if not ANON.fullmatch(p)]
    return "::".join(parts + [name])


def functions(root, files):
    """[(file, printed name, line, length)] for every function ctags finds."""
    if not files:
        return []
    cmd = ["ctags", "--language-force=C++", "--kinds-C++=f", "--fields=+ne",
           "--output-format=json", "-o", "-"] + files
    run = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"ctags failed ({run.returncode}): {run.stderr.strip()}")
    out = []
    for line in run.stdout.splitlines():
        tag = json.loads(line)
        if tag.get("_type") != "tag" or "end" not in tag:
            continue
        out.append((tag["path"], printed_name(tag), tag["line"], tag["end"] - tag["line"] + 1))
    return out


def check(root):
    """(files measured, functions measured, [over-limit lines])."""
    files = sources(root)
    over = []
    for f in files:
        with open(os.path.join(root, f), "rb") as fh:
            n = sum(1 for _ in fh)
        if n > MAX_FILE_LINES:
            over.append(f"{f}: {n} lines (limit {MAX_FILE_LINES})")
    funcs = functions(root, files)
    for path, name, line, length in sorted(funcs, key=lambda f: (f[0], f[2])):
        if length > MAX_FUNCTION_LINES and (path, name) not in ALLOWED:
            over.append(f"{path}:{line}: {name}: {length} lines (limit {MAX_FUNCTION_LINES})")
    return len(files), len(funcs), over


def self_test():
    """The made-up tree: two over the limits caught, two at them let through."""
    def function(name, lines):  # `lines` lines from signature to closing brace
        body = "".join(f"    x += {i};\n" for i in range(lines - 4))
        return f"int {name}() {{\n    int x = 0;\n{body}    return x;\n}}\n"

    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "device"))
        os.makedirs(os.path.join(tmp, "net"))
        with open(os.path.join(tmp, "device", "long.cpp"), "w") as f:
            f.write("// made up\n" + function("too_long", 61) + function("just_fits", 60))
        with open(os.path.join(tmp, "net", "big.hpp"), "w") as f:
            f.write("// filler\n" * 401)
        with open(os.path.join(tmp, "net", "full.hpp"), "w") as f:
            f.write("// filler\n" * 400)
        _, _, caught = check(tmp)
    want = ["net/big.hpp: 401 lines (limit 400)",
            "device/long.cpp:2: too_long: 61 lines (limit 60)"]
    return caught, want


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    if shutil.which("ctags") is None:
        print("FAIL: no ctags on PATH: install universal-ctags (tools/dev setup does); "
              "the function limit cannot be measured without it")
        return 1
    version = subprocess.run(["ctags", "--version"], capture_output=True, text=True).stdout
    if "Universal Ctags" not in version:
        print(f"FAIL: ctags is not universal-ctags ({version.splitlines()[:1]}): "
              "install universal-ctags")
        return 1
    root = os.path.realpath(sys.argv[1])
    caught, want = self_test()
    if caught != want:
        print(f"FAIL: on a made-up tree it reports {caught}, not {want}")
        return 1
    print(f"ok: a made-up 61-line function and 401-line file are caught: {caught}")
    nfiles, nfuncs, over = check(root)
    for o in over:
        print(f"FAIL: {o}")
    for (path, name), why in sorted(ALLOWED.items()):
        print(f"allowed: {path}: {name}: {why}")
    print(f"{nfiles} files and {nfuncs} functions measured, {len(over)} over the limits")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
