#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# report-browser.sh: `cloister report` of a real, hostile session, opened
# in headless Chromium (Debian's chromium; tests/install-deps --tests
# installs it) by report-cdp.py: no console error, no request, the
# sections and counts in the DOM, the hostile names as text, and a
# screenshot (build/report-screenshot.png; docs/cloister-report.md shows
# one). Its own suite, 'browser', outside the unit suites: a machine
# without Chromium skips it, saying so.

. "$CLOISTER_SRC/tests/sandbox/lib.sh"

chromium=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chromium" ] || skip_all "chromium is not installed (Debian: apt-get install chromium; tests/install-deps --tests)"
[ "$fs_mode" = fuse ] || skip_all "the report's diff needs the FUSE mount"
T=$(mktemp -d /tmp/cloister-report-browser.XXXXXX)
chmod 755 "$T"
at_exit "rm -rf '$T'"
ws_new "$T/a"
preflight

crun "$CFG" -- bash -c '
printf "x\n" > "\"><img src=x onerror=alert(1)>"
printf "x\n" > $'"'"'\u202etxt.exe'"'"'
printf "<script>window.alert_fired=1</script>\n<a href=\"javascript:alert(3)\">x</a>\n" > hostile.txt
sed -i "s/hello/hello, reviewer/" hello.txt' >/dev/null
crun "$CFG" -- sh -c 'exit 3' "<script>window.alert_fired=1</script>" >/dev/null
"$CLOISTER" report "$CFG" -o "$T/r.html" 2>/dev/null
is report_is_written "$?" 0
runs=$("$CLOISTER" log --runs --json "$CFG" | wc -l)
files=$("$CLOISTER" diff --json --stat "$CFG" | python3 -c 'import json,sys; print(json.load(sys.stdin)["changed"])')
python3 - "$runs" "$files" >"$T/expect.json" <<'PY'
import json, sys
runs, files = sys.argv[1:3]
print(json.dumps({
    "h2": ["Summary", "Timeline", f"Commands ({runs})", f"Changes ({files} files"],
    "text": ['"><img src=x onerror=alert(1)>', "<U+202E>txt.exe",
             "<script>window.alert_fired=1</script>", '<a href="javascript:alert(3)">x</a>',
             "run record chain verified", "journal complete"]}))
PY
out=$(python3 "$CLOISTER_SRC/tests/sandbox/report-cdp.py" "$chromium" "$T/r.html" \
        "${CLOISTER_BUILD:-$T}/report-screenshot.png" "$T/expect.json" 2>&1)
# Renumber report-cdp.py's lines into this script's plan.
while IFS= read -r line; do
        case "$line" in
        "ok "*) ok "${line#ok * - }" ;;
        "not ok "*) not_ok "${line#not ok * - }" "" ;;
        *) echo "$line" | sed 's/^\([^#]\)/# \1/' ;;
        esac
done <<<"$out"
done_testing
