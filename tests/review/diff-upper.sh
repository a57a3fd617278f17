#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# cloister diff over a real mount reads a changed file's data from the
# daemon's upper store, not through the mount, when the store's file is the
# one the view shows (same size, mtime and ctime). This checks that the patch
# is still exactly the mounted tree in every case where the store and the
# view differ or are named differently: hard links, names the store escapes
# (.cloister~*), metacopies (chmod, rename: the store's file is empty),
# sparse files, set mtimes, a file written through a shared mapping; that the
# data really comes from the store (the daemon reads almost nothing); and that
# a symlink the agent made never leads the read out of the store.
. "$CLOISTER_SRC/tests/fs/lib.sh"
# Its own state: what it mounts is not recorded in the user's (claims, known configs).
export XDG_STATE_HOME=$T/xdg-state XDG_CONFIG_HOME=$T/xdg-config
command -v python3 >/dev/null || skip_all "no python3"

src=$T/src
make_repo "$src"
head -c 8192 /dev/zero >"$src/mm.bin"
git_quiet -C "$src" add -A
git_quiet -C "$src" commit -m mm
cfg=$(make_config up "$src")
do_mount "$cfg" >/dev/null || skip_all "cloister mount failed"
W=$(mnt_of "$cfg")/workspace
state=$(state_of "$cfg")

fresh_clone() { rm -rf "$T/fresh" && git clone -q "$src" "$T/fresh"; }
# Same tree: contents, symlinks as links, types, executable bits (no .git, no empty dirs).
same_tree() {
        rm -rf "$T/c1" "$T/c2" && mkdir "$T/c1" "$T/c2"
        (cd "$1" && tar --exclude=./.git -cf - .) | tar -C "$T/c1" -xf - &&
                (cd "$2" && tar --exclude=./.git -cf - .) | tar -C "$T/c2" -xf - &&
                find "$T/c1" "$T/c2" -mindepth 1 -depth -type d -empty -delete &&
                diff -r --no-dereference "$T/c1" "$T/c2" &&
                cmp <(cd "$T/c1" && find . -printf '%p %y\n' | sort) \
                        <(cd "$T/c2" && find . -printf '%p %y\n' | sort) &&
                cmp <(cd "$T/c1" && find . -type f -perm -u+x | sort) \
                        <(cd "$T/c2" && find . -type f -perm -u+x | sort)
}
applies_to_the_mounted_tree() { # PATCH
        fresh_clone && (cd "$T/fresh" && git apply --whitespace=nowarn "$1") && same_tree "$W" "$T/fresh"
}

# --- the agent's edits --------------------------------------------------------
mkdir "$W/big"
for i in $(seq 1 200); do head -c 65536 /dev/urandom >"$W/big/f$i"; done
printf 'escaped name\n' >"$W/.cloister~x"
mkdir "$W/.cloister~d" && printf 'inside an escaped dir\n' >"$W/.cloister~d/inner"
ln "$W/README" "$W/README.hl" && printf 'more\n' >>"$W/README"
mv "$W/docs/guide.md" "$W/docs/moved.md"
chmod +x "$W/src/lib/a.c"
printf 'set back in time\n' >"$W/src/lib/b.c" && touch -d 2001-02-03T04:05:06 "$W/src/lib/b.c"
truncate -s 1M "$W/sparse" && printf 'end' | dd of="$W/sparse" bs=1 seek=500000 conv=notrunc status=none
truncate -s 2 "$W/src/main.c"
: >"$state/atime-probe"
# A symlink the agent made, pointing at a host file, and a directory link.
ln -s /etc/hostname "$W/host-link"
ln -s /etc "$W/etc-link"

# The store's files get an old atime (while unmounted: it moves their ctime),
# so a read of them through the daemon would show; the review's own reads
# use O_NOATIME. A new mount: nothing of the files is left in the kernel's
# page cache of the FUSE mount, so a read through the view must ask the daemon.
do_unmount "$cfg" >/dev/null
store=$state/fs/repo
touch -a -d 2000-01-01T00:00:00 "$store"/big/f* "$state/atime-probe"
cat "$state/atime-probe" >/dev/null
atime_ok=0
[ "$(stat -c %X "$state/atime-probe")" != "$(date -d 2000-01-01T00:00:00 +%s)" ] && atime_ok=1
do_mount "$cfg" >/dev/null
check "remounted" mountpoint -q "$(mnt_of "$cfg")"

# --- the patch is the mounted tree, and its data came from the store ----------
"$CLOISTER" diff "$cfg" >"$T/patch" 2>"$T/diff.err"
check "diff_succeeds" test $? = 0 -a -s "$T/patch"
# Before the comparisons below read the mounted tree, and so the store, themselves.
if [ $atime_ok = 1 ]; then
        old=$(stat -c %X "$store"/big/f* | grep -cx "$(date -d 2000-01-01T00:00:00 +%s)")
        if [ "$old" = 200 ]; then ok 0 "changed_files_are_read_from_the_store_not_through_the_daemon"; else
                echo "# $((200 - old)) of 200 files were read through the daemon"
                ok 1 "changed_files_are_read_from_the_store_not_through_the_daemon"
        fi
else
        n=$((n + 1))
        echo "ok $n - changed_files_are_read_from_the_store_not_through_the_daemon # SKIP the state's filesystem does not record atime"
fi
check "patch_applied_to_a_fresh_clone_is_the_mounted_tree" applies_to_the_mounted_tree "$T/patch"
check "escaped_names_are_read_under_their_own_names" \
        bash -c "grep -qx '+escaped name' '$T/patch' && grep -qx '+inside an escaped dir' '$T/patch'"
check "both_names_of_a_hard_link_have_the_appended_data" \
        bash -c "cmp '$W/README' '$T/fresh/README' && cmp '$W/README.hl' '$T/fresh/README.hl' && grep -qx more '$T/fresh/README.hl'"
check "metacopies_are_a_mode_change_and_a_rename_without_content" \
        bash -c "grep -q '^rename to docs/moved.md' '$T/patch' && grep -A2 '^diff --git a/src/lib/a.c' '$T/patch' | grep -q '^new mode 100755' && ! grep -q '^-lib$' '$T/patch'"
check "a_symlink_to_a_host_file_is_a_link_not_its_target" \
        bash -c "grep -qx '+/etc/hostname' '$T/patch' && grep -qx '+/etc' '$T/patch' && [ \"\$(readlink '$T/fresh/host-link')\" = /etc/hostname ]"

# --- a shared mapping ---------------------------------------------------------
# Written through mmap and synced (msync): the kernel's idea of the file's
# times and the store's differ, and the patch must still have the bytes. An
# unsynced page may still be on its way to the daemon when the diff starts
# (FUSE writes back asynchronously; the diff's syncfs does not wait for the
# daemon): the diff's docs say so.
python3 - "$W/mm.bin" "$CLOISTER" "$cfg" "$T/patch-mm" <<'PY'
import mmap, os, subprocess, sys
path, cloister, cfg, out = sys.argv[1:5]
fd = os.open(path, os.O_RDWR)
m = mmap.mmap(fd, 8192, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
m[0:8] = b"MMAPPED\n"
m.flush()
with open(out, "wb") as f:
    subprocess.run([cloister, "diff", cfg], stdout=f, check=True)
m.close()
os.close(fd)
PY
check "diff_sees_writes_through_a_shared_mapping" \
        bash -c "grep -q '^diff --git a/mm.bin' '$T/patch-mm' && cmp <(head -c 8 '$W/mm.bin') <(printf 'MMAPPED\n')"
check "the_mapped_file_in_the_patch_is_the_mounted_file" applies_to_the_mounted_tree "$T/patch-mm"

# --- written after the diff's view stat: the view's data wins -----------------
# A file rewritten with the same size and mtime between diffs: the store's
# ctime moved, and the patch still has exactly what the view shows.
printf 'AAAA\n' >"$W/same-size" && touch -r "$W/README" "$W/same-size"
"$CLOISTER" diff "$cfg" >/dev/null 2>&1
printf 'BBBB\n' >"$W/same-size" && touch -r "$W/README" "$W/same-size"
"$CLOISTER" diff "$cfg" >"$T/patch-same" 2>/dev/null
check "same_size_same_mtime_rewrite_is_seen" grep -qx '+BBBB' "$T/patch-same"

# --- not mounted: the diff mounts for itself and reads the store too ----------
do_unmount "$cfg" >/dev/null
"$CLOISTER" diff "$cfg" >"$T/patch-self" 2>"$T/self.err"
rc=$?
check "self_mounting_diff_succeeds_and_unmounts" test $rc = 0 -a -s "$T/patch-self"
check "self_mounting_diff_is_the_same_patch" cmp "$T/patch-same" "$T/patch-self"

finish
