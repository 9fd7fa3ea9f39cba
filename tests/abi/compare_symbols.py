#!/usr/bin/python3
"""A drop-in library exports exactly what the system library exports.

Usage: /usr/bin/python3 tests/abi/compare_symbols.py [--extra NODE:NAME]... BUILT_LIB SYSTEM_LIB

Used for libibverbs.so.1 and librdmacm.so.1.

Reads the dynamic symbol table of both libraries with `objdump -T` (the
OBJDUMP environment variable may name another objdump) and compares, for
every defined global or weak symbol, the tuple

    (name, version, hidden or default, function or object)

A hidden version is one objdump shows in parentheses, `(IBVERBS_1.0) name`:
it binds old binaries only and is never the default. The version nodes
themselves (IBVERBS_1.0 ... IBVERBS_PRIVATE_34) are compared the same way.
A missing name makes dlopen(RTLD_NOW) of pyverbs or a provider library fail;
a missing hidden version is what old binaries bind
(device/README.md, "The library seen by a program").

--extra NODE:NAME names one symbol the built library has and the system's
has not: version node NODE and the function NAME, default-versioned in it.
Both must be there (a missing one fails like any missing symbol), and NODE
may hold nothing else. libibverbs.so.1 has one: RDMASIM_PRIVATE_1 with
rdmasim_rdmacm_ops_v1, the table behind the drop-in librdmacm.so.1
(device/rdmacm/ops.hpp). Any other extra symbol still fails.

Prints each difference and a closing "N passed, M failed" line. Exit 0 when
the tables match, 1 on any difference or when objdump fails, 77 (skip) when
SYSTEM_LIB does not exist.
"""

import os
import subprocess
import sys


def dynamic_symbols(path):
    """{(name, version): (hidden, kind)} for the defined global symbols of `path`."""
    objdump = os.environ.get("OBJDUMP", "objdump")
    out = subprocess.run([objdump, "-T", path], check=True, capture_output=True, text=True).stdout
    symbols = {}
    for line in out.splitlines():
        addr, _, rest = line.partition(" ")
        if not addr or any(c not in "0123456789abcdef" for c in addr) or len(rest) < 8:
            continue  # headers, blank lines
        # objdump's flag field is 7 characters: binding, weak, ..., type.
        flags, fields = rest[:7], rest[7:].split()
        binding, weak, kind = flags[0], flags[1], flags[6]
        if binding not in "gu" and weak != "w":
            continue  # local
        if len(fields) < 3 or fields[0] == "*UND*":
            continue  # imported
        section, name = fields[0], fields[-1]
        version = fields[2] if len(fields) >= 4 else ""  # "" : an unversioned library
        hidden = version.startswith("(") and version.endswith(")")
        if hidden:
            version = version[1:-1]
        if section == "*ABS*" and name == version:
            kind = "version node"
        else:
            kind = {"F": "function", "O": "object"}.get(kind, "other")
        symbols[(name, version)] = (hidden, kind)
    return symbols


def describe(key, attrs):
    (name, version), (hidden, kind) = key, attrs
    if kind == "version node":
        return f"version node {name}"
    shown = f"({version})" if hidden else (version or "<unversioned>")
    return f"{shown} {name} [{'hidden' if hidden else 'default'} {kind}]"


def parse_args(argv):
    """(built, system, {(name, version): attrs} of the expected extras), or None."""
    extras, rest = {}, []
    args = iter(argv[1:])
    for a in args:
        if a == "--extra" or a.startswith("--extra="):
            spec = a.partition("=")[2] if "=" in a else next(args, "")
            node, _, name = spec.partition(":")
            if not node or not name:
                return None
            extras[(node, node)] = (False, "version node")
            extras[(name, node)] = (False, "function")
        else:
            rest.append(a)
    if len(rest) != 2:
        return None
    return rest[0], rest[1], extras


def main(argv):
    parsed = parse_args(argv)
    if parsed is None:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 1
    built_path, system_path, extras = parsed
    if not os.path.exists(system_path):
        print(f"SKIP: {system_path} not found")
        return 77
    try:
        built = dynamic_symbols(built_path)
        system = dynamic_symbols(system_path)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"FAIL: objdump -T: {e}")
        return 1
    clash = sorted(k for k in extras if k in system)
    if clash:
        print(f"FAIL: --extra names what the system library has: {clash}")
        return 1
    # The expected extras are compared as if the system library had them:
    # missing or differing, they fail, and so does anything else in their node.
    expected = {**system, **extras}

    passed = failed = 0
    for key in sorted(set(built) | set(expected), key=lambda k: (k[0], k[1])):
        want, have = expected.get(key), built.get(key)
        if want == have:
            passed += 1
            continue
        failed += 1
        if have is None:
            print(f"missing: {describe(key, want)}")
        elif want is None:
            print(f"extra:   {describe(key, have)}")
        else:
            print(f"differs: {describe(key, have)}, system has {describe(key, want)}")

    print(f"built {built_path}: {len(built)} symbols; system {system_path}: {len(system)} symbols"
          + (f" and {len(extras)} expected extras" if extras else ""))
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
