#!/usr/bin/python3
"""Every file a README names in backquotes exists.

usage: readme_paths_test.py SOURCE_ROOT

Reads every README.md of the source tree (not build*/) and takes each
backquoted word that names a file or folder of the tree:
* a path with a `/` whose first part is a file or folder at the top of the
  tree or beside the README (`tests/examples/rss_receive.c`,
  `../sim/README.md`), braces expanded (`sim/frame_faults.{hpp,cpp}`);
* a bare file name with a source extension (`qp_ib_post.cpp`,
  `frame_faults.{hpp,cpp}`), which must be somewhere in the tree.
A path without an extension may name a program built from PATH.c or
PATH.cpp (`tests/net/roce_frames`). Build outputs (`build/...`), absolute
paths, paths outside the tree, URLs, globs, placeholders (`<...>`) and
the few files of other projects cited by name (EXTERNAL) are not paths of
the tree. Each missing one is printed as
README:line: `word`. Before that the test proves it catches one: a made-up
README naming a missing file must fail.
Exit 0 when every named file exists, 1 otherwise.
"""
import os
import re
import subprocess
import sys
import tempfile

EXTENSIONS = (".c", ".h", ".cpp", ".hpp", ".py", ".sh", ".md", ".build", ".toml", ".txt", ".map")
# Files of other projects the READMEs cite by name: rdma-core's and the
# system's, not this tree's.
EXTERNAL = {"verbs.h", "cmd_cq.c", "cmd_wq.c", "cmd_qp.c", "qp.c", "cq.c",
            "rxe_req.c", "rxe_comp.c", "rxe_resp.c", "rxe_recv.c"}
WORD = re.compile(r"`([^`\s]+)`")


def expand(word):
    """`a.{hpp,cpp}` -> [a.hpp, a.cpp] (one level of braces)."""
    m = re.search(r"\{([^{}]*)\}", word)
    if not m:
        return [word]
    return [w for alt in m.group(1).split(",") for w in expand(word[:m.start()] + alt + word[m.end():])]


def candidates(root, readme_dir, word):
    """The paths `word` may name, or None when it is not a path of the tree."""
    if any(c in word for c in "<>*$:=|\\'\"()[]") or word.startswith(("/", "-", "~")):
        return None
    word = word.rstrip(".,;")
    if word.startswith(("build", "./build")) or word in EXTERNAL:
        return None
    if "/" in word:
        first = word.split("/")[0]
        if first in (".", ".."):
            paths = [os.path.normpath(os.path.join(readme_dir, w)) for w in expand(word)]
            # Outside the tree (`../sim/` beside an installed executable): not the tree's.
            return paths if all(p.startswith(root + os.sep) for p in paths) else None
        if os.path.exists(os.path.join(readme_dir, first)):
            return [os.path.join(readme_dir, w) for w in expand(word)]
        if os.path.exists(os.path.join(root, first)) and not first.startswith("build"):
            return [os.path.join(root, w) for w in expand(word)]
        return None
    if not word.endswith(EXTENSIONS) and not re.search(r"\.\{[\w,]+\}$", word):
        return None
    return [w for w in expand(word)]


def exists(path):
    """A file or folder, or a program built from PATH.c / PATH.cpp (`tests/net/roce_frames`)."""
    return any(os.path.exists(path + ext) for ext in ("", ".c", ".cpp"))


def exists_bare(root, readme_dir, name):
    if exists(os.path.join(readme_dir, name)) or exists(os.path.join(root, name)):
        return True
    for _, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(("build", "."))]
        if name in files:
            return True
    return False


def readmes(root):
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(("build", ".")) and d != "node_modules")
        if "README.md" in files:
            yield os.path.join(top, "README.md")


def check(root):
    missing, named = [], 0
    for readme in readmes(root):
        readme_dir = os.path.dirname(readme)
        fence = False
        for n, line in enumerate(open(readme, encoding="utf-8"), 1):
            if line.startswith("```"):
                fence = not fence
                continue
            if fence:
                continue  # commands, not prose: the readme test runs them
            for word in WORD.findall(line):
                paths = candidates(root, readme_dir, word)
                if paths is None:
                    continue
                for p in paths:
                    named += 1
                    ok = exists(p) if os.path.isabs(p) else exists_bare(root, readme_dir, p)
                    if not ok:
                        missing.append(f"{os.path.relpath(readme, root)}:{n}: `{word}`"
                                       + (f" ({os.path.basename(p)})" if len(paths) > 1 else ""))
    return named, missing


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    root = os.path.realpath(sys.argv[1])
    # First: a README that names a file that is not there must be caught.
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "sim"))
        open(os.path.join(tmp, "sim", "here.cpp"), "w").close()
        with open(os.path.join(tmp, "README.md"), "w") as f:
            f.write("`sim/here.cpp` and `sim/gone.hpp`, `here.{cpp,hpp}`, `build/x.c`, `/tmp/y.c`\n")
        _, caught = check(tmp)
    want = ["README.md:1: `sim/gone.hpp`", "README.md:1: `here.{cpp,hpp}` (here.hpp)"]
    if caught != want:
        print(f"FAIL: on a made-up README it reports {caught}, not {want}")
        return 1
    print(f"ok: a made-up README naming missing files is caught: {caught}")
    named, missing = check(root)
    for m in missing:
        print(f"FAIL: {m}: no such file")
    print(f"{named} file paths named in backquotes in the READMEs, {len(missing)} missing")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
