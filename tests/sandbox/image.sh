#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# image.sh: [image], the declared environment (issue 49,
# docs/cloister-image.md). A workspace on an image made from busybox-static
# runs its commands with the image's /etc/os-release and tools and none of
# the host's, while the workspace, the home, the mirror, /tmp and the
# synthesized /etc entries stay; two workspaces on two images run side by
# side; a source whose digest is not [image] digest is refused with both;
# the digest is recorded (status, the journal's open mark, the run record,
# export's trailer); and an
# image shared by 100 workspaces is stored once.

. "$CLOISTER_SRC/tests/sandbox/lib.sh"

[ -x /bin/busybox ] && /bin/busybox --list 2>/dev/null | grep -qx sh ||
        skip_all "busybox (busybox-static) is not installed"
[ "$fs_mode" = fuse ] || skip_all "needs real mounts: the mount imports the image"
T=$(mktemp -d /tmp/cloister-image.XXXXXX)
chmod 755 "$T"
at_exit "rm -rf '$T'"
export XDG_STATE_HOME=$T/xdg
F="$CLOISTER_SRC/tests/cli/image-fixture.py"
S=$T/xdg/cloister/images
da=$(python3 "$F" busybox "$T/img-a" alpha)
db=$(python3 "$F" busybox "$T/img-b" beta)

ws_new "$T/a" "[image]
source = oci:$T/img-a:latest
digest = $da"
CFG_A=$CFG STATE_A=$STATE
preflight
out=$(crun "$CFG_A" -- cat /etc/os-release 2>&1)
contains the_image_os_release_is_seen "$out" "ID=alpha"
out=$(crun "$CFG_A" -- sh -c 'for p in /usr/bin/git /usr/lib/x86_64-linux-gnu /lib64/ld-linux-x86-64.so.2 /bin/bash; do test -e $p && echo "host: $p"; done; readlink /bin/sh' 2>&1)
is none_of_the_hosts_tools_are_seen "$out" "busybox"
is the_workspace_stays "$(crun "$CFG_A" -- cat /workspace/hello.txt 2>&1)" "hello"
is the_mirror_stays "$(crun "$CFG_A" -- cat /opt/mirror/sub/readme 2>&1)" "mirror file"
is tmp_is_writable "$(crun "$CFG_A" -- sh -c 'echo x >/tmp/f && cat /tmp/f' 2>&1)" "x"
is home_is_writable "$(crun "$CFG_A" -- sh -c 'echo y >"$HOME/f" && cat /home/agent/f' 2>&1)" "y"
out=$(crun "$CFG_A" -- sh -c 'cat /etc/passwd; cat /etc/hostname' 2>&1)
contains the_synthesized_passwd_stays "$out" "agent:x:1000:1000:cloister agent:/home/agent:/bin/sh"
contains the_synthesized_hostname_stays "$out" "wa"
out=$(crun "$CFG_A" -- sh -c 'touch /bin/new 2>&1; touch /etc/new 2>&1; echo done' 2>&1)
contains the_image_is_read_only "$out" "Read-only file system"
[ ! -e "$S/images/${da#sha256:}/root/bin/new" ] && ok nothing_is_written_into_the_store ||
        not_ok nothing_is_written_into_the_store "bin/new in the store"

# --- two workspaces on two images, side by side ---------------------------
ws_new "$T/b" "[image]
source = oci:$T/img-b:latest"
CFG_B=$CFG STATE_B=$STATE
crun "$CFG_A" -- sh -c 'while [ ! -e /workspace/go ]; do sleep 0.1; done; cat /etc/os-release' >"$T/a.out" 2>&1 &
pa=$!
crun "$CFG_B" -- sh -c 'while [ ! -e /workspace/go ]; do sleep 0.1; done; cat /etc/os-release' >"$T/b.out" 2>&1 &
pb=$!
for _ in $(seq 600); do
        [ -d "$T/a/mnt/workspace" ] && [ -d "$T/b/mnt/workspace" ] && break
        sleep 0.1
done
crun "$CFG_A" -- touch /workspace/go
crun "$CFG_B" -- touch /workspace/go
wait "$pa"
wait "$pb"
contains workspace_a_runs_on_image_a "$(cat "$T/a.out")" "ID=alpha"
contains workspace_b_runs_on_image_b "$(cat "$T/b.out")" "ID=beta"
is the_digest_a_mount_imported_is_recorded "$(cat "$STATE_B/image")" "$db"

# --- recorded: status, the journal, the run record, export's trailer -----
out=$("$CLOISTER" status --json "$CFG_A")
is status_json_has_the_digest "$(python3 -c 'import json,sys; print(json.load(sys.stdin).get("image"))' <<<"$out")" "$da"
contains status_has_the_digest "$("$CLOISTER" status "$CFG_A")" "$da"
out=$(grep '"op":"journal_open"' "$STATE_A/journal.jsonl" | tail -1)
is the_journals_open_mark_has_the_digest "$(python3 -c 'import json,sys; print(json.load(sys.stdin).get("image"))' <<<"$out")" "$da"
out=$("$CLOISTER" log --runs --json "$CFG_A" | tail -1)
is the_run_record_has_the_digest "$(python3 -c 'import json,sys; print(json.load(sys.stdin).get("image"))' <<<"$out")" "$da"
out=$("$CLOISTER" report --json "$CFG_A" 2>/dev/null)
is the_report_has_the_digest "$(python3 -c 'import json,sys; print(json.load(sys.stdin)["status"].get("image"))' <<<"$out")" "$da"
contains the_report_page_shows_the_digest "$("$CLOISTER" report "$CFG_A" 2>/dev/null)" "$da"
crun "$CFG_A" -- sh -c 'echo change >/workspace/hello.txt' >/dev/null 2>&1
"$CLOISTER" export "$CFG_A" --commit --message "on an image" >/dev/null 2>"$T/export.err"
msg=$(git -C "$T/a/repo" log -1 --format=%B refs/cloister/wa 2>&1; cat "$T/export.err")
contains export_commit_has_the_image_trailer "$msg" "Cloister-Image: $da"

# --- a digest that is not the source's: refused, naming both --------------
ws_new "$T/c" "[image]
source = oci:$T/img-b:latest
digest = $da"
err=$(crun "$CFG" -- true 2>&1)
rc=$?
[ "$rc" != 0 ] && ok a_digest_mismatch_refuses_the_run || not_ok a_digest_mismatch_refuses_the_run "rc 0"
contains the_refusal_names_both_digests "$err" "is $db, not the $da that [image] digest names"
out=$("$CLOISTER" check --strict "$CFG_B" 2>&1)
contains check_strict_requires_the_digest "$out" "digest"

# --- without [image], nothing changes ---------------------------------------
ws_new "$T/d"
out=$(crun "$CFG" -- sh -c 'test -x /usr/bin/git && echo host-usr' 2>&1)
is without_image_the_host_usr_is_seen "$out" "host-usr"

# --- 100 workspaces on one image: stored once -------------------------------
before_layers=$(find "$S/layers" -mindepth 1 -maxdepth 1 | wc -l)
before_inodes=$(find "$S" -xdev | wc -l)
for i in $(seq 100); do
        mkdir -p "$T/many/$i"
        printf '[workspace]\nname = m%s\nstate = %s\nmountpoint = %s\n[repo]\nsource = %s\n[image]\nsource = oci:%s\n' \
                "$i" "$T/many/$i/state" "$T/many/$i/mnt" "$T/a/repo" "$T/img-a:latest" >"$T/many/$i.ini"
        "$CLOISTER" mount "$T/many/$i.ini" >/dev/null 2>"$T/many.err" || break
        "$CLOISTER" unmount "$T/many/$i.ini" >/dev/null 2>&1
done
n=$(grep -lx "$da" "$T"/many/*/state/image 2>/dev/null | wc -l)
is a_hundred_workspaces_use_the_image "$n" 100
is the_hundred_add_no_layer "$(find "$S/layers" -mindepth 1 -maxdepth 1 | wc -l)" "$before_layers"
is the_hundred_add_no_inode_to_the_store "$(find "$S" -xdev | wc -l)" "$before_inodes"
is the_store_holds_two_images "$(find "$S/images" -mindepth 1 -maxdepth 1 | wc -l)" 2

# --- an image is not removed from under a run -------------------------------
# The run holds its image (a shared lock on the record) until it ends.
crun "$CFG_A" -- sh -c 'touch /workspace/held; while [ ! -e /workspace/go2 ]; do sleep 0.1; done' \
        >/dev/null 2>&1 &
ph=$!
for _ in $(seq 600); do
        [ -e "$T/a/mnt/workspace/held" ] && break
        sleep 0.1
done
err=$("$CLOISTER" image rm "$da" 2>&1)
rc=$?
[ "$rc" != 0 ] && [ -d "$S/images/${da#sha256:}/root/bin" ] && ok image_rm_refuses_an_image_a_run_is_on ||
        not_ok image_rm_refuses_an_image_a_run_is_on "rc $rc: $err"
contains and_says_a_run_holds_it "$err" "in use by a run"
echo go >"$T/a/mnt/workspace/go2"
wait "$ph"
out=$("$CLOISTER" image rm "$da" 2>&1)
[ $? = 0 ] && [ ! -e "$S/images/${da#sha256:}" ] && ok once_the_run_ended_rm_removes_it ||
        not_ok once_the_run_ended_rm_removes_it "$out"

done_testing
