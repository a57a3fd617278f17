#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Debian package, end to end, as a user gets it: build it with
# `dpkg-buildpackage -us -uc -b` from a copy of this tree (so the checkout
# and its build dirs stay as they are), check it with lintian, install it
# with apt (which must pull bubblewrap, fuse3 and the libraries by
# dependency), then use only the installed files, from a directory outside
# the tree: `cloister --version`, the man pages, the bash completion as
# bash-completion loads it, `systemd-analyze verify` on the units, the
# broker started the way cloister-broker@.socket starts it, and the
# packaged quickstart end to end (/usr/share/cloister/examples/quickstart).
# The package is purged at the end, so the machine is as it was.
#
# TAP. tests/run runs it last, after the build-tree suites; it needs root,
# Debian's dpkg-buildpackage and apt-get, and skips (exit 77) without them.
# By hand: sudo tests/package/deb.sh
set -u

src=$(cd "$(dirname "$0")/../.." && pwd)

skip_all() {
        echo "1..0 # SKIP $*"
        exit 77
}
[ "$(id -u)" -eq 0 ] || skip_all "needs root: it installs the package it builds"
[ -r /etc/debian_version ] || skip_all "not a Debian system"
for t in dpkg-buildpackage dpkg-deb apt-get; do
        command -v "$t" >/dev/null || skip_all "$t is missing: tests/install-deps installs dpkg-dev and debhelper"
done
if dpkg-query -W -f='${Status}' cloister 2>/dev/null | grep -q 'install ok installed'; then
        skip_all "a cloister package is installed already; the test would replace and purge it"
fi

tmp=$(mktemp -d /tmp/cloister-deb.XXXXXX)
# apt reads the local .deb as user _apt: let it.
chmod 0755 "$tmp"
installed=0
cfg=""
cleanup() {
        if [ -n "$cfg" ]; then
                cloister unmount "$cfg" >/dev/null 2>&1 || true
        fi
        if [ -n "${broker_pid:-}" ]; then
                kill "$broker_pid" 2>/dev/null
                wait "$broker_pid" 2>/dev/null
        fi
        if [ "$installed" = 1 ]; then
                DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq cloister >"$tmp/purge.log" 2>&1 ||
                        cat "$tmp/purge.log" >&2
        fi
        # Never into a mount that is still there.
        if ! grep -qF " $tmp/" /proc/self/mounts; then
                rm -rf --one-file-system "$tmp"
        fi
}
trap cleanup EXIT

n=0
fails=0
ok() { # ok STATUS NAME
        n=$((n + 1))
        if [ "$1" = 0 ]; then echo "ok $n - $2"; else
                echo "not ok $n - $2"
                fails=$((fails + 1))
        fi
}
skip() { # skip NAME REASON
        n=$((n + 1))
        echo "ok $n - $1 # SKIP $2"
}
# show FILE: a file's last lines, as TAP comments
show() { tail -n "${2:-20}" "$1" | sed 's/^/# /'; }

# 1. Build, from the files git knows of (committed or not, plus untracked
# ones not ignored), or the whole tree minus build dirs outside git.
mkdir "$tmp/src"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
        (cd "$src" && git ls-files -z --cached --others --exclude-standard |
                while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
                tar --null -T - -cf -) | tar -xf - -C "$tmp/src"
else
        tar -C "$src" --exclude='./build*' -cf - . | tar -xf - -C "$tmp/src"
fi
start=$(date +%s)
(cd "$tmp/src" && DEB_BUILD_OPTIONS="nocheck parallel=2" \
        dpkg-buildpackage -us -uc -b) >"$tmp/build.log" 2>&1
rc=$?
echo "# dpkg-buildpackage: rc $rc in $(($(date +%s) - start))s"
[ "$rc" = 0 ] || show "$tmp/build.log" 40
ok "$rc" "dpkg-buildpackage -us -uc -b builds the package"
deb=$(find "$tmp" -maxdepth 1 -name "cloister_*.deb" | head -n 1)
if [ -z "$deb" ]; then
        echo "Bail out! no cloister_*.deb was built"
        exit 1
fi
# tests/run's deploy stage builds the OCI image from this same package.
if [ -n "${CLOISTER_DEB_KEEP:-}" ] && [ -d "$CLOISTER_DEB_KEEP" ]; then
        cp "$deb" "$CLOISTER_DEB_KEEP/"
fi

# 2. What the package says it needs: the libraries by shlibs, and the
# run-time programs by name.
depends=$(dpkg-deb -f "$deb" Depends)
echo "# Depends: $depends"
# libfuse: the system's where it is 3.18 or later; else the vendored one
# (subprojects/libfuse), linked statically, which needs liburing and libnuma
# for its io_uring transport and must not make the package ask for the
# system's older libfuse3-3.
if pkg-config --atleast-version=3.18 fuse3 2>/dev/null; then
        fuse_libs=(libfuse3-4)
        fuse_not=""
else
        fuse_libs=(liburing2 libnuma1)
        fuse_not=libfuse3-3
fi
good=0
for p in bubblewrap fuse3 "${fuse_libs[@]}" libgit2-1.5 libsodium23 libseccomp2 libssl3 libinih1 libjansson4; do
        grep -Eq "(^|, )$p( |,|$)" <<<"$depends" || {
                echo "# $p is not in Depends"
                good=1
        }
done
if [ -n "$fuse_not" ] && grep -Eq "(^|, )$fuse_not( |,|$)" <<<"$depends"; then
        echo "# $fuse_not is in Depends, though the vendored libfuse is linked statically"
        good=1
fi
ok $good "Depends has bubblewrap, fuse3 and every library cloister links"

# The vendored libfuse is built into cloister, never shipped as a library.
leaked=$(dpkg-deb -c "$deb" | awk '{print $6}' | grep -E '^\./usr/include/|libfuse3\.(a|so)|/fuse3\.pc$')
[ -z "$leaked" ] || echo "$leaked" | sed 's/^/# shipped: /'
ok "$([ -z "$leaked" ] && echo 0 || echo 1)" "the package ships no libfuse library, header or .pc"

good=0
for f in ./usr/bin/cloister ./usr/bin/git-credential-cloister ./usr/share/man/man1/cloister-run.1.gz \
        ./usr/share/man/man5/cloister.ini.5.gz ./usr/share/man/man5/cloister-policy.5.gz \
        ./usr/share/doc/cloister/examples/quickstart.ini ./usr/share/doc/cloister/copyright \
        ./usr/share/cloister/examples/quickstart ./usr/share/cloister/examples/demo/test.sh; do
        dpkg-deb -c "$deb" | awk '{print $6}' | grep -qxF "$f" || {
                echo "# $f is not in the package"
                good=1
        }
done
ok $good "the package holds the binaries, man pages, examples and copyright"

# 3. lintian, where installed: an error fails, warnings are shown.
if command -v lintian >/dev/null; then
        lintian --info "$deb" >"$tmp/lintian.log" 2>&1
        grep -v 'running with root privileges' "$tmp/lintian.log" | sed 's/^/# lintian: /'
        ! grep -q '^E:' "$tmp/lintian.log"
        ok $? "lintian finds no error in the package"
else
        skip "lintian finds no error in the package" "lintian is not installed"
fi

# 4. Install the way a user does; apt resolves the dependencies.
DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$deb" >"$tmp/install.log" 2>&1
rc=$?
[ "$rc" = 0 ] && installed=1
[ "$rc" = 0 ] || show "$tmp/install.log"
ok "$rc" "apt-get install ./cloister_*.deb"
if [ "$installed" != 1 ]; then
        echo "Bail out! the package did not install"
        exit 1
fi

# From here on, only installed files, from a directory of our own.
mkdir "$tmp/cwd"
cd "$tmp/cwd" || exit 1
hash -r

[ "$(command -v cloister)" = /usr/bin/cloister ]
ok $? "cloister on PATH is the installed /usr/bin/cloister"

cloister --version >"$tmp/version" 2>&1
rc=$?
sed 's/^/# /' "$tmp/version"
good=$rc
want="cloister $(dpkg-deb -f "$deb" Version)"
[ "$(head -n 1 "$tmp/version")" = "$want" ] || { echo "# first line is not '$want'"; good=1; }
for lib in libfuse libgit2 libsodium; do
        grep -Eq "^$lib [0-9]+\.[0-9]+" "$tmp/version" || { echo "# no $lib version"; good=1; }
done
# The bubblewrap it runs is the one the package depends on.
grep -Eq '^bubblewrap [0-9.]+ \(/usr/bin/bwrap\)$' "$tmp/version" || {
        echo "# bubblewrap is not found at /usr/bin/bwrap"
        good=1
}
ok $good "cloister --version names its version, its libraries and /usr/bin/bwrap"

# 5. The manual: man finds the pages, they render without a warning, and
# the documentation they point to under /usr/share/doc is there.
good=0
for page in cloister cloister-run cloister-broker git-credential-cloister "5 cloister.ini" \
        "5 cloister-policy" "7 cloister-systemd"; do
        # shellcheck disable=SC2086 # "5 cloister.ini" is a section and a name
        path=$(man -w $page 2>&1) || {
                echo "# man -w $page: $path"
                good=1
                continue
        }
        case $path in /usr/share/man/*) ;; *)
                echo "# man -w $page: $path is not the installed page"
                good=1
                ;;
        esac
done
ok $good "man -w finds cloister(1), cloister-run(1), cloister.ini(5), cloister-policy(5) ... in /usr/share/man"

good=0
for f in $(dpkg -L cloister | grep '^/usr/share/man/.*\.gz$'); do
        # shellcheck disable=SC2034 # the rendered text is not needed
        warn=$(MANWIDTH=80 man --warnings -l "$f" 2>&1 >/dev/null)
        [ -z "$warn" ] || {
                echo "# $f: $(head -n 3 <<<"$warn")"
                good=1
        }
done
MANWIDTH=80 man cloister-run 2>/dev/null | grep -q 'cloister run \[' || {
        echo "# man cloister-run shows no synopsis"
        good=1
}
ok $good "every installed man page renders without a warning"

good=0
for f in $(dpkg -L cloister | grep '^/usr/share/man/.*\.gz$' | xargs zcat |
        grep -o '/usr/share/doc/cloister[^ \\"]*' | sed 's/[.,;)]*$//' | sort -u); do
        [ -e "$f" ] || {
                echo "# a man page points to $f, which is not installed"
                good=1
        }
done
ok $good "the paths the man pages point to under /usr/share/doc/cloister exist"

# 6. Completion, where bash-completion looks for it and as it loads it: on
# demand, by the command's name.
bcdir=$(pkg-config --variable=completionsdir bash-completion 2>/dev/null ||
        echo /usr/share/bash-completion/completions)
[ -r "$bcdir/cloister" ]
ok $? "the bash completion is installed in $bcdir"
if [ -r /usr/share/bash-completion/bash_completion ]; then
        out=$(bash -c '. /usr/share/bash-completion/bash_completion
                __load_completion cloister && complete -p cloister' 2>&1)
        echo "# $out"
        grep -q -- '-F _cloister cloister' <<<"$out"
        ok $? "bash-completion loads the completion for cloister by itself"
else
        skip "bash-completion loads the completion for cloister by itself" "bash-completion is not installed"
fi

# 7. The systemd units, verified (that also runs every ExecStart= binary's
# check and looks up each Documentation= man page). Any warning fails too:
# systemd only warns about an unknown key.
units=$(dpkg -L cloister | grep -E '/systemd/system/cloister-[^/]*\.(service|socket)$')
if ! command -v systemd-analyze >/dev/null; then
        skip "systemd-analyze verify passes on the installed units" "systemd-analyze is missing (package systemd)"
else
        printf '[Unit]\nDescription=probe\n[Service]\nType=oneshot\nExecStart=/bin/true\n' \
                >"$tmp/cloister-ci-probe.service"
        if ! probe=$(systemd-analyze verify "$tmp/cloister-ci-probe.service" 2>&1) || [ -n "$probe" ]; then
                skip "systemd-analyze verify passes on the installed units" \
                        "systemd-analyze cannot verify even a trivial unit here: $(head -n 1 <<<"$probe")"
        else
                good=0
                for u in $units; do
                        # A template is verified through an instance of it.
                        inst=${u/@./@ci.}
                        out=$(systemd-analyze verify "$inst" 2>&1) || good=1
                        [ -z "$out" ] || {
                                echo "# $inst: $out"
                                good=1
                        }
                done
                [ -n "$units" ] || good=1
                ok $good "systemd-analyze verify passes on $(echo "$units" | xargs -n1 basename | xargs)"
        fi
fi

# 8. The broker as cloister-broker@NAME.socket starts it: ExecStart= of the
# installed service, with the socket the .socket unit names, passed by
# systemd's own activation helper. The config is the installed example,
# at the path the units read (/etc/cloister/NAME.ini), under a name of
# our own, removed at the end.
name=ci-$$
etc=/etc/cloister
sock_unit=$(grep '@\.socket$' <<<"$units")
svc_unit=$(grep 'broker@\.service$' <<<"$units")
if ! command -v systemd-socket-activate >/dev/null; then
        skip "the broker serves a token on the socket its .socket unit names" "systemd-socket-activate is missing"
elif [ -e "$etc/$name.ini" ] || [ -e "/var/lib/cloister/$name" ]; then
        skip "the broker serves a token on the socket its .socket unit names" "$etc/$name.ini exists"
else
        made=()
        for d in "$etc" /var/lib/cloister; do
                [ -d "$d" ] || { mkdir -p "$d" && made+=("$d"); }
        done
        sed "s/^name = .*/name = $name/" /usr/share/doc/cloister/examples/systemd/example.ini \
                | sed "s|^state = .*|state = /var/lib/cloister/$name|" \
                | sed "s|^source = .*|source = $tmp/repo|" >"$etc/$name.ini"
        sed "s/^workspaces = .*/workspaces = $name/" \
                /usr/share/doc/cloister/examples/systemd/example-policy.ini >"$etc/$name-policy.ini"
        sed -i "s|^policy = .*|policy = $etc/$name-policy.ini|" "$etc/$name.ini"
        git init -q -b main "$tmp/repo" && echo hello >"$tmp/repo/README" &&
                git -C "$tmp/repo" add README &&
                git -C "$tmp/repo" -c user.name=ci -c user.email=ci@cloister.invalid commit -qm init
        listen=$(sed -n 's/^ListenStream=//p' "$sock_unit" | sed "s/%i/$name/g")
        exec_start=$(sed -n 's/^ExecStart=//p' "$svc_unit" | sed "s/%i/$name/g")
        echo "# $listen <- $exec_start"
        # StateDirectory=cloister/%i, StateDirectoryMode=0700, as systemd makes it
        install -d -m 0700 "/var/lib/cloister/$name"
        # shellcheck disable=SC2086 # ExecStart= is a command line
        systemd-socket-activate -l "$listen" $exec_start >"$tmp/broker.log" 2>&1 &
        broker_pid=$!
        for _ in $(seq 100); do [ -S "$listen" ] && break; sleep 0.1; done
        # SocketMode=0600, which the helper has no option for; the broker
        # refuses a socket others may reach. It starts on the first
        # connection, so this comes before it looks.
        chmod 0600 "$listen"
        scope=$(sed -n 's/^\[scope "\(.*\)"\]$/\1/p' "$etc/$name-policy.ini" | head -n 1)
        token=$(CLOISTER_BROKER=$listen cloister token issue "$scope" 2>"$tmp/token.err")
        rc=$?
        [ "$rc" = 0 ] && [[ $token == v4.public.* ]]
        good=$?
        [ "$good" = 0 ] || { show "$tmp/token.err" 5; show "$tmp/broker.log" 10; }
        ok $good "the broker serves a token on the socket its .socket unit names ($scope)"
        kill "$broker_pid" 2>/dev/null
        wait "$broker_pid" 2>/dev/null
        broker_pid=""
        grep -q 'every token of its workspaces is revoked' "$tmp/broker.log"
        ok $? "the broker stops on SIGTERM and revokes its tokens"
        rm -rf --one-file-system "/var/lib/cloister/$name" "$etc/$name.ini" "$etc/$name-policy.ini"
        for d in "${made[@]}"; do rmdir "$d"; done
fi

# 9. The packaged quickstart, end to end, as its manual page documents it:
# /usr/share/cloister/examples/quickstart, run from outside any source tree,
# makes its demo repository, stores its demo secret, passes
# `cloister check --strict`, runs the agent, prints the patch and checks
# that it applies to a fresh clone (its own exit status says so). Run
# twice: no state of the first run may be needed, or break the second.
qs=/usr/share/cloister/examples/quickstart
cfg=/usr/share/cloister/examples/quickstart.ini
for round in 1 2; do
        (cd "$tmp" && "$qs") >"$tmp/qs$round.out" 2>"$tmp/qs$round.err"
        rc=$?
        good=$rc
        [ "$rc" = 0 ] || { show "$tmp/qs$round.out" 15; show "$tmp/qs$round.err" 10; }
        if [ "$rc" = 0 ]; then
                for want in "ok - greet agent -> Hello, agent!" "+printf 'Hello, %s!\\n'" \
                        "the patch applies with git apply" "HOME=/home/agent holds: []" \
                        "agent: got a token: v4.public."; do
                        grep -qF -- "$want" "$tmp/qs$round.out" || {
                                echo "# round $round: the output lacks: $want"
                                good=1
                        }
                done
        fi
        ok $good "the packaged quickstart runs end to end from the package alone (round $round)"
done
! grep -qF " /var/tmp/cloister/quickstart/" /proc/self/mounts
ok $? "the packaged quickstart leaves no mount behind"
cloister check --strict "$cfg" >"$tmp/check.log" 2>&1
rc=$?
[ "$rc" = 0 ] || show "$tmp/check.log" 5
ok "$rc" "the installed quickstart config passes cloister check --strict after a run"
cfg=""
rm -rf /var/tmp/cloister/quickstart /var/tmp/cloister/quickstart-repo

# 10. Purge, so the rest of the machine's life does not see the package.
cd / || exit 1
DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq cloister >"$tmp/purge.log" 2>&1
rc=$?
[ "$rc" = 0 ] && installed=0
[ "$rc" = 0 ] && [ ! -e /usr/bin/cloister ] && [ ! -e "$bcdir/cloister" ]
good=$?
[ "$good" = 0 ] || show "$tmp/purge.log"
ok $good "apt-get purge cloister removes it all"

echo "1..$n"
[ "$fails" = 0 ]
