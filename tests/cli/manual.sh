#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The manual and the help agree: every command has a man page, built from
# docs/cloister-COMMAND.md; `cloister help COMMAND` and `cloister COMMAND
# --help` print the same; and what they print is word for word what the man
# page's Synopsis, Options and Exit status sections say (compared as
# multisets of words, so line breaks, tables and indentation don't count).
# The man pages render without a groff warning (lintian's check), and every
# page links only to pages that exist.
set -u

: "${CLOISTER:?set by meson}" "${CLOISTER_SRC:?set by meson}" "${CLOISTER_BUILD:?set by meson}"
MAN_DIR=$CLOISTER_BUILD/docs
PANDOC=${1:-} FILTER=${2:-} # as the build runs them (tests/cli/meson.build)
tmp=$(mktemp -d /tmp/cloister-manual.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
n=0
fails=0
ok() { # ok STATUS NAME
        n=$((n + 1))
        if [ "$1" = 0 ]; then echo "ok $n - $2"; else
                echo "not ok $n - $2"
                fails=$((fails + 1))
        fi
}

if [ ! -f "$MAN_DIR/cloister.1" ]; then
        echo "1..0 # SKIP built with -Ddocs=false: no man pages to compare"
        exit 77
fi
if ! command -v man >/dev/null; then
        echo "1..0 # SKIP man (man-db) is not installed: tests/install-deps installs it"
        exit 77
fi

# Every page as a terminal shows it, plain text, once: $tmp/r/PAGE and PAGE.err
mkdir "$tmp/r"
for page in "$MAN_DIR"/*.[1-8]; do
        MANWIDTH=80 LC_ALL=C.UTF-8 man -l "$page" 2>"$tmp/r/${page##*/}.err" | col -bx >"$tmp/r/${page##*/}"
done

# section NAME: the lines of section NAME of stdin. In both texts only
# headings (and man's header and footer, help's first and last line) start
# at column 0; everything in a section is indented.
section() {
        awk -v want="$1" '
                /^[^ ]/ { on = ($0 == want); next }
                on { print }'
}

# words: stdin as one word per line, sorted (letters and digits only)
words() { tr -c '[:alnum:]' '\n' | grep -v '^$' | LC_ALL=C sort; }

mapfile -t cmds < <("$CLOISTER" help | awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
[ "${#cmds[@]}" -ge 13 ]
ok $? "help_lists_every_command (${#cmds[@]})"

for c in "${cmds[@]}"; do
        page=$MAN_DIR/cloister-$c.1
        [ -f "$page" ]
        ok $? "${c}_has_a_man_page_cloister-$c.1"
        [ -f "$page" ] || continue

        "$CLOISTER" help "$c" >"$tmp/help" 2>&1
        rc=$?
        ! grep -q "built without the manual page" "$tmp/help" && [ "$rc" = 0 ]
        ok $? "${c}_help_comes_from_its_manual_page"

        "$CLOISTER" "$c" --help >"$tmp/dash-help" 2>&1
        cmp -s "$tmp/help" "$tmp/dash-help"
        ok $? "${c}_--help_prints_what_cloister_help_${c}_prints"

        cp "$tmp/r/cloister-$c.1" "$tmp/man"
        # The Name line is the summary `cloister help` lists.
        summary=$(sed -n '1s/^cloister [a-z-]*: //p' "$tmp/help")
        name_line=$(section NAME <"$tmp/man" | tr -s ' \n' ' ' | sed 's/^ //; s/ $//')
        [ "$name_line" = "cloister-$c - $summary" ]
        ok $? "${c}_summary_is_the_man_page_name_line"
        [ "$name_line" = "cloister-$c - $summary" ] ||
                printf '#   man:  %s\n#   help: %s\n' "$name_line" "$summary"

        for s in SYNOPSIS OPTIONS "EXIT STATUS"; do
                section "$s" <"$tmp/help" | words >"$tmp/help.words"
                section "$s" <"$tmp/man" | words >"$tmp/man.words"
                if [ ! -s "$tmp/man.words" ] && [ ! -s "$tmp/help.words" ]; then
                        continue # the page has no such section
                fi
                cmp -s "$tmp/help.words" "$tmp/man.words"
                ok $? "${c}_help_${s// /_}_says_what_the_man_page_says"
                diff "$tmp/man.words" "$tmp/help.words" | grep '^[<>]' | head -5 | sed 's/^/#   /'
        done
        section SYNOPSIS <"$tmp/help" | grep -q "cloister $c"
        ok $? "${c}_help_has_a_synopsis"
done

# Every section-1 page of a command names a real command (no page outlives its command).
for page in "$MAN_DIR"/cloister-*.1; do
        c=$(basename "$page" .1)
        c=${c#cloister-}
        "$CLOISTER" help "$c" >/dev/null 2>&1
        ok $? "cloister-$c.1_documents_an_existing_command"
done

# The other pages render cleanly too.
for page in "$MAN_DIR"/*.[1-8]; do
        [ ! -s "$tmp/r/${page##*/}.err" ]
        ok $? "$(basename "$page")_renders_without_groff_warnings"
        sed 's/^/#   /' "$tmp/r/${page##*/}.err"
done

# No page names another docs/ page by a bare file name, which means nothing
# outside the tree: it is a man reference, or the path where it is
# installed. Read from the filter's output as plain text, where no line
# break can split a path.
for src in "$CLOISTER_SRC"/docs/*.md; do
        head -5 "$src" | grep -qE '^# [A-Za-z0-9._-]+\([0-9]\)$' || continue
        "$PANDOC" --from gfm+definition_lists --to plain --lua-filter "$FILTER" \
                --metadata mode=man --metadata docdir=/DOCDIR "$src" >"$tmp/plain"
        grep -oE '(^|[^/A-Za-z0-9._-])[A-Za-z0-9._-]+\.md' "$tmp/plain" | sed 's/^[^A-Za-z0-9]//' |
                while read -r f; do [ -f "$CLOISTER_SRC/docs/$f" ] && echo "$f"; done >"$tmp/bare"
        [ ! -s "$tmp/bare" ]
        ok $? "${src##*/}_names_no_page_by_a_bare_file_name"
        sed 's/^/#   /' "$tmp/bare"
done

# The man pages the issue names exist.
for p in cloister.1 cloister-run.1 cloister.ini.5 cloister-policy.5; do
        [ -f "$MAN_DIR/$p" ]
        ok $? "man_page_${p}_is_built"
done

echo "1..$n"
[ "$fails" = 0 ]
