#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Names are bytes: a file or directory name that is not UTF-8 must be
# created, listed, read, renamed, deleted and kept across remount exactly,
# and the changes list must carry its bytes in "path_hex" so that review
# (cloister diff) sees it. Also lower (git) entries with such names, whose
# sidecar records (whiteouts, renames) then hold them.
. "$(dirname "$0")/lib.sh"

BAD=$(printf 'bad\xff\xfename')
BADHEX=626164fffe6e616d65
make_repo "$T/repo"
mkdir -p "$T/repo/$(printf 'ldir\xe9')"
echo lower-bad >"$T/repo/$(printf 'ldir\xe9')/$(printf 'f\xc3\x28')"
echo gone >"$T/repo/$(printf 'del\xfe')"
git_quiet -C "$T/repo" add -A
git_quiet -C "$T/repo" commit -m bad-names
C=$(make_config ws "$T/repo")
M=$(mnt_of "$C")
W=$M/workspace

check mount_succeeds do_mount "$C"
check create_non_utf8_name bash -c "echo data >'$W/$BAD'"
check list_shows_non_utf8_name bash -c "ls -A '$W' | grep -qxF '$BAD'"
check read_non_utf8_name bash -c "[ \"\$(cat '$W/$BAD')\" = data ]"
check changes_lists_path_hex_for_non_utf8_name \
        grep -qF "\"path_hex\":\"2f776f726b73706163652f$BADHEX\"" "$M/.cloister/changes"
check changes_path_is_lossy_utf8 grep -qF '"path":"/workspace/bad??name"' "$M/.cloister/changes"
check non_utf8_dir_holds_files bash -c "mkdir '$W/$BAD.d' && echo in >'$W/$BAD.d/$BAD' && [ \"\$(cat '$W/$BAD.d/$BAD')\" = in ] && ls '$W/$BAD.d' | grep -qxF '$BAD'"
check rename_to_non_utf8_name bash -c "echo r >'$W/plain' && mv '$W/plain' '$W/$BAD.r' && [ \"\$(cat '$W/$BAD.r')\" = r ] && [ ! -e '$W/plain' ]"
check rename_from_non_utf8_name bash -c "mv '$W/$BAD.r' '$W/plain2' && [ \"\$(cat '$W/plain2')\" = r ] && [ ! -e '$W/$BAD.r' ]"
check delete_non_utf8_name bash -c "echo x >'$W/$BAD.x' && rm '$W/$BAD.x' && [ ! -e '$W/$BAD.x' ] && ! ls -A '$W' | grep -qxF '$BAD.x'"
LD=$(printf 'ldir\xe9')
LF=$(printf 'f\xc3\x28')
DEL=$(printf 'del\xfe')
check lower_non_utf8_name_reads bash -c "[ \"\$(cat '$W/$LD/$LF')\" = lower-bad ]"
check delete_lower_non_utf8_name_hides_it bash -c "rm '$W/$DEL' && [ ! -e '$W/$DEL' ] && ! ls -A '$W' | grep -qxF '$DEL'"
check changes_lists_the_whiteout_in_hex grep -qF "\"path_hex\":\"2f776f726b73706163652f64656cfe\",\"type\":\"deleted\"" "$M/.cloister/changes"
check rename_lower_non_utf8_dir_moves_its_content bash -c "mv '$W/$LD' '$W/$LD.moved' && [ \"\$(cat '$W/$LD.moved/$LF')\" = lower-bad ] && [ ! -e '$W/$LD' ]"
check chmod_lower_non_utf8_file_copies_up bash -c "chmod 600 '$W/$LD.moved/$LF' && [ \"\$(stat -c %a '$W/$LD.moved/$LF')\" = 600 ]"
check diff_includes_non_utf8_file bash -c "'$CLOISTER' diff '$C' --name-status 2>/dev/null | grep -qF 'bad\\377\\376name'"
check unmount_succeeds do_unmount "$C"
check remount_succeeds do_mount "$C"
check root_lists_after_remount ls -A "$W"
check non_utf8_names_persist_across_remount bash -c "[ \"\$(cat '$W/$BAD')\" = data ] && [ \"\$(cat '$W/$BAD.d/$BAD')\" = in ] && [ ! -e '$W/$DEL' ] && [ \"\$(cat '$W/$LD.moved/$LF')\" = lower-bad ] && [ ! -e '$W/$LD' ]"
check sidecar_is_valid_json_with_hex_keys bash -c "S='$(state_of "$C")'; f=\$(grep -rl '\"whx\"' \"\$S\" | head -1); [ -n \"\$f\" ] && python3 -c 'import json,sys; json.load(open(sys.argv[1],\"rb\"))' \"\$f\""
check delete_after_remount bash -c "rm '$W/$BAD' && [ ! -e '$W/$BAD' ]"
finish
