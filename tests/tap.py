# SPDX-License-Identifier: MIT
"""TAP for the Python tests: numbered results, a skip of the whole file
(exit 77, which meson reads as skipped) and the plan at the end. Import
with the tests folder on sys.path (tests/meson.build sets CLOISTER_SRC)."""
import os
import shutil
import subprocess
import sys

_n = 0
_failed = 0


def ok(cond, name, why=None):
    """One result; on a failure, why (cut to 2,000 characters) as comments."""
    global _n, _failed
    _n += 1
    print(("ok" if cond else "not ok") + f" {_n} - {name}")
    if not cond:
        _failed += 1
        if why is not None:
            for line in str(why)[:2000].splitlines():
                print("# " + line)
    sys.stdout.flush()


def skip(name, why):
    """One result skipped, with the reason."""
    global _n
    _n += 1
    print(f"ok {_n} - {name} # SKIP {why}")
    sys.stdout.flush()


def skip_all(why):
    print(f"1..0 # SKIP {why}")
    sys.exit(77)


def need_cloister():
    """The binary under test, from $CLOISTER, or a skip."""
    c = os.environ.get("CLOISTER")
    if not c:
        skip_all("CLOISTER is not set")
    return c


def need_fuse():
    if not os.path.exists("/dev/fuse"):
        skip_all("FUSE is not available (/dev/fuse missing)")
    if os.geteuid() != 0 and not os.access("/dev/fuse", os.R_OK | os.W_OK):
        skip_all("/dev/fuse is closed to this user (tests/install-deps opens it, as Debian's udev does)")


def need_userns_bwrap():
    if not shutil.which("bwrap") or subprocess.run(
            ["bwrap", "--unshare-user", "--ro-bind", "/", "/", "true"],
            capture_output=True).returncode != 0:
        skip_all("bubblewrap is missing, or this kernel gives this user no user namespace")


def done():
    """The plan, and the exit status: 1 if anything failed."""
    print(f"1..{_n}")
    sys.exit(1 if _failed else 0)
