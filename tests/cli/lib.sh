# SPDX-License-Identifier: MIT
# TAP helpers of the CLI tests: sourced. run() wants $tmp set.

n=0
fails=0

ok() { # ok STATUS NAME [WHY]: WHY is shown (up to 20 lines) when it fails
        n=$((n + 1))
        if [ "$1" = 0 ]; then echo "ok $n - $2"; else
                echo "not ok $n - $2"
                [ -n "${3:-}" ] && printf '%s\n' "$3" | head -20 | sed 's/^/# /'
                fails=$((fails + 1))
        fi
}

skip_all() {
        echo "1..0 # SKIP $1"
        exit 77
}

# need_root_fuse WHY: skip unless root with /dev/fuse; WHY says what root is for.
need_root_fuse() {
        [ "$(id -u)" = 0 ] || skip_all "needs root ($1)"
        [ -e /dev/fuse ] || skip_all "FUSE is not available (/dev/fuse missing)"
}

# repo_new DIR [TEXT]: a throwaway repository with one commit of a.txt (TEXT, or "a").
repo_new() {
        mkdir -p "$1"
        git init -q -b main "$1"
        echo "${2:-a}" >"$1/a.txt"
        git -C "$1" add -A
        git -C "$1" -c user.name=t -c user.email=t@example.com commit -qm base
}

# unmount_under DIR: lazily unmount whatever a failed run left mounted below DIR, deepest first.
unmount_under() {
        awk -v t="$1" 'index($5, t "/") == 1 {print $5}' /proc/self/mountinfo | sort -r |
                while read -r m; do umount -l "$m"; done
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
