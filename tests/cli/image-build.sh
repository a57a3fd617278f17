#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# TAP: `cloister image build --debian` (issue 49): a Debian image made with
# mmdebstrap from the host's apt sources, imported into the store, and made
# again to the same digest with the same SOURCE_DATE_EPOCH. Needs root,
# mmdebstrap and a reachable Debian mirror; skips saying which is missing.
# Its own suite (image-build): two bootstraps take minutes.
set -u

: "${CLOISTER:?set by meson}"
skip_all() {
        echo "1..0 # SKIP $1"
        exit 77
}
[ "$(id -u)" = 0 ] || skip_all "needs root (mmdebstrap's root mode)"
command -v mmdebstrap >/dev/null || skip_all "mmdebstrap is not installed (apt-get install mmdebstrap)"
tmp=$(mktemp -d /var/tmp/cloister-image-build.XXXXXX)
trap 'rm -rf --one-file-system "$tmp"' EXIT
mirror=$(awk '/^URIs:/ {print $2; exit} /^deb / {print $2; exit}' \
        /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null)
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
/usr/lib/apt/apt-helper -o Acquire::http::Timeout=20 -o Acquire::Retries=1 \
        download-file "$mirror/dists/bookworm/Release" "$tmp/Release" >/dev/null 2>&1 ||
        skip_all "no Debian mirror is reachable ($mirror/dists/bookworm/Release)"
export XDG_STATE_HOME="$tmp/state"
S="$tmp/state/cloister/images"
echo "1..6"
n=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fails=1; fi; }
fails=0

d1=$("$CLOISTER" image build --debian bookworm --packages busybox --mirror "$mirror" \
        --source-date-epoch 1700000000 --lock "$tmp/packages.lock" --update-lock 2>"$tmp/err1")
ok $? "build --debian bookworm makes an image"
[[ $d1 =~ ^sha256:[0-9a-f]{64}$ ]]
ok $? "it prints the digest ($d1)"
root="$S/images/${d1#sha256:}/root"
grep -q '^12' "$root/etc/debian_version" && [ -x "$root/bin/busybox" ]
ok $? "the image is Debian 12 with the packages asked for"
rm -rf "$S"
d2=$("$CLOISTER" image build --debian bookworm --packages busybox --mirror "$mirror" \
        --source-date-epoch 1700000000 --lock "$tmp/packages.lock" --json 2>"$tmp/err2" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["digest"])')
[ "$d2" = "$d1" ]
ok $? "built again with the same SOURCE_DATE_EPOCH and package lock, the digest is the same ($d2)"
grep -q '^busybox ' "$tmp/packages.lock"
ok $? "--update-lock wrote the packages the first build installed"
[ -z "$(find "$root" -perm /6000 -type f 2>/dev/null)" ]
ok $? "no setuid or setgid file is stored"
[ "$fails" = 0 ]
