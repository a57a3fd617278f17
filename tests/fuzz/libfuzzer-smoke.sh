#!/bin/sh
# SPDX-License-Identifier: MIT
# libfuzzer-smoke.sh FUZZER [FLAGS] [FILES-OR-DIRS...]: a short libFuzzer
# run for `meson test`. libFuzzer writes the inputs it finds into its first
# corpus directory and will not mix files with directories, so the seeds
# are copied into a fresh temp dir that is that corpus, and removed after.
set -eu
fuzzer=$1
shift
corpus=$(mktemp -d /tmp/cloister-fuzz.XXXXXX)
trap 'rm -rf "$corpus"' EXIT
flags=""
for a in "$@"; do
        case $a in
        -*) flags="$flags $a" ;;
        *)
                if [ -d "$a" ]; then
                        cp "$a"/* "$corpus"/ 2>/dev/null || true
                else
                        cp "$a" "$corpus/"
                fi
                ;;
        esac
done
# shellcheck disable=SC2086 # flags are libFuzzer's -name=value words, no spaces
exec "$fuzzer" $flags "$corpus"
