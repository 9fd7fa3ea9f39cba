#!/usr/bin/python3
"""`meson install --destdir D` gives a working rdmasim (issue 12, acceptance 3).

usage: install_test.py BUILDDIR PREFIX BINDIR LIBDIR EMBED_SIMULATOR_CPP DATADIR

Installs the build into a temporary D and checks, from D alone:
  * the layout: bin/rdmasim, LIBDIR/rdmasim/libibverbs.so.1 (never
    LIBDIR/libibverbs.so*), librdmasim.a, include/rdmasim/..., rdmasim.pc;
  * `D/.../bin/rdmasim run -- ibv_devinfo` lists rdmasim0, and `rdmasim env`
    points LD_LIBRARY_PATH at the installed library, not the build tree;
  * `D/.../bin/rdmasim replay` without a FILE plays the installed sample
    (DATADIR/rdmasim/sample.pcap), not the source tree's;
  * a copy of the executable with no library near it fails with status 1,
    naming the places it looked;
  * every installed header's `#include "..."` is installed too, and all of
    them compile together with `pkg-config --cflags rdmasim`;
  * `pkg-config --cflags --libs rdmasim` with PKG_CONFIG_PATH into D works,
    and a program built with it (tests/tools/embed_simulator.cpp, the
    README's example) creates a Simulator and opens rdmasim0.
Exits 0 when all hold, 1 otherwise, 77 (skip) without ibv_devinfo, a C++
compiler or pkg-config.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

builddir, prefix, bindir, libdir, embed_source, datadir = sys.argv[1:7]
failures = []
checks = 0



def check(cond, what, detail=""):
    global checks
    checks += 1
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)
        if detail:
            print("     " + detail.strip().replace("\n", "\n     "))
    return cond


def run(cmd, env=None, timeout=120):
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)


def clean_env(**extra):
    """This environment without any RDMASIM_* or LD_LIBRARY_PATH, plus `extra`."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("RDMASIM_") and k not in ("LD_LIBRARY_PATH", "PKG_CONFIG_PATH",
                                                         "PKG_CONFIG_SYSROOT_DIR")}
    env.update(extra)
    return env


def under(root, path):
    """`path` (absolute, or relative to the prefix) inside the tree at root."""
    return os.path.join(root, os.path.join(prefix, path).lstrip("/"))


for tool in ("ibv_devinfo", "c++", "pkg-config"):
    if shutil.which(tool) is None:
        print(f"SKIP: {tool} not found")
        sys.exit(77)

tmp = tempfile.mkdtemp(prefix="rdmasim-install-")
try:
    dest = os.path.join(tmp, "D")
    p = run(["meson", "install", "-C", builddir, "--destdir", dest, "--no-rebuild", "--quiet"],
            timeout=300)
    if not check(p.returncode == 0, "meson install --destdir D", p.stdout + p.stderr):
        sys.exit(1)

    exe = under(dest, os.path.join(bindir, "rdmasim"))
    private = under(dest, os.path.join(libdir, "rdmasim"))
    include = under(dest, "include/rdmasim")
    pcdir = under(dest, os.path.join(libdir, "pkgconfig"))
    check(os.access(exe, os.X_OK), f"{os.path.relpath(exe, dest)} installed")
    check(os.path.exists(os.path.join(private, "libibverbs.so.1")),
          f"{os.path.relpath(private, dest)}/libibverbs.so.1 installed")
    stray = [f for f in os.listdir(under(dest, libdir)) if f.startswith("libibverbs")]
    check(not stray, "nothing named libibverbs in the system library directory", f"found {stray}")
    check(os.path.exists(under(dest, os.path.join(libdir, "librdmasim.a"))), "librdmasim.a installed")
    check(os.path.exists(os.path.join(pcdir, "rdmasim.pc")), "rdmasim.pc installed")

    # rdmasim run, from the installed tree only.
    p = run([exe, "env"], env=clean_env())
    m = re.search(r"^export LD_LIBRARY_PATH='([^']*)'", p.stdout, re.M)
    got = os.path.realpath(m.group(1)) if m else None
    check(p.returncode == 0 and got == os.path.realpath(private),
          "rdmasim env: LD_LIBRARY_PATH is the installed private directory",
          f"exit {p.returncode}: {p.stdout}{p.stderr}")
    p = run([exe, "run", "--", "ibv_devinfo"], env=clean_env(), timeout=60)
    check(p.returncode == 0 and re.search(r"hca_id:\s+rdmasim0", p.stdout),
          "installed rdmasim run -- ibv_devinfo lists rdmasim0", f"exit {p.returncode}: {p.stdout}{p.stderr}")

    sample = under(dest, os.path.join(datadir, "rdmasim", "sample.pcap"))
    check(os.path.exists(sample), f"{os.path.relpath(sample, dest)} installed")
    p = run([exe, "replay", "--count", "5", "--json"], env=clean_env(), timeout=60)
    played = json.loads(p.stdout).get("file") if p.returncode == 0 else None
    check(played is not None and os.path.realpath(played) == os.path.realpath(sample),
          "installed rdmasim replay without FILE plays the installed sample",
          f"exit {p.returncode}: played {played}; {p.stderr}")

    lonely = os.path.join(tmp, "elsewhere", "bin", "rdmasim")
    os.makedirs(os.path.dirname(lonely))
    shutil.copy2(exe, lonely)
    configured = os.path.join(prefix, libdir, "rdmasim", "libibverbs.so.1")
    if os.path.exists(configured):
        print(f"note: {configured} exists (a real install): the copy would find it; not checked")
    else:
        p = run([lonely, "run", "--", "true"], env=clean_env())
        check(p.returncode == 1 and "no libibverbs.so.1 in" in p.stderr and lonely in p.stderr
              and os.path.join(tmp, "elsewhere", "sim") in p.stderr,
              "an executable with no library near it: status 1 naming where it looked",
              f"exit {p.returncode}: {p.stderr}")

    # The headers: each one's quoted includes installed too.
    headers = []
    for root, _, files in os.walk(include):
        headers += [os.path.relpath(os.path.join(root, f), include) for f in files]
    missing = []
    for h in sorted(headers):
        for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', open(os.path.join(include, h)).read(), re.M):
            if not os.path.exists(os.path.join(include, inc)):
                missing.append(f"{h} includes {inc}")
    check(headers and not missing,
          f"{len(headers)} installed headers, every quoted include among them",
          "not installed: " + "; ".join(missing) +
          "\n(add them to install_headers in the top meson.build)")

    env = clean_env(PKG_CONFIG_PATH=pcdir)
    if not open(os.path.join(pcdir, "rdmasim.pc")).read().startswith("prefix=${pcfiledir}"):
        # A build directory set up before pkgconfig.relocatable was a default.
        print("note: rdmasim.pc is not relocatable; PKG_CONFIG_SYSROOT_DIR=D")
        env["PKG_CONFIG_SYSROOT_DIR"] = dest
    p = run(["pkg-config", "--cflags", "--libs", "rdmasim"], env=env)
    flags = p.stdout.split()
    check(p.returncode == 0 and "-lrdmasim" in flags and
          any(os.path.realpath(f[2:]) == os.path.realpath(include) for f in flags if f.startswith("-I")),
          "pkg-config --cflags --libs rdmasim (PKG_CONFIG_PATH into D): D's include directory, -lrdmasim",
          f"exit {p.returncode}: {p.stdout}{p.stderr}")
    print("pkg-config: " + p.stdout.strip())

    every = os.path.join(tmp, "every_header.cpp")
    with open(every, "w") as f:
        f.writelines(f'#include "{h}"\n' for h in sorted(headers))
    cflags = run(["pkg-config", "--cflags", "rdmasim"], env=env).stdout.split()
    p = run(["c++", "-std=c++20", "-fsyntax-only", *cflags, every])
    check(p.returncode == 0, "every installed header compiles with pkg-config --cflags rdmasim",
          p.stderr[-3000:])

    prog = os.path.join(tmp, "embed_simulator")
    p = run(["c++", "-std=c++20", "-o", prog, embed_source, *flags], timeout=300)
    if check(p.returncode == 0, "a program built with those flags links against the installed library",
             p.stderr[-3000:]):
        p = run([prog], env=clean_env(), timeout=60)
        check(p.returncode == 0 and "opened rdmasim0" in p.stdout,
              "it creates a Simulator and opens rdmasim0", f"exit {p.returncode}: {p.stdout}{p.stderr}")
        p = run(["ldd", prog])
        check("libibverbs" not in p.stdout, "it does not load a libibverbs (the verbs are in librdmasim.a)",
              p.stdout)
finally:
    shutil.rmtree(tmp, ignore_errors=True)

print(f"{checks - len(failures)}/{checks} checks passed")
sys.exit(1 if failures else 0)
