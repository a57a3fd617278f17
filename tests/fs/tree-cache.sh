#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The git lower's tree cache ([limits] tree_cache, fs/lower/lower-tree.c) under a
# budget far smaller than one folder's index, so that nearly every lookup
# and listing evicts and rebuilds: the mount must show exactly the tree,
# lookups in a folder of 3,000 entries must find each one, and listings
# read while other lookups evict must name every entry once, in the same
# order each time. Then the same tree with the default budget, and a
# budget below the key's range refused with the key named.
. "$(dirname "$0")/lib.sh"

R=$T/repo
mkdir -p "$R/big" "$R/deep"
git_quiet -C "$R" init
# git sorts a folder as if its name ended in '/': "a.c" < "a/" < "a0" but
# strcmp puts "a" before "a.c". Lookups must find both kinds.
for i in $(seq -w 0 999); do
        printf 'f%s\n' "$i" >"$R/big/x$i"
        printf 'c%s\n' "$i" >"$R/big/x$i.c"
        mkdir "$R/big/x$i-d"
        printf 'd%s\n' "$i" >"$R/big/x$i-d/leaf"
done
p=$R/deep
for i in $(seq 1 30); do
        p=$p/level$i
        mkdir -p "$p"
        printf 'at %d\n' "$i" >"$p/here.txt"
done
for d in $(seq 1 100); do
        mkdir -p "$R/small/s$d"
        for f in 1 2 3 4 5; do printf '%d %d\n' "$d" "$f" >"$R/small/s$d/f$f"; done
done
git_quiet -C "$R" add -A
GIT_COMMITTER_DATE="2024-01-02T03:04:05Z" git_quiet -C "$R" commit -m base

# What the mount must show: every path, its size and its type.
git -C "$R" ls-tree -r -t -l HEAD | awk -F'\t' '{ split($1, m, " ")
        print $2, (m[2] == "tree" ? "d 4096" : "f " m[4]) }' | sort >"$T/want"

C=$(make_config tiny "$R" "[limits]
tree_cache = 4K")
W=$(mnt_of "$C")/workspace
check mount_with_a_4k_tree_cache do_mount "$C"
(cd "$W" && find . -path ./.git -prune -o -mindepth 1 -printf '%P %y %s\n' | sort) >"$T/got"
check every_path_size_and_type_is_the_trees_under_a_tiny_budget cmp "$T/got" "$T/want"

# Listings of big/ in three processes while two others look names up in
# small/ and deep/ (each evicting big/'s index): each listing names the
# 3,000 entries once. A fresh mount, so that the kernel has cached nothing.
check unmount do_unmount "$C"
check mount_again do_mount "$C"
ls -f "$R/big" | grep -v '^\.\.\?$' | sort >"$T/big-want"
(
        for d in $(seq 1 100); do cat "$W/small/s$d/f3" >/dev/null; done
        cat "$W"/deep/level1/level2/level3/level4/level5/level6/level7/level8/here.txt >/dev/null
) &
bg1=$!
for k in 1 2 3; do
        python3 -c 'import os, sys; print("\n".join(os.listdir(sys.argv[1])))' "$W/big" >"$T/big-$k" &
done
stat -c '%n %s' "$W"/big/x0*.c >"$T/big-stat"
wait
sort "$T/big-1" >"$T/big-1s"
check a_listing_read_while_lookups_evict_names_each_entry_once cmp "$T/big-1s" "$T/big-want"
check concurrent_listings_agree_in_order cmp "$T/big-1" "$T/big-2"
check concurrent_listings_agree_in_order_too cmp "$T/big-1" "$T/big-3"
same lookups_in_a_huge_folder_find_each_entry "$(wc -l <"$T/big-stat")" 100
same a_looked_up_size_is_the_blobs "$(grep -c ' 5$' "$T/big-stat")" 100
same a_path_thirty_folders_deep_reads_right \
        "$(cat "$W"/deep/level1/level2/level3/level4/level5/level6/level7/level8/level9/level10/level11/level12/level13/level14/level15/level16/level17/level18/level19/level20/level21/level22/level23/level24/level25/level26/level27/level28/level29/level30/here.txt)" \
        "at 30"
check git_status_is_clean_under_a_tiny_budget test -z "$(cd "$W" && git status --porcelain)"
# A rename of a lower folder is a redirect (a path looked up from the root).
mv "$W/big/x500-d" "$W/moved" 2>"$T/mv.err" || sed 's/^/# /' "$T/mv.err"
same a_redirect_reads_its_origin_under_a_tiny_budget "$(cat "$W/moved/leaf")" "d500"
check unmount_tiny do_unmount "$C"

D=$(make_config default "$R")
W=$(mnt_of "$D")/workspace
check mount_with_the_default_budget do_mount "$D"
(cd "$W" && find . -path ./.git -prune -o -mindepth 1 -printf '%P %y %s\n' | sort) >"$T/got2"
check every_path_size_and_type_is_the_trees_with_the_default_budget cmp "$T/got2" "$T/want"
check unmount_default do_unmount "$D"

B=$(make_config bad "$R" "[limits]
tree_cache = 1K")
rc=0
"$CLOISTER" mount "$B" >"$T/bad.out" 2>&1 || rc=$?
same a_budget_below_4k_is_refused "$rc" 2
check the_refusal_names_the_key grep -q "tree_cache" "$T/bad.out"
finish
