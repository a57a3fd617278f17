# SPDX-License-Identifier: MIT
#
# tests/bench/report.sh: the output of tests/bench/run, which sources it:
# the tables, the goals of issues 35 and 17 (met, MISSED or n/a, from the ratios of
# one run's medians) and the plot. Functions only; they read run's results
# (cell, rows, row_section, broker, startup, dens, rss_*, notes).
# shellcheck shell=bash disable=SC2154 # the results are run's globals

# --- report -------------------------------------------------------------------

fmt_ms() {
        awk -v v="$1" 'BEGIN {
                if (v >= 1000) printf "%.2f s", v / 1000
                else if (v >= 100) printf "%.0f ms", v
                else if (v >= 10) printf "%.1f ms", v
                else printf "%.2f ms", v }'
}
ratio() { # A B: A/B with 2 significant decimals, more below 0.1 (setup rows)
        awk -v a="$1" -v b="$2" 'BEGIN { if (b <= 0) { print "?"; exit }
                r = a / b; if (r >= 0.1) printf "%.2f", r; else if (r >= 0.001) printf "%.3f", r
                else printf "%.1e", r }'
}
fmt_kb() { awk -v v="$1" 'BEGIN { if (v >= 10240) printf "%.0f MB", v / 1024; else printf "%.1f MB", v / 1024 }'; }

# Sets $txt to the text of a cell: "12.3 ms (1.20x)", or "n/a [2]".
cell_text() { # ROW PRES
        local v=${cell["$1|$2"]:-} nat=${cell["$1|native"]:-}
        if [ -z "$v" ]; then
                if [ -n "${unavailable[$2]:-}" ]; then
                        note "$2: ${unavailable[$2]}"
                else
                        note "$2: no result for this row"
                fi
                txt="n/a [$note_n]"
        elif [[ $v == n/a:* ]]; then
                txt="n/a [${v#n/a:}]"
        elif [ "$2" = native ] || [[ -z $nat || $nat == n/a:* ]]; then
                txt=$(fmt_ms "$v")
        else
                txt="$(fmt_ms "$v") ($(ratio "$v" "$nat")x)"
        fi
}

machine() {
        local disk dev
        dev=$(findmnt -no SOURCE --target "$work" | head -1)
        disk="$(findmnt -no FSTYPE --target "$work" | head -1) on $dev"
        dev=$(basename "$(readlink -f "$dev")")
        if [ -r "/sys/class/block/$dev/queue/rotational" ]; then
                [ "$(cat "/sys/class/block/$dev/queue/rotational")" = 0 ] &&
                        disk+=" (non-rotational)" || disk+=" (rotational)"
        fi
        echo "- cpu: $(nproc) cores, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
        echo "- memory: $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
        echo "- kernel: $(uname -sr)"
        echo "- disk: $disk"
        echo "- load average at start / end: $load_start / $(cut -d' ' -f1-3 /proc/loadavg)"
}

# --- goals ----------------------------------------------------------------------
# The goals of issues 35 and 17, each printed as met, MISSED or n/a (not measured in
# this run, and why), from the ratios of this run's medians.

# verdict OK TEXT: one goal line.
verdict() { local ok=$1; shift; if ((ok)); then echo "- met: $*"; else echo "- MISSED: $*"; fi; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }' && echo 1 || echo 0; }
measured() { [[ -n $1 && $1 != n/a:* ]]; }

# goal_vs ROW-ERE COLUMN FACTOR TEXT: every measured row matching ROW-ERE,
# cloister at most FACTOR times COLUMN.
goal_vs() {
        local re=$1 col=$2 f=$3 text=$4 row cl other any=0
        for row in "${rows[@]}"; do
                [[ $row =~ $re ]] || continue
                cl=${cell["$row|cloister"]:-} other=${cell["$row|$col"]:-}
                measured "$cl" && measured "$other" || continue
                any=1
                verdict "$(le "$cl" "$(awk -v o="$other" -v f="$f" 'BEGIN { print f * o }')")" \
                        "$row: $text: $(ratio "$cl" "$other")x ($(fmt_ms "$cl") vs $(fmt_ms "$other"))"
        done
        ((any)) || echo "- n/a: $text (no such row with both columns in this run)"
}

goals() {
        local row r cl fo ov nat big=0 n v b m c ms_bare ms_mnt ms_cold any found
        echo
        echo "Goals (issue 35):"
        goal_vs '^(find \+ stat|read all|grep -r)' overlayfs 2 "within 2x of kernel overlayfs"
        goal_vs '^create \+ delete' native 2 "at most 2x native"
        goal_vs '^test suite' native 1.5 "at most 1.5x native"
        goal_vs '^git status, first' native 3 "at most 3x native"
        goal_vs '^(git status|find \+ stat|grep -r|create \+ delete).*warm$' native 1.3 \
                "warm file-heavy work at most 1.3x native"
        ms_bare="" ms_mnt="" ms_cold=""
        startup_find 'bwrap|bubblewrap' 'cloister' && ms_bare=${startup[$found]}
        startup_find 'mounted' 'broker' && ms_mnt=${startup[$found]}
        startup_find 'cold' && ms_cold=${startup[$found]}
        if [ -n "$ms_bare" ] && [ -n "$ms_cold" ]; then
                verdict "$(le "$ms_cold" "$(awk -v b="$ms_bare" 'BEGIN { print 3 * b }')")" \
                        "cloister run from cold, to the first instruction, <= 3x bare bubblewrap: $(ratio "$ms_cold" "$ms_bare")x ($(fmt_ms "$ms_cold") vs $(fmt_ms "$ms_bare"))"
        else
                echo "- n/a: cloister run from cold <= 3x bare bubblewrap (no start-up rows${startup_na:+ [$startup_na]})"
        fi
        if [ -n "$ms_bare" ] && [ -n "$ms_mnt" ]; then
                verdict "$(le "$ms_mnt" "$(awk -v b="$ms_bare" 'BEGIN { print 1.5 * b }')")" \
                        "cloister run over a mounted workspace <= 1.5x bare bubblewrap: $(ratio "$ms_mnt" "$ms_bare")x ($(fmt_ms "$ms_mnt") vs $(fmt_ms "$ms_bare"))"
        else
                echo "- n/a: cloister run over a mounted workspace <= 1.5x bare bubblewrap (no start-up rows${startup_na:+ [$startup_na]})"
        fi
        echo
        echo "Goals (issue 17):"
        any=0
        for row in "${rows[@]}"; do
                [[ ${row_section[$row]} == fs || ${row_section[$row]} == export ]] || continue
                cl=${cell["$row|cloister"]:-} fo=${cell["$row|fuse-overlayfs"]:-}
                measured "$cl" && measured "$fo" || continue
                any=1
                verdict "$(le "$cl" "$fo")" "$row: at or below fuse-overlayfs:" \
                        "$(ratio "$cl" "$fo")x ($(fmt_ms "$cl") vs $(fmt_ms "$fo"))"
        done
        ((any)) || echo "- n/a: every file-system row at or below fuse-overlayfs (no fs or export row with both columns in this run)"
        goal_vs '^(find \+ stat|grep -r|git status).*warm$' overlayfs 1.5 "within 1.5x of kernel overlayfs"
        row=""
        for r in "${rows[@]}"; do
                [[ $r =~ ^export,\ ([0-9]+)\ changed ]] || continue
                n=${BASH_REMATCH[1]}
                ((n > big)) && big=$n row=$r
        done
        cl=${cell["$row|cloister"]:-} nat=${cell["$row|native"]:-}
        if [ -n "$row" ] && measured "$cl" && measured "$nat"; then
                verdict "$(le "$cl" "$nat")" "cloister diff over $big changed files no slower than" \
                        "git diff on a native checkout: $(ratio "$cl" "$nat")x ($(fmt_ms "$cl") vs $(fmt_ms "$nat"))$( ((big != 10000)) && echo " (the goal is at 10,000 files)")"
        else
                echo "- n/a: cloister diff over 10,000 changed files no slower than git diff (not measured in this run)"
        fi
        for v in "16 clients:0.5" "1 client:0.3"; do
                n=${v%%:*} m=${v#*:}
                b=${broker["issue, $n"]:-}
                if [ -n "$b" ] && [ -n "$raw_sign" ]; then
                        c=$(ratio "${b%% *}" "$raw_sign")
                        verdict "$(le "$m" "$c")" "broker issuing with $n at >= $m of raw crypto_sign: $c (${b%% *}/s vs $raw_sign/s)"
                else
                        echo "- n/a: broker issuing with $n at >= $m of raw crypto_sign (not measured in this run)"
                fi
        done
        if [ -n "$ms_bare" ] && [ -n "$ms_mnt" ]; then
                verdict "$(le "$ms_mnt" "$(awk -v b="$ms_bare" 'BEGIN { print 2 * b }')")" \
                        "cloister run over a mounted workspace, to the first instruction, <= 2x bare bubblewrap: $(ratio "$ms_mnt" "$ms_bare")x ($(fmt_ms "$ms_mnt") vs $(fmt_ms "$ms_bare"))"
        else
                echo "- n/a: cloister run over a mounted workspace <= 2x bare bubblewrap (no start-up rows${startup_na:+ [$startup_na]})"
        fi
        if [ -n "$ms_bare" ] && [ -n "$ms_cold" ]; then
                verdict "$(le "$ms_cold" "$(awk -v b="$ms_bare" 'BEGIN { print 2 * b + 50 }')")" \
                        "cloister run from cold <= 2x bare bubblewrap + 50 ms: $(fmt_ms "$ms_cold") vs $(fmt_ms "$(awk -v b="$ms_bare" 'BEGIN { print 2 * b + 50 }')")${ms_mnt:+ (cold - mounted: $(fmt_ms "$(awk -v c="$ms_cold" -v m="$ms_mnt" 'BEGIN { print c - m }')"))}"
        else
                echo "- n/a: cloister run from cold <= 2x bare bubblewrap + 50 ms (no start-up rows${startup_na:+ [$startup_na]})"
        fi
        if [ -n "${rss_idle[cloister]:-}" ]; then
                verdict "$(le "${rss_idle[cloister]}" 10239)" \
                        "idle FUSE daemon under 10 MiB RSS: $(fmt_kb "${rss_idle[cloister]}")${rss_idle[fuse-overlayfs]:+ (fuse-overlayfs: $(fmt_kb "${rss_idle[fuse-overlayfs]}"))}"
        else
                echo "- n/a: idle FUSE daemon under 10 MiB RSS (the fs section did not run)"
        fi
        if [ -n "${dens[workspaces mounted]:-}" ]; then
                echo "- measured: density: ${dens[workspaces mounted]} workspaces mounted at once:" \
                        "total RSS $(fmt_kb "${dens[total RSS, kB]}") (PSS $(fmt_kb "${dens[total PSS, kB]}")," \
                        "private $(fmt_kb "${dens[total private, kB]}")), mount of the last $(fmt_ms "${dens[mount of the last, ms]}")"
        else
                echo "- n/a: density row (not measured in this run${density_na:+ [$density_na]})"
        fi

        # Earlier targets that the goals above do not replace.
        echo
        echo "Earlier targets:"
        for row in "${rows[@]}"; do
                cl=${cell["$row|cloister"]:-} nat=${cell["$row|native"]:-}
                measured "$cl" || continue
                if [[ $row == setup,* || $row == "mount again,"* ]]; then
                        verdict "$(le "$cl" 50)" "$row: mount in $(fmt_ms "$cl") (target <= 50 ms)"
                elif measured "$nat"; then
                        verdict "$(le "$cl" "$(awk -v n="$nat" 'BEGIN { print 2 * n }')")" \
                                "$row: $(ratio "$cl" "$nat")x native (target <= 2x)"
                fi
        done
        if [ -n "${dens[mount of the last, ms]:-}" ]; then
                verdict "$(le "${dens[mount of the last, ms]}" 50)" \
                        "density: mount of the ${dens[workspaces mounted]}th workspace in $(fmt_ms "${dens[mount of the last, ms]}") (target <= 50 ms)"
        fi
}

report() {
        local row p line v nat cl fo r
        echo "## cloister benchmark, $(date -u '+%Y-%m-%d %H:%M UTC')"
        echo
        machine
        echo "- tools: $(git --version), fuse-overlayfs $(fuse-overlayfs --version 2>/dev/null |
                awk 'NR == 1 { print $NF }'), cloister $("$cloister" --version 2>/dev/null |
                awk 'NR == 1 { print $2 }') at $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?')"
        echo "- run: \`tests/bench/run $cmdline\`: median of $rounds rounds;" \
                "workloads other than setup on $( [ -n "$repo_path" ] && echo "$repo_path at $repo_rev" ||
                        echo "a $tree-file repository of gen-repo's $shape shape")"
        echo
        echo "Times are medians; (Nx) is the time divided by native's. Setup is" \
                "\`git clone --shared\` (checkout) for native and the mount alone for the others."
        echo
        if ((${#rows[@]})); then
                echo "| workload | native | overlayfs | fuse-overlayfs | cloister |"
                echo "|---|---:|---:|---:|---:|"
        fi
        for row in "${rows[@]}"; do
                line="| $row"
                for p in "${presentations[@]}"; do
                        cell_text "$row" "$p"
                        line+=" | $txt"
                done
                echo "$line |"
        done

        if [ -n "$raw_sign" ]; then
                echo
                echo "| broker | rate | p50 | p99 | vs raw libsodium |"
                echo "|---|---:|---:|---:|---:|"
                echo "| raw \`crypto_sign\` (1 core) | $raw_sign/s | | | 1.00 |"
                echo "| raw \`crypto_sign_verify_detached\` (1 core) | $raw_verify/s | | | 1.00 |"
                for r in "issue, 1 client" "issue, 16 clients" "verify (introspect), 1 client" \
                        "verify (introspect), 16 clients" "verify offline (broker_token_verify)"; do
                        v=${broker[$r]:-}
                        if [ -z "$v" ]; then
                                echo "| $r | n/a [${broker_fail[$r]:-$broker_na}] | | | |"
                        else
                                read -r rate p50 p99 <<<"$v"
                                base=$raw_sign
                                [[ $r == verify* ]] && base=$raw_verify
                                echo "| $r${broker_err[$r]:+ [${broker_err[$r]}]} | $rate/s |" \
                                        "${p50:+$p50 µs} | ${p99:+$p99 µs} | $(ratio "$rate" "$base") |"
                        fi
                done
        fi

        if ((${#startup_rows[@]})); then
                echo
                echo "| sandbox start-up (to the agent's first instruction) | median |"
                echo "|---|---:|"
                for r in "${startup_rows[@]}"; do
                        echo "| $r | $(fmt_ms "${startup[$r]}") |"
                done
        fi
        if [ -n "${dens[workspaces mounted]:-}" ]; then
                echo
                echo "| density: ${dens[workspaces mounted]} workspaces mounted at once | |"
                echo "|---|---:|"
                echo "| mount of the first | $(fmt_ms "${dens[mount of the first, ms]}") |"
                echo "| mount of the last (the ${dens[workspaces mounted]}th) | $(fmt_ms "${dens[mount of the last, ms]}") |"
                echo "| median mount | $(fmt_ms "${dens[median mount, ms]}") |"
                echo "| total RSS of the daemons | $(fmt_kb "${dens[total RSS, kB]}") |"
                echo "| total PSS (shared pages divided among the daemons) | $(fmt_kb "${dens[total PSS, kB]}") |"
                echo "| total private memory | $(fmt_kb "${dens[total private, kB]}") |"
                echo "| mean RSS per daemon | $(fmt_kb "${dens[mean RSS per daemon, kB]}") |"
        fi

        echo
        echo "| resident memory | idle | after reading the tree |"
        echo "|---|---:|---:|"
        for p in fuse-overlayfs cloister; do
                if [ -n "${rss_idle[$p]:-}" ]; then
                        echo "| $p daemon | $(fmt_kb "${rss_idle[$p]}") |" \
                                "$( [ -n "${rss_read[$p]:-}" ] && fmt_kb "${rss_read[$p]}") |"
                else
                        echo "| $p daemon | n/a | n/a |"
                fi
        done
        if [ -n "${rss_broker_idle:-}" ]; then
                echo "| cloister broker (idle / after the load) | $(fmt_kb "$rss_broker_idle") |" \
                        "$(fmt_kb "$rss_broker_load") |"
        else
                echo "| cloister broker | n/a${broker_na:+ [$broker_na]} | |"
        fi

        goals
        if ((${#notes[@]})); then
                echo
                echo "Notes:"
                for ((r = 0; r < ${#notes[@]}; r++)); do
                        echo "$((r + 1)). ${notes[$r]}"
                done
        fi
}

draw_plot() { # FILE.svg
        local dat="$work/plot.dat" row p v nat
        if ! command -v gnuplot >/dev/null && ! install_pkg gnuplot-nox; then
                log "gnuplot is not installed and could not be installed; no plot"
                return
        fi
        for row in "${rows[@]}"; do
                nat=${cell["$row|native"]:-}
                [[ -z $nat || $nat == n/a:* ]] && continue
                printf '%s' "$row"
                for p in overlayfs fuse-overlayfs cloister; do
                        v=${cell["$row|$p"]:-}
                        if [[ -z $v || $v == n/a:* ]]; then
                                printf '\t?'
                        else
                                awk -v a="$v" -v b="$nat" 'BEGIN { printf "\t%.6g", a / b }'
                        fi
                done
                printf '\n'
        done >"$dat"
        local term='svg size 1100,650 dynamic font "sans,11"'
        [[ $1 == *.png ]] && term='png size 1100,650'
        gnuplot <<PLOT || log "gnuplot failed; no plot"
set terminal $term
set output "$1"
set title "cloister benchmark: time relative to a native checkout (lower is better)"
set datafile separator "\t"
set datafile missing "?"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set logscale y 10
set ytics ("0.001" 0.001, "0.01" 0.01, "0.1" 0.1, "0.5" 0.5, "1" 1, "2" 2, "5" 5, "10" 10, "20" 20, "50" 50, "100" 100)
set ylabel "time / native time (log scale)"
set xtics rotate by 30 right scale 0 font ",9"
set grid ytics
set key top right
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lc rgb "black"
set arrow from graph 0, first 2 to graph 1, first 2 nohead dt 3 lc rgb "red"
set label "2x target" at graph 0.01, first 2 left offset 0,0.7 tc rgb "red"
plot "$dat" using 2:xtic(1) title "kernel overlayfs", '' using 3 title "fuse-overlayfs", '' using 4 title "cloister"
PLOT
        [ -s "$1" ] && log "plot written to $1"
}
