#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check that fs/'s folders include and call only down their layers.

fs/ is a stack of folders, bottom up: format/ (the on-disk format), lower/
(the read-only lowers), layers/ (the layer store: checkpoints, fork,
squash), core/ (the copy-on-write core), ops/ (the FUSE handlers) and
daemon/ at the top. journal/ and gitdir/ are leaves
that any folder above format/ may use. A file may include a header of, and
call a function defined in, its own folder or one below it (ALLOWED); never
one beside it or above. fs/fs.h, the public header of the whole library,
holds declarations only and any folder may include it: the calls its
functions stand for are checked as every other call.

Calls are found in the sources, as cflow would, not in the objects, so that
the check needs no build: a function is what a .c file of a folder defines
at column 0 (clang-format's layout) and is not static; a call is its name
followed by "(", or its address taken ("= name", "&name"), in code outside
comments and strings, in another folder's .c or .h file. A name defined in
two folders is left alone. Prints FILE:LINE: reason for each problem;
exit 0 if none, 1 if any.
"""
import argparse
import os
import re
import sys

# folder of fs/ -> the folders of fs/ its files may include from and call
LEAVES = {"journal", "gitdir"}
ALLOWED = {
    "format": {"format"},
    "lower": {"lower", "format"} | LEAVES,
    "layers": {"layers", "lower", "format"} | LEAVES,
    "core": {"core", "layers", "lower", "format"} | LEAVES,
    "ops": {"ops", "core", "layers", "lower", "format"} | LEAVES,
    "daemon": {"daemon", "ops", "core", "layers", "lower", "format"} | LEAVES,
    "journal": {"journal"},
    "gitdir": {"gitdir"},
}
PUBLIC = {"fs.h"}  # fs/'s own public header (declarations only)
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
# A definition: a line at column 0 that is not static and names a function,
# its body's "{" alone at column 0 after the (possibly wrapped) signature.
DEFINITION = re.compile(r"^(?!static\b|typedef\b|struct\b[^(]*;|extern\b)[A-Za-z_][\w \t\*]*?"
                        r"\b([a-z_]\w*)\s*\([^;{}]*\)\s*\n\{", re.M)


# A comment, or a string or char literal (escapes included), as one match.
NOISE = re.compile(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)
# A name called ("name("), or whose address is taken ("= name;", "&name").
CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(|(?:=|&)\s*([A-Za-z_]\w*)\s*[,;)]")


def strip(text):
    """text with comments and string and char literals blanked, lines kept."""
    return NOISE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def sources(root):
    """(folder, path relative to root) of every .c and .h under fs/<folder>/."""
    fs = os.path.join(root, "fs")
    out = []
    for folder in sorted(os.listdir(fs)):
        d = os.path.join(fs, folder)
        if not os.path.isdir(d):
            continue
        for dirpath, _, files in os.walk(d):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    out.append((folder, os.path.relpath(os.path.join(dirpath, f), root)))
    return out


def folder_list(folders):
    return ", ".join(f"fs/{f}/" for f in sorted(folders))


def check(root):
    files = sources(root)
    texts = {}
    for _, rel in files:
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
            texts[rel] = fh.read()
    problems = []

    # Includes: a header of fs/ named by its base name (the build puts every
    # folder on the include path) or by a path next to the including file.
    headers = {}
    for folder, rel in files:
        if rel.endswith(".h"):
            headers.setdefault(os.path.basename(rel), set()).add(folder)
    for folder, rel in files:
        allowed = ALLOWED.get(folder)
        if allowed is None:
            problems.append(f"{rel}:1: fs/{folder}/ is not a known folder of fs/ "
                            f"(tests/lint/fs-layers.py, ALLOWED)")
            continue
        for no, line in enumerate(texts[rel].splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            name = m.group(2)
            here = os.path.normpath(os.path.join(os.path.dirname(rel), name))
            if os.path.isfile(os.path.join(root, here)) and here.startswith("fs" + os.sep):
                parts = here.split(os.sep)
                owners = {parts[1]} if len(parts) > 2 else set()
            else:
                owners = headers.get(os.path.basename(name), set()) if "/" not in name or \
                    name.startswith("fs/") else set()
            if not owners or os.path.basename(name) in PUBLIC:
                continue
            if not owners & allowed:
                problems.append(f"{rel}:{no}: includes \"{name}\" from "
                                f"{folder_list(owners)} (fs/{folder}/ may include only from "
                                f"{folder_list(allowed)})")

    # Calls: the non-static functions each folder's .c files define.
    code = {rel: strip(text) for rel, text in texts.items()}
    defined = {}
    for folder, rel in files:
        if rel.endswith(".c"):
            for m in DEFINITION.finditer(code[rel]):
                defined.setdefault(m.group(1), {})[folder] = rel
    owner = {name: next(iter(by.items())) for name, by in defined.items() if len(by) == 1}
    for folder, rel in files:
        allowed = ALLOWED.get(folder)
        if allowed is None:
            continue
        for no, line in enumerate(code[rel].splitlines(), 1):
            for m in CALL.finditer(line):
                name = m.group(1) or m.group(2)
                if name not in owner:
                    continue
                there, where = owner[name]
                if there not in allowed:
                    verb = "names" if rel.endswith(".h") else "calls"
                    problems.append(f"{rel}:{no}: {verb} {name}() of fs/{there}/ "
                                    f"({os.path.basename(where)}); fs/{folder}/ may call only "
                                    f"{folder_list(allowed)}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    args = ap.parse_args()
    problems = check(os.path.abspath(args.root))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
