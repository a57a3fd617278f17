# SPDX-License-Identifier: MIT
# TAP helpers of the CLI tests: sourced, after $tmp is set.

n=0
fails=0

ok() {
        n=$((n + 1))
        if [ "$1" = 0 ]; then echo "ok $n - $2"; else
                echo "not ok $n - $2"
                fails=$((fails + 1))
        fi
}

# run CMD...: sets $rc, $out (stdout) and $err (stderr)
run() {
        "$@" >"$tmp/out" 2>"$tmp/err"
        rc=$?
        out=$(cat "$tmp/out")
        err=$(cat "$tmp/err")
}

expect() { # expect NAME RC [STDERR-REGEX]
        local name=$1 want=$2 re=${3:-}
        local good=0
        [ "$rc" = "$want" ] || good=1
        if [ -n "$re" ] && ! grep -Eq -- "$re" <<<"$err"; then good=1; fi
        if [ "$good" != 0 ]; then
                echo "# rc=$rc (want $want)"
                echo "# stderr: $err" | head -5
        fi
        ok $good "$name"
}

one_line() { [ "$(printf '%s' "$err" | wc -l)" -le 0 ]; }
