#!/usr/bin/python3
"""`meson install --destdir D` gives a working rdmasim (issue 12, acceptance 3).

usage: install_test.py BUILDDIR PREFIX BINDIR LIBDIR EMBED_SIMULATOR_CPP DATADIR [README]

Installs the build into a temporary D and checks, from D alone:
  * the layout: bin/rdmasim, LIBDIR/rdmasim/libibverbs.so.1 and
    librdmacm.so.1 (never LIBDIR/libibverbs.so* nor LIBDIR/librdmacm.so*),
    librdmasim.a, include/rdmasim/..., rdmasim.pc;
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
    README's example) creates a Simulator and opens rdmasim0;
  * with README: the README's "Install" commands, exactly as written but for
    the staging directory (/tmp/rdmasim-install: a temporary one) and the
    build directory: the install, the installed `rdmasim run -- ibv_devinfo`,
    and the embedding example, printing what its comment says; then the
    embedding example again with the install's LIBDIR renamed to lib64 (what
    Meson picks on a minimal Debian without dpkg-dev): the commands must not
    depend on the libdir.
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

import checklist
from checklist import check


builddir, prefix, bindir, libdir, embed_source, datadir = sys.argv[1:7]
readme = sys.argv[7] if len(sys.argv) > 7 else None


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


def readme_blocks(path):
    """The README's ```sh blocks that install and embed (the lines, comments kept)."""
    text = open(path).read()
    blocks = re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M)
    install = [b for b in blocks if "meson install -C build --destdir /tmp/rdmasim-install" in b]
    embed = [b for b in blocks if "embed_simulator" in b and "pkg-config" in b]
    return install, embed


def readme_commands(tmp):
    install, embed = readme_blocks(readme)
    if not check(len(install) == 1 and len(embed) == 1, "README.md: one install block, one embedding block"):
        return
    stage, prog = os.path.join(tmp, "readme-install"), os.path.join(tmp, "readme-embed")
    root = os.path.dirname(os.path.abspath(readme))

    def as_here(block):
        # Only the staging directory, the build directory and the program's path differ.
        return (block.replace("/tmp/rdmasim-install", stage).replace("-C build ", f"-C {builddir} ")
                .replace("/tmp/embed_simulator", prog))

    def bash(block, what, want=None):
        p = subprocess.run(["bash", "-c", "set -eo pipefail\n" + as_here(block)], cwd=root, capture_output=True,
                           text=True, env=clean_env(), timeout=300)
        check(p.returncode == 0 and (want is None or want in p.stdout),
              f"README.md's {what}, as written" + (f": prints {want!r}" if want else ""),
              f"exit {p.returncode}: {p.stdout[-2000:]}{p.stderr[-2000:]}")

    bash(install[0].replace("--quiet", "--no-rebuild --quiet"), "install commands", "rdmasim0")
    said = re.search(r"/tmp/embed_simulator\s+#\s*(.*)$", embed[0], re.M)
    bash(embed[0], "embedding example", said.group(1).split(",")[0] if said else None)
    # The same with LIBDIR lib64, as Meson picks it without dpkg-architecture.
    installed_libdir = under(stage, libdir)
    lib64 = under(stage, "lib64")
    if os.path.realpath(installed_libdir) != os.path.realpath(lib64):
        shutil.rmtree(lib64, ignore_errors=True)
        os.rename(installed_libdir, lib64)
        # rdmasim.pc as Meson writes it for libdir lib64: its relocatable
        # prefix two levels above lib64/pkgconfig, its libdir lib64.
        pc = os.path.join(lib64, "pkgconfig", "rdmasim.pc")
        text = open(pc).read()
        text = re.sub(r"^prefix=\$\{pcfiledir\}/[./]*$", "prefix=${pcfiledir}/../..", text, flags=re.M)
        text = text.replace("${prefix}/" + libdir + "\n", "${prefix}/lib64\n")
        with open(pc, "w") as f:
            f.write(text)
        if os.path.exists(prog):
            os.remove(prog)
        bash(embed[0], f"embedding example with the install's {libdir} moved to lib64",
             said.group(1).split(",")[0] if said else None)


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
    for lib in ("libibverbs.so.1", "librdmacm.so.1"):
        check(os.path.exists(os.path.join(private, lib)),
              f"{os.path.relpath(private, dest)}/{lib} installed")
    stray = [f for f in os.listdir(under(dest, libdir)) if f.startswith(("libibverbs", "librdmacm"))]
    check(not stray, "nothing named libibverbs or librdmacm in the system library directory",
          f"found {stray}")
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

    if readme:
        readme_commands(tmp)
finally:
    shutil.rmtree(tmp, ignore_errors=True)

checklist.finish()
