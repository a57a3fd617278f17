#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The binary and the commands module keep their thread-local storage small:
# every thread of every cloister process (four in each idle FUSE daemon)
# lays out and zeroes the binary's whole TLS block, and a thread that
# touches the module's gets its own copy of it. A 64 KiB __thread buffer in
# mounts/image cost each idle daemon 256 KiB (issue 48).
set -u
: "${CLOISTER:?CLOISTER must name the cloister binary}"
. "${CLOISTER_SRC:-$(dirname "$0")/../..}/tests/cli/lib.sh"
command -v readelf >/dev/null || skip_all "needs readelf (binutils)"
max=4096
module=$(dirname "$CLOISTER")/cloister-commands.so
[ -f "$module" ] || skip_all "no commands module beside $CLOISTER"
for f in "$CLOISTER" "$module"; do
        size=$(readelf -lW "$f" | awk '$1 == "TLS" { print $6 }') # MemSiz, in hex
        size=$((${size:-0}))
        ok $([ "$size" -le "$max" ] && echo 0 || echo 1) \
                "$(basename "$f")_has_at_most_${max}_bytes_of_thread_local_storage" "$size bytes"
done
echo "1..$n"
[ "$fails" = 0 ]
