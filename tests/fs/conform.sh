#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# POSIX conformance, measured against the host's own filesystem: conform
# (conform.c) runs the same battery of checks in a plain host directory and
# in three places of the mount (the workspace root, a directory that came
# from the git tree, the hidden home), each starting from the same pre/
# tree (from the lower layer in the mount). Every answer must match the
# host's, except the differences docs/fs-design.md lists, which must be
# exactly what it says. Then what only the mount can show: everything is
# kept across remount, the host's upper tree never holds a setuid/setgid
# file or a device node, and review's diff and export never make one.
. "$(dirname "$0")/lib.sh"
: "${CONFORM:?set by meson}" "${FSPROBE:?set by meson}"

# make_pre DIR: the tree every place starts from (conform.c relies on it).
make_pre() {
        local d=$1/pre f
        mkdir -p "$d/dir" "$d/dir2" "$d/dir3" "$d/dir5"
        for f in file file2 file3 file4 file5 file6 file7; do echo "lower $f" >"$d/$f"; done
        printf '#!/bin/sh\n' >"$d/exe"
        chmod 755 "$d/exe"
        cp -p "$d/exe" "$d/exe2"
        for f in dir dir2 dir3 dir5; do echo in >"$d/$f/inner"; done
        ln -s file "$d/link"
}

make_repo "$T/repo"
make_pre "$T/repo"
make_pre "$T/repo/deep/tree"
git_quiet -C "$T/repo" add -A
git_quiet -C "$T/repo" commit -m pre
mkdir -p "$T/seed"
make_pre "$T/seed"
C=$(make_config conform "$T/repo" "
[home]
persist = true
seed = $T/seed/pre -> pre
")
M=$(mnt_of "$C")
S=$(state_of "$C")
W=$M/workspace
H=$M/home/agent
REF=$T/ref
mkdir -p "$REF"
make_pre "$REF"

# The daemon starts under a umask that would mask the modes the agent asks for.
# URING=1 (meson's fs-conform-uring): the battery over FUSE's io_uring
# transport, with the kernel's enable_uring on for the run (lib.sh).
[ -z "${URING:-}" ] || uring_on
check mount_under_umask_027 bash -c "umask 027; '$CLOISTER' mount '$C'"
if [ -n "${URING:-}" ]; then
        "$CLOISTER" status "$C" | grep -q "^data path   io_uring; .*, io_uring yes$"
        ok $? the_mount_serves_over_io_uring
fi

# LAYERS=fork or restore (meson runs both as well as the plain run): the
# same battery in a fork at a checkpoint, or after a restore to one, with a
# fourth place, frozen/pre, made through the mount and then frozen, so that
# every check runs on entries of a frozen layer too (docs/fs-design.md,
# "Layers, checkpoints and forks").
EXTRA_PLACE=()
if [ -n "${LAYERS:-}" ]; then
        A=$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1])).get("sandbox", {}).get("host_uid", ""))' "$M/.cloister/workspace")
        make_pre "$W/frozen"
        [ -z "$A" ] || chown -hR "$A:$A" "$W/frozen/pre"
        check unmount_before_the_checkpoint do_unmount "$C"
        check checkpoint_c1 "$CLOISTER" checkpoint "$C" c1
        case $LAYERS in
        fork)
                F=$T/fork/conform-fork.ini
                check fork_at_c1 "$CLOISTER" fork "$C" "$F" --from c1
                CONFIGS+=("$F")
                C=$F
                S=$(sed -n 's/^state = //p' "$F")
                M=$S/mnt
                W=$M/workspace
                H=$M/home/agent
                ;;
        restore)
                check mount_to_change_it do_mount "$C"
                rm -rf "$W/frozen/pre/dir" "$W/pre/file2"
                echo junk >"$W/frozen/pre/file"
                mkdir "$W/frozen/pre/junk"
                check unmount_changed do_unmount "$C"
                check restore_to_c1 "$CLOISTER" restore "$C" c1
                ;;
        esac
        check mount_under_umask_027_through_the_layers bash -c "umask 027; '$CLOISTER' mount '$C'"
        EXTRA_PLACE=(frozen)
fi

# What the mount answers differently from a local filesystem, and why
# (docs/fs-design.md, "What differs from ext4"):
declare -A DIFFERS=(
        # libfuse 3.14 has no tmpfile operation; libraries fall back (checked below)
        [tmpfile_o_tmpfile]=EOPNOTSUPP
)
# ... and what the mount may answer instead of the host (a kernel rule, not ours):
declare -A MAY=(
        # Linux >= 6.2 drops setgid (without group exec) when a non-member writes;
        # the kernel's FUSE code keeps the older rule (drop only with group exec).
        [suid_sgid_noexec_write_keeps_sgid]="f 2767 n1 0:0 s1"
)

# As root the checkout, the seeds and all the agent made are the agent's
# host uid's (docs/cloister-run.md, "Running as root"): what root itself
# makes through the mount stays root's. So the host's reference tree starts
# out owned by that uid too.
AGENT=$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1])).get("sandbox", {}).get("host_uid", ""))' "$M/.cloister/workspace")
[ -z "$AGENT" ] || chown -hR "$AGENT:$AGENT" "$REF/pre"
"$CONFORM" "$REF" >"$T/ref.out" 2>"$T/ref.err"
check conform_runs_on_the_host_filesystem test -s "$T/ref.out"
declare -A WANT=()
while read -r name value; do WANT[$name]=$value; done <"$T/ref.out"

compare() { # compare PLACE OUTPUT: one TAP line per check
        local place=$1 out=$2 name value want seen=0
        while read -r name value; do
                seen=$((seen + 1))
                want=${DIFFERS[$name]:-${WANT[$name]-<missing on the host>}}
                if [ "$value" = "$want" ] || [ "$value" = "${MAY[$name]-}" ]; then
                        ok 0 "$place: $name"
                else
                        echo "# got:  $value"
                        echo "# want: $want"
                        ok 1 "$place: $name"
                fi
        done <"$out"
        same "$place: every_check_ran" "$seen" "${#WANT[@]}"
}

PLACES=(workspace gittree home "${EXTRA_PLACE[@]}")
declare -A DIR=([workspace]=$W [gittree]=$W/deep/tree [home]=$H [frozen]=$W/frozen)
# Every layer of the state on the host (the writable one, and frozen ones).
STORE=("$S/fs")
[ -d "$S/layers" ] && STORE+=("$S/layers")
for place in "${PLACES[@]}"; do
        "$CONFORM" "${DIR[$place]}" >"$T/$place.out" 2>"$T/$place.err"
        compare "$place" "$T/$place.out"
done

# The fallback of libraries where O_TMPFILE fails: a named file, unlinked, used.
if command -v python3 >/dev/null; then
        for place in "${PLACES[@]}"; do
                check "$place: python_temporaryfile_works" python3 -c "
import os, sys, tempfile
f = tempfile.TemporaryFile(dir=sys.argv[1])
f.write(b'abc'); f.flush(); f.seek(0)
assert f.read() == b'abc', 'read back'
assert os.fstat(f.fileno()).st_nlink == 0, 'nlink'
assert not [n for n in os.listdir(sys.argv[1]) if n.startswith('tmp')], 'left a name'
" "${DIR[$place]}"
        done
fi

# Device nodes are inert here (nodev) and never real on the host.
expect_errno device_node_cannot_be_opened_on_the_mount EACCES "$FSPROBE" open "$W/d_keep" r
check host_upper_holds_no_device_node bash -c "[ -z \"\$(find ${STORE[*]} -type b -o -type c)\" ]"
check host_upper_holds_no_setuid_or_setgid_file bash -c "[ -z \"\$(find ${STORE[*]} -perm /6000)\" ]"
check device_placeholder_is_an_unreadable_empty_file bash -c "
        f=\$(find ${STORE[*]} -name d_keep | head -1); [ -f \"\$f\" ] && [ ! -s \"\$f\" ] && [ \"\$(stat -c %a \"\$f\")\" = 1000 ]"
same setuid_file_shows_its_bits_in_the_mount "$(stat -c %a "$W/s_g")" 6711
check diff_never_carries_a_setuid_mode bash -c "'$CLOISTER' diff '$C' >'$T/diff' 2>/dev/null; grep -q 's_g' '$T/diff' && ! grep -Eq 'mode 10[0-7][1-7][0-7]{3}' '$T/diff'"
check export_commit_holds_only_git_modes bash -c "'$CLOISTER' export '$C' --commit >/dev/null 2>&1 && git -C '$T/repo' ls-tree -r refs/cloister/$(basename "$C" .ini | sed 's/^config$/conform/') | awk '{print \$1}' | sort -u | grep -vxE '100644|100755|120000|160000' | grep -q . && exit 1 || exit 0"

# Everything is kept across remount: modes, owners, types, rdev, links, times.
# As root, each mount reserves the agent's host uid afresh (the lowest free
# one, mounts/hostid.c), so a test mounting in parallel may leave this one a
# different uid after the remount: owners are compared with the agent's
# uid, whatever it is, written as AGENT.
agent_dump() { # DIR: the dump, the mount's agent uid/gid as AGENT
        local a
        a=$(stat -c %u "$W")
        "$CONFORM" "$1" dump | sed -E "s/ $a:/ AGENT:/; s/:$a /:AGENT /"
}
for place in "${PLACES[@]}"; do agent_dump "${DIR[$place]}" >"$T/$place.dump"; done
check unmount_conform do_unmount "$C"
check host_upper_holds_no_setuid_file_after_unmount bash -c "[ -z \"\$(find ${STORE[*]} -perm /6000 -o -type b -o -type c)\" ]"
check remount_conform bash -c "umask 027; '$CLOISTER' mount '$C'"
for place in "${PLACES[@]}"; do
        agent_dump "${DIR[$place]}" >"$T/$place.dump2"
        if diff "$T/$place.dump" "$T/$place.dump2" >"$T/.d"; then ok 0 "$place: every_attribute_is_kept_across_remount"; else
                sed 's/^/# /' "$T/.d" | head -20
                ok 1 "$place: every_attribute_is_kept_across_remount"
        fi
done
check unmount_conform_again do_unmount "$C"
finish
