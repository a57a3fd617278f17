#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""listing-cache.py DIR: listings stay exact with the kernel's readdir cache.

DIR's parent must be a dir merged with the lower (the workspace's root).

Copy-on-write dirs may be cached by the kernel (FOPEN_CACHE_DIR), and their
readdir offsets are name cookies, not places in one snapshot. This checks,
with the cache warm before each step, that every kind of change shows in the
next listing (also changes made from another dir: rename in and out, hard
links), and that telldir/seekdir go on after the same name when the dir
changed in between: no name that stayed is lost or listed twice.
Prints TAP lines for each check; exits 1 if any failed.
"""
import ctypes
import ctypes.util
import os
import shutil
import sys

fails = 0
n = 0


def ok(cond, name, detail=""):
    global fails, n
    n += 1
    print("%sok %d - %s" % ("" if cond else "not ", n, name))
    if not cond:
        fails += 1
        if detail:
            print("# " + detail)


def listing(d):
    # Twice: the first fills the kernel's cache, the second is served from it.
    os.listdir(d)
    return sorted(os.listdir(d))


class Dirent(ctypes.Structure):
    _fields_ = [("d_ino", ctypes.c_uint64), ("d_off", ctypes.c_int64),
                ("d_reclen", ctypes.c_ushort), ("d_type", ctypes.c_ubyte),
                ("d_name", ctypes.c_char * 256)]


libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
libc.opendir.restype = ctypes.c_void_p
libc.opendir.argtypes = [ctypes.c_char_p]
libc.readdir.restype = ctypes.POINTER(Dirent)
libc.readdir.argtypes = [ctypes.c_void_p]
libc.telldir.restype = ctypes.c_long
libc.telldir.argtypes = [ctypes.c_void_p]
libc.seekdir.argtypes = [ctypes.c_void_p, ctypes.c_long]
libc.closedir.argtypes = [ctypes.c_void_p]


def read_names(dp, limit=None):
    out = []
    while limit is None or len(out) < limit:
        e = libc.readdir(dp)
        if not e:
            break
        name = e.contents.d_name.decode()
        if name not in (".", ".."):
            out.append(name)
    return out


def dots(path):
    # "." and ".." with their d_ino, read twice (the second from the cache).
    for _ in range(2):
        out = {}
        dp = libc.opendir(path.encode())
        while True:
            e = libc.readdir(dp)
            if not e:
                break
            name = e.contents.d_name.decode()
            if name in (".", ".."):
                out[name] = e.contents.d_ino
        libc.closedir(dp)
    return out


def main():
    d = sys.argv[1]
    other = d + ".other"
    os.makedirs(d)
    os.makedirs(other)
    want = set()
    for i in range(300):
        nm = "e%03d_%s" % (i, "z" * 80)  # long names: a listing spans several replies
        open(os.path.join(d, nm), "w").close()
        want.add(nm)
    ok(listing(d) == sorted(want), "a_fresh_listing_is_exact")

    steps = []

    def create():
        open(os.path.join(d, "made"), "w").close()
        want.add("made")

    def unlink():
        os.unlink(os.path.join(d, "e000_" + "z" * 80))
        want.discard("e000_" + "z" * 80)

    def rename_in():
        open(os.path.join(other, "from-other"), "w").close()
        os.rename(os.path.join(other, "from-other"), os.path.join(d, "came-in"))
        want.add("came-in")

    def rename_out():
        os.rename(os.path.join(d, "came-in"), os.path.join(other, "went-out"))
        want.discard("came-in")

    def rename_over():
        os.rename(os.path.join(d, "made"), os.path.join(d, "e001_" + "z" * 80))
        want.discard("made")

    def link_in():
        open(os.path.join(other, "target"), "w").close()
        os.link(os.path.join(other, "target"), os.path.join(d, "linked"))
        want.add("linked")

    def mkdir_rmdir():
        os.mkdir(os.path.join(d, "sub"))
        want.add("sub")

    def rmdir():
        os.rmdir(os.path.join(d, "sub"))
        want.discard("sub")

    def symlink():
        os.symlink("nowhere", os.path.join(d, "sym"))
        want.add("sym")

    for f in (create, unlink, rename_in, rename_out, rename_over, link_in, mkdir_rmdir,
              rmdir, symlink):
        f()
        got = listing(d)
        ok(got == sorted(want), "listing_exact_after_" + f.__name__,
           "extra %s missing %s" % (sorted(set(got) - want)[:3], sorted(want - set(got))[:3]))

    # The nlink of DIR's parent (a merged dir: the workspace's root) follows
    # its subdirs; the daemon keeps it between changes.
    top = os.path.dirname(d)
    base = os.stat(top).st_nlink
    os.mkdir(os.path.join(top, "lc-sub"))
    ok(os.stat(top).st_nlink == base + 1, "nlink_follows_mkdir")
    os.rename(os.path.join(top, "lc-sub"), os.path.join(d, "lc-sub"))
    want.add("lc-sub")
    ok(os.stat(top).st_nlink == base, "nlink_follows_rename_out")
    os.rmdir(os.path.join(d, "lc-sub"))
    want.discard("lc-sub")

    # A dir moved to another parent: its cached listing's ".." follows.
    os.makedirs(os.path.join(d, "mv-from", "moved"))
    os.makedirs(os.path.join(other, "mv-to"))
    moved = os.path.join(d, "mv-from", "moved")
    dots_before = dots(moved)
    os.rename(moved, os.path.join(other, "mv-to", "moved"))
    dots_after = dots(os.path.join(other, "mv-to", "moved"))
    ok(dots_before[".."] == os.stat(os.path.join(d, "mv-from")).st_ino and
       dots_after[".."] == os.stat(os.path.join(other, "mv-to")).st_ino,
       "dotdot_of_a_moved_dir_names_its_new_parent", "%s then %s" % (dots_before, dots_after))
    shutil.rmtree(os.path.join(d, "mv-from"))
    want.discard("mv-from")

    # seekdir after changes: the names after the mark that stayed are each
    # listed once, whatever was added or removed meanwhile.
    dp = libc.opendir(d.encode())
    first = read_names(dp, 100)
    mark = libc.telldir(dp)
    rest_before = read_names(dp)
    for nm in first[:20] + rest_before[:20]:
        os.unlink(os.path.join(d, nm))
        want.discard(nm)
    for i in range(40):
        nm = "late%02d" % i
        open(os.path.join(d, nm), "w").close()
        want.add(nm)
    libc.seekdir(dp, mark)
    rest_after = read_names(dp)
    libc.closedir(dp)
    stayed = set(rest_before[20:])
    ok(len(rest_after) == len(set(rest_after)), "seekdir_lists_no_name_twice")
    ok(stayed <= set(rest_after), "seekdir_goes_on_after_the_same_name",
       "lost %s" % sorted(stayed - set(rest_after))[:3])
    ok(not (set(first) & set(rest_after)), "seekdir_does_not_go_back",
       "again %s" % sorted(set(first) & set(rest_after))[:3])
    ok(listing(d) == sorted(want), "listing_exact_after_seekdir")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
