#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check that #include lines point only down the layers.

cloister's folders form a stack: lib/ at the bottom, fs/ and broker/ above
it, proxy/ above broker/, mounts/ at the top. A file may include headers from its own folder and
from the folders below it, never from a sibling or from above. This reads
every #include of lib/, fs/, broker/ and proxy/ (the top, mounts/, may include
anything) and prints FILE:LINE: reason for each one that points elsewhere.
Exit 0 if none, 1 if any.

A quoted name is resolved as the compiler would: next to the including
file, then from the project root ("lib/util.h"); a bare name that is found
neither way is looked up by path suffix in the whole tree, which is how a
name reaching through an include directory ("config.h") is caught. A name
found nowhere is a generated or system header and is left alone.
"""
import argparse
import os
import re
import sys

# folder -> folders its files may include from (itself included)
ALLOWED = {
    "lib": {"lib"},
    "fs": {"lib", "fs"},
    "broker": {"lib", "broker"},
    "proxy": {"lib", "broker", "proxy"},
}
CHECKED = tuple(ALLOWED)
SOURCES = (".c", ".h")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
# Build files of the checked folders may not pull in a dependency of a
# higher layer either.
UPWARD_DEPS = re.compile(r"\b(mounts|sandbox|review|cli)_(dep|inc|lib)\b")
# ... nor, below proxy/, the proxy's.
PROXY_DEPS = re.compile(r"\bproxy_(dep|inc|lib)\b")


def top(rel):
    return rel.split(os.sep, 1)[0]


def project_files(root):
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir == ".":
            dirnames[:] = [d for d in dirnames
                           if not d.startswith(".") and not d.startswith("build")
                           and d != "subprojects"]
        for f in filenames:
            if f.endswith(SOURCES) or f == "meson.build":
                out.append(os.path.normpath(os.path.join(rel_dir, f)))
    return out


def resolve(root, rel, name, headers):
    """The project files (relative to root) that #include "name" may mean."""
    if name.startswith("/"):
        return [name]  # an absolute path: no layer may name one
    here = os.path.normpath(os.path.join(os.path.dirname(rel), name))
    if here.startswith(".."):
        return [here]  # climbs out of the project
    for candidate in (here, os.path.normpath(name)):
        if os.path.isfile(os.path.join(root, candidate)):
            return [candidate]
    suffix = os.sep + os.path.normpath(name)
    return [h for h in headers if (os.sep + h).endswith(suffix)]


def check(root):
    files = project_files(root)
    headers = [f for f in files if f.endswith(".h")]
    problems = []
    for rel in sorted(files):
        layer = top(rel)
        if layer not in CHECKED:
            continue
        allowed = ALLOWED[layer]
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
            lines = fh.readlines()
        if rel.endswith("meson.build"):
            for no, line in enumerate(lines, 1):
                code = line.split("#", 1)[0]
                m = UPWARD_DEPS.search(code) or (
                    PROXY_DEPS.search(code) if "proxy" not in allowed else None)
                if m:
                    problems.append(f"{rel}:{no}: uses '{m.group(0)}' from a layer above "
                                    f"{layer}/ (it may use only {', '.join(sorted(allowed))})")
            continue
        for no, line in enumerate(lines, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            kind, name = m.groups()
            if kind == "<" and "/" not in name and not any(
                    h.endswith(os.sep + name) for h in headers):
                continue  # a system header
            targets = resolve(root, rel, name, headers)
            if not targets:
                continue  # generated (cloister-config.h) or a system header
            outside = [t for t in targets if top(t) not in allowed]
            inside = [t for t in targets if top(t) in allowed]
            if outside and not inside:
                where = ", ".join(sorted({top(t) + "/" for t in outside}))
                problems.append(f"{rel}:{no}: includes \"{name}\" from {where} "
                                f"({layer}/ may include only from "
                                f"{', '.join(sorted(a + '/' for a in allowed))})")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    problems = check(root)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
