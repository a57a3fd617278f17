#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# as-agent.py HOSTUID HOSTGID CMD [ARGS...]: run CMD as uid and gid 1000 in a
# user namespace of its own that maps them to HOSTUID and HOSTGID, as the
# sandbox does (root may map any ids: no subordinate ranges are needed, so
# not newuidmap). Exit status: CMD's, or 125 if the namespace fails.
import ctypes
import os
import sys

CLONE_NEWUSER = 0x10000000
libc = ctypes.CDLL(None, use_errno=True)
uid, gid, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
go_r, go_w = os.pipe()
ready_r, ready_w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(go_w)
    os.close(ready_r)
    if libc.unshare(CLONE_NEWUSER) != 0:
        os._exit(125)
    os.write(ready_w, b"x")
    if os.read(go_r, 1) != b"x":
        os._exit(125)
    os.setgroups([])
    os.setresgid(1000, 1000, 1000)
    os.setresuid(1000, 1000, 1000)
    os.execvp(argv[0], argv)
os.close(go_r)
os.close(ready_w)
if os.read(ready_r, 1) != b"x":
    sys.exit(125)
with open("/proc/%d/uid_map" % pid, "w") as f:
    f.write("1000 %s 1\n" % uid)
with open("/proc/%d/gid_map" % pid, "w") as f:
    f.write("1000 %s 1\n" % gid)
os.write(go_w, b"x")
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))
