#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""manual.py [PANDOC FROM FILTER]: the manual and the help agree (TAP).

Every command has a man page built from docs/cloister-COMMAND.md;
`cloister help COMMAND` and `cloister COMMAND --help` print the same; what
they print is, word for word, what the man page's Synopsis, Options and
Exit status sections say (compared as multisets of words, so line breaks,
tables and indentation don't count), and the summary `cloister help` lists
is the page's NAME line. Every man page renders without a groff warning
(what lintian checks), and no page names another docs/ page by a bare file
name, which means nothing once installed.

PANDOC, FROM and FILTER are how the build runs pandoc (tests/cli/meson.build).
Exits 77 (skip) in a -Ddocs=false build or without man(1).
"""
import collections
import concurrent.futures
import glob
import os
import re
import shutil
import subprocess
import sys

CLOISTER = os.environ["CLOISTER"]
SRC = os.environ["CLOISTER_SRC"]
MAN_DIR = os.path.join(os.environ["CLOISTER_BUILD"], "docs")
TITLE = re.compile(r"^# [A-Za-z0-9._-]+\([0-9]\)$", re.M)
results = []


def ok(good, name, diag=""):
    results.append((bool(good), name, diag))


def run(*argv, env=None):
    r = subprocess.run(argv, capture_output=True, text=True, env=env)
    return r.returncode, r.stdout, r.stderr


def render(page):
    """The page as a terminal shows it: plain text, and what groff warned."""
    env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8", MAN_KEEP_FORMATTING="")
    r = subprocess.run(["man", "--warnings", "-l", page], capture_output=True, env=env)
    text = re.sub(r".\x08", "", r.stdout.decode("utf-8", "replace"))  # as col -b
    return text, r.stderr.decode("utf-8", "replace")


def sections(text):
    """{heading: body}: in both texts only headings (and man's header and
    footer, help's first and last line) start at column 0."""
    out, cur = {}, None
    for line in text.splitlines():
        if line and not line[0].isspace():
            cur = line.strip()
            out.setdefault(cur, [])
        elif cur is not None:
            out[cur].append(line)
    return {k: "\n".join(v) for k, v in out.items()}


def words(text):
    return collections.Counter(w for w in re.split(r"[^A-Za-z0-9]+", text) if w)


def main():
    if not os.path.isfile(os.path.join(MAN_DIR, "cloister.1")):
        print("1..0 # SKIP built with -Ddocs=false: no man pages to compare")
        return 77
    if not shutil.which("man"):
        print("1..0 # SKIP man (man-db) is not installed: tests/install-deps installs it")
        return 77
    pandoc, reader, filt = (sys.argv[1:4] + [None] * 3)[:3]

    pages = sorted(glob.glob(os.path.join(MAN_DIR, "*.[1-8]")))
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        rendered = dict(zip(pages, pool.map(render, pages)))

    _, listing, _ = run(CLOISTER, "help")
    cmds = re.findall(r"^  ([a-z][a-z-]*) ", listing.split("Commands:", 1)[-1], re.M)
    ok(len(cmds) >= 13, f"help_lists_every_command ({len(cmds)})")

    for c in cmds:
        page = os.path.join(MAN_DIR, f"cloister-{c}.1")
        ok(os.path.isfile(page), f"{c}_has_a_man_page_cloister-{c}.1")
        if not os.path.isfile(page):
            continue
        rc, help_text, _ = run(CLOISTER, "help", c)
        ok(rc == 0 and "built without the manual page" not in help_text,
           f"{c}_help_comes_from_its_manual_page")
        rc2, dash_help, _ = run(CLOISTER, c, "--help")
        ok(rc2 == 0 and dash_help == help_text, f"{c}_--help_prints_what_cloister_help_{c}_prints")

        man = sections(rendered[page][0])
        hlp = sections(help_text)
        summary = help_text.splitlines()[0].split(": ", 1)[-1]
        name_line = " ".join(man.get("NAME", "").split())
        ok(name_line == f"cloister-{c} - {summary}", f"{c}_summary_is_the_man_page_name_line",
           f"man: {name_line!r}\nhelp: {summary!r}")
        for s in ("SYNOPSIS", "OPTIONS", "EXIT STATUS"):
            if s not in man and s not in hlp:
                continue  # the page has no such section
            a, b = words(man.get(s, "")), words(hlp.get(s, ""))
            ok(a == b, f"{c}_help_{s.replace(' ', '_')}_says_what_the_man_page_says",
               f"only in the man page: {sorted((a - b).elements())[:8]}\n"
               f"only in the help: {sorted((b - a).elements())[:8]}")
        ok(f"cloister {c}" in hlp.get("SYNOPSIS", ""), f"{c}_help_has_a_synopsis")

    # No page outlives its command.
    for page in glob.glob(os.path.join(MAN_DIR, "cloister-*.1")):
        c = os.path.basename(page)[len("cloister-"):-2]
        ok(c in cmds, f"cloister-{c}.1_documents_an_existing_command")

    for page in pages:
        err = rendered[page][1]
        ok(not err.strip(), f"{os.path.basename(page)}_renders_without_groff_warnings", err)

    for want in ("cloister.1", "cloister-run.1", "cloister.ini.5", "cloister-policy.5",
                 "cloister-systemd.7", "git-credential-cloister.1"):
        ok(os.path.isfile(os.path.join(MAN_DIR, want)), f"man_page_{want}_is_built")

    # Names of docs/ pages in the man pages' text, read as the filter makes it
    # (plain text, where no line break splits a path).
    if pandoc:
        sources = [p for p in sorted(glob.glob(os.path.join(SRC, "docs", "*.md")))
                   if TITLE.search(open(p, encoding="utf-8").read(4096))]
        docs = set(os.listdir(os.path.join(SRC, "docs")))

        def plain(src):
            return run(pandoc, "--from", reader, "--to", "plain", "--lua-filter", filt,
                       "--metadata", "mode=man", "--metadata", "docdir=/DOCDIR", src)[1]

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            texts = list(pool.map(plain, sources))
        for src, text in zip(sources, texts):
            bare = sorted({m for m in re.findall(r"(?<![/A-Za-z0-9._-])([A-Za-z0-9._-]+\.md)", text)
                           if m in docs})
            ok(not bare, f"{os.path.basename(src)}_names_no_page_by_a_bare_file_name",
               f"bare: {bare}")

    for i, (good, name, diag) in enumerate(results, 1):
        print(f"{'ok' if good else 'not ok'} {i} - {name}")
        if not good and diag:
            for line in diag.splitlines():
                print(f"#   {line}")
    print(f"1..{len(results)}")
    return 0 if all(r[0] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
