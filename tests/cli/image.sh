#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# TAP tests of `cloister image` (mounts/image/, docs/cloister-image.md): the
# store shared by every workspace, imports of each kind of source, layers
# shared and whiteouts applied, and every hostile archive refused with one
# line and nothing left behind. The archives are made by image-fixture.py
# (python's tarfile and gzip), each crafted for one refusal.
set -u

: "${CLOISTER:?set by meson}" "${CLOISTER_SRC:?set by meson}"
tmp=$(mktemp -d /tmp/cloister-image.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$CLOISTER_SRC/tests/cli/lib.sh"
F="$CLOISTER_SRC/tests/cli/image-fixture.py"
export XDG_STATE_HOME="$tmp/state"
S="$tmp/state/cloister/images"
img() { run "$CLOISTER" image "$@"; }
count() { find "$S/$1" -mindepth 1 -maxdepth 1 | wc -l; }
jget() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }

echo "1..65"

# --- OCI layout: import, the root composed --------------------------------
cd "$tmp" || exit 1
want=$(python3 "$F" oci oci v1)
img import oci:oci:v1
expect oci_layout_imports 0
[ "$out" = "$want" ]
ok $? "the digest is the manifest's sha256"
img import --json oci:oci:v1
[ "$(jget 'd["new"]' <<<"$out")" = False ] && [ "$(jget 'd["digest"]' <<<"$out")" = "$want" ]
ok $? "a second import stores nothing (--json says new: false)"
img inspect --json "$want"
root=$(jget 'd["root"]' <<<"$out")
[ -d "$root/bin" ]
ok $? "inspect gives the root"
[ ! -e "$root/etc/gone" ] && [ -e "$S/layers/$(jget 'd["layers"][0][7:]' <<<"$out")/etc/gone" ]
ok $? "a .wh. whiteout hides the lower layer's file, which its layer keeps"
[ "$(ls "$root/opt/old")" = c ]
ok $? "an opaque whiteout empties the directory of the lower layers' entries"
grep -q 'tool v2' "$root/bin/tool"
ok $? "the upper layer's file wins"
[ "$(readlink "$root/bin/link")" = tool ]
ok $? "symlinks inside the layer are kept"
[ "$(stat -c %i "$root/bin/hard")" = "$(stat -c %i "$S/layers/$(jget 'd["layers"][0][7:]' <<<"$out")/bin/tool")" ]
ok $? "a hard link inside the layer is kept"
[ "$(stat -c %h "$root/etc/os-release")" -ge 2 ]
ok $? "the root's files are hard links into the layers: stored once"
[ "$(stat -c %a "$root/var/mail")" = 775 ]
ok $? "a setgid directory loses the bit"
[ "$(stat -c %s "$root/etc/passwd")" = 0 ] && [ -f "$root/etc/resolv.conf" ]
ok $? "the root has empty files where the sandbox binds its /etc entries"
[ "$(stat -c %a "$S")" = 700 ]
ok $? "the store is its owner's alone (0700)"
layers=$(count layers)
[ "$layers" = 2 ]
ok $? "two layers stored"
img import oci:oci:nosuchtag
expect a_tag_not_in_the_index_is_refused 1 "no manifest tagged nosuchtag"

# --- oci-archive, docker-archive ------------------------------------------
python3 "$F" oci-archive oa.tar >/dev/null
img import oci-archive:oa.tar
[ "$rc" = 0 ] && [ "${out%% *}" = "$want" ] && [ "$(count layers)" = 2 ]
ok $? "an oci-archive of the same image is the same image, stored once"
[ "$(count tmp)" = 0 ]
ok $? "the unpacked archive is gone after the import"
python3 "$F" docker-archive da.tar
img import --json docker-archive:da.tar
expect docker_archive_imports 0
ddigest=$(jget 'd["digest"]' <<<"$out")
img list --json
[ "$(jget 'len(d)' <<<"$out")" = 2 ] && [ "$(jget 'sorted(i["kind"] for i in d)' <<<"$out")" = "['docker-archive', 'oci']" ]
ok $? "list --json has both"
img list
[ "$(wc -l <<<"$out")" = 2 ] && grep -q "docker-archive:da.tar" <<<"$out"
ok $? "list has one line per image"
img inspect "${ddigest:7:10}"
expect inspect_takes_a_digest_prefix 0
img inspect 0000
expect inspect_of_an_unknown_digest_fails 1 "no image sha256:0000"

# --- dir: deterministic ------------------------------------------------------
mkdir -p tree/bin tree/etc
cp /bin/true tree/bin/
echo ID=tree >tree/etc/os-release
touch -d @1700000000 tree/etc/os-release tree/bin/true tree/bin tree/etc tree
img import dir:tree
d1=$out
img import --json dir:"$tmp/tree"
[ "$(jget 'd["digest"]' <<<"$out")" = "$d1" ]
ok $? "dir: the same tree gives the same digest"
echo changed >>tree/etc/os-release
img import dir:tree
[ "$rc" = 0 ] && [ "$out" != "$d1" ]
ok $? "dir: a changed tree gives another digest"

# --- rm, gc ------------------------------------------------------------------
img rm --json "$ddigest"
[ "$rc" = 0 ] && [ "$(jget 'd["removed"][0]' <<<"$out")" = "$ddigest" ] && [ ! -e "$S/images/${ddigest:7}" ]
ok $? "rm removes the image"
before=$(count layers)
mkdir -p "$S/tmp/import-stale/layer-0"
img gc --json
[ "$rc" = 0 ] && [ "$(jget 'd["layers"]' <<<"$out")" = 2 ] && [ "$(count layers)" = $((before - 2)) ]
ok $? "gc removes the layers no image uses"
[ "$(jget 'd["tmp"]' <<<"$out")" = 1 ] && [ "$(count tmp)" = 0 ]
ok $? "gc removes what an unfinished import left"
[ -d "$root/bin" ]
ok $? "gc keeps what images use"
# A build at work (mmdebstrap runs for minutes without the store's lock) holds
# its directory locked: gc leaves it, and takes it once it is let go.
mkdir -p "$S/tmp/build-busy/root"
exec 9<"$S/tmp/build-busy"
flock -x 9
img gc --json
[ "$rc" = 0 ] && [ -d "$S/tmp/build-busy/root" ] && [ "$(jget 'd["tmp"]' <<<"$out")" = 0 ]
ok $? "gc leaves the work directory of a build at work" "$err$out"
exec 9<&-
img gc --json
[ "$rc" = 0 ] && [ ! -e "$S/tmp/build-busy" ]
ok $? "and removes it once the build let it go" "$err$out"

# --- hostile archives: refused, one line, nothing left -------------------------
hostile() { # hostile KIND REGEX [OPTIONS...]
        local kind=$1 re=$2
        shift 2
        local l i
        l=$(count layers) i=$(count images)
        python3 "$F" hostile "$kind" "h-$kind" >/dev/null
        img import "$@" "oci:h-$kind"
        expect "hostile_${kind}_is_refused" 1 "$re"
        one_line && [ "$(count layers)" = "$l" ] && [ "$(count images)" = "$i" ] && [ "$(count tmp)" = 0 ]
        ok $? "hostile_${kind}_leaves_nothing_behind_and_says_one_line"
}
hostile dotdot "entry 'ok/\.\./\.\./escaped' has a '\.\.' component"
[ ! -e "$S/escaped" ] && [ ! -e "$S/tmp/escaped" ]
ok $? "nothing was written outside the layer"
hostile absolute "'/tmp/escaped-absolute' has an absolute path"
hostile symlink-out "symlink 'ok/up' points to '\.\./\.\./\.\./etc', out of the layer"
hostile symlink-under "entry 'ok/sneaky/file' lies under 'ok/sneaky', which is not a directory"
hostile hardlink-out "hard link 'ok/h' points to '\.\./\.\./etc/passwd', out of the layer"
hostile device "entry 'ok/null' is a device node"
hostile setuid "entry 'ok/su' is setuid: refused"
hostile big-entry "entry 'ok/big' is larger than \[image\] max_file" --max-file 1M
hostile bomb "unpacks to more than \[image\] max_size .* decompression bomb" --max-size 32M
hostile digest "digest mismatch: its sha256 is sha256:[0-9a-f]{64}, the manifest names sha256:0{64}"
hostile many-entries "more than \[image\] max_entries \(200\)" --max-entries 200
hostile deep "is nested deeper than 128 directories"
img import --allow-setuid --json oci:h-setuid
r=$(jget 'd["digest"]' <<<"$out")
m=$(stat -c %a "$S/images/${r:7}/root/ok/su" 2>/dev/null)
[ "$rc" = 0 ] && [ "$m" = 755 ]
ok $? "with --allow-setuid the file comes in without its setuid bit ($m)"

# --- an import killed at any step leaves nothing usable ----------------------
# CLOISTER_TEST_CRASH_AT=import:N kills the Nth step (lib/crashpoint.h), N = 1, 2, ...
# until the import completes.
rm -rf "$S"
killed=0 whole=1
for k in $(seq 1 20); do
        CLOISTER_TEST_CRASH_AT=import:$k "$CLOISTER" image import oci:oci:v1 >/dev/null 2>&1
        rc=$?
        [ "$rc" = 137 ] || break
        killed=$((killed + 1))
        # Killed: either no image, or (after the last rename) the whole one.
        for d in "$S"/images/*; do
                [ -e "$d" ] || continue
                [ -f "$d/image.json" ] && [ -d "$d/root/bin" ] || whole=0
        done
        "$CLOISTER" image list --json | grep -q "sha256:" && [ ! -d "$S/images/${want:7}" ] && whole=0
done
[ "$killed" -ge 4 ] && [ "$rc" = 0 ] && [ "$whole" = 1 ]
ok $? "an import killed at each of its $killed steps leaves no partial image"
img import --json oci:oci:v1
[ "$rc" = 0 ] && [ -f "$S/images/${want:7}/image.json" ] && grep -q 'tool v2' "$S/images/${want:7}/root/bin/tool"
ok $? "after the kills the image imports whole"

# --- a package lock: a Debian root's versions, exactly ------------------------
# The root's dpkg database is a real one, read by dpkg-query, as mmdebstrap
# leaves it (image build applies the same check to what it bootstrapped).
mkdir -p lk/var/lib/dpkg lk/etc
echo ID=locked >lk/etc/os-release
for p in "alpha 1.0-1 amd64" "beta 2:3.4-5 all"; do
        set -- $p
        printf 'Package: %s\nStatus: install ok installed\nPriority: optional\nMaintainer: t <t@example.com>\nArchitecture: %s\nVersion: %s\nDescription: %s\n\n' \
                "$1" "$3" "$2" "$1"
done >lk/var/lib/dpkg/status
rm -rf "$S"
img import dir:lk --lock pkgs.lock
expect a_lock_that_does_not_exist_is_refused 1 'pkgs.lock: No such file.*--update-lock'
[ ! -d "$S/images" ] || [ "$(count images)" = 0 ]
ok $? "and nothing is stored"
img import dir:lk --lock pkgs.lock --update-lock
[ "$rc" = 0 ] && [ "$(grep -v '^#' pkgs.lock)" = "$(printf 'alpha 1.0-1\nbeta 2:3.4-5')" ]
ok $? "--update-lock writes every package at its version" "$err$(cat pkgs.lock 2>&1)"
img import dir:lk --lock pkgs.lock
expect the_same_root_imports_under_its_lock 0
sed -i 's/^beta 2:3.4-5$/beta 2:3.4-6/' pkgs.lock
echo "gamma 1.0" >>pkgs.lock
mv "$S/images" "$tmp/images.kept"
img import dir:lk --lock pkgs.lock
expect other_versions_are_refused_naming_each 1 '^cloister image: .*: \+ beta 2:3\.4-5, - beta 2:3\.4-6, - gamma 1\.0; refresh'
[ ! -d "$S/images" ] || [ "$(count images)" = 0 ]
ok $? "and the refused root is not stored"
img import oci:oci:v1 --lock pkgs.lock
expect a_lock_on_an_archive_source_is_a_usage_error 2 'dir: source'

if [ "$fails" = 0 ]; then exit 0; fi
exit 1
