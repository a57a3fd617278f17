# SPDX-License-Identifier: MIT
#
# lib.sh: what the container tests (podman.sh, kube.sh) share: TAP
# helpers, the skips a machine may need, a podman of the test's own (its
# storage, its configuration, nothing of the machine's changed), and the
# image, loaded from CLOISTER_OCI_IMAGE (tests/run builds it once) or
# built here with packaging/oci/build.
#
# The settings a run needs on a machine like Debian 12's (docs/deploy.md):
# runc (crun refuses to start anything on a kernel with cgroup v1
# controllers), limits on open files and processes within the machine's
# hard limits (podman's defaults exceed them in a container), the cgroupfs
# manager and the file events logger (no systemd needed).

set -u

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
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
skip_all() {
        echo "1..0 # SKIP $*"
        exit 77
}
# skip_rest REASON: the machine can't do the rest; after results of its
# own (kube.sh's offline checks), those stand and the rest is one skip.
skip_rest() {
        ((n == 0)) && skip_all "$*"
        skip "the container tests" "$*"
        done_testing
        exit
}
show() { tail -n "${2:-20}" "$1" | sed 's/^/# /'; }
has() { grep -qF -- "$2" "$1"; } # has FILE TEXT
done_testing() {
        echo "1..$n"
        [ "$fails" = 0 ]
}

[ "$(id -u)" -eq 0 ] || skip_all "needs root: rootful podman with /dev/fuse"
for t in podman runc; do
        command -v "$t" >/dev/null || skip_all "$t is not installed (tests/install-deps --deploy installs it)"
done
[ -c /dev/fuse ] || skip_all "no /dev/fuse on this machine"

T=$(mktemp -d /var/tmp/cloister-deploy.XXXXXX)
chmod 0755 "$T"
# The user namespace of the containers: 65536 ids from here, as Kubernetes
# gives a Pod with hostUsers: false (root, the image's users, and
# cloister's sandbox identities at 60000 up).
idbase=1200000000
hard_nofile=$(ulimit -Hn)
hard_nproc=$(ulimit -Hu)
[ "$hard_nofile" = unlimited ] && hard_nofile=1048576
[ "$hard_nproc" = unlimited ] && hard_nproc=1048576
# Below the hard limits (a container may lower them, never raise them):
# plenty for the containers' pids limits of 256 and 512.
nofile=$((hard_nofile < 16384 ? hard_nofile : 16384))
nproc=$((hard_nproc < 4096 ? hard_nproc : 4096))
cat >"$T/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
# What the kubelet's podPidsLimit is on a node: kube play's containers get it.
pids_limit = 512
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
export CONTAINERS_CONF=$T/containers.conf
# The repositories here belong to the containers' root, not to ours: git
# outside reads them too (a global config of the test's own, which the
# git upload-pack of a local clone also reads).
printf '[safe]\n\tdirectory = *\n' >"$T/gitconfig"
export GIT_CONFIG_GLOBAL=$T/gitconfig
pm() { podman --root "$T/storage" --runroot "$T/run" --tmpdir "$T/libpod" "$@"; }
# AppArmor (on by default in Debian's kernels, off on this project's test
# machine): podman confines every container by its default profile, which
# denies mount, and the FUSE mount with it. No profile of cloister's is
# shipped (docs/deploy.md: none could be tested); the containers here run
# unconfined by AppArmor, and the run says so.
if [ "$(pm info --format '{{.Host.Security.AppArmorEnabled}}' 2>/dev/null)" = true ]; then
        echo "# AppArmor is on: the containers run with apparmor_profile = \"unconfined\" (podman's default profile denies mount; docs/deploy.md)"
        sed -i 's/^\[containers\]$/&\napparmor_profile = "unconfined"/' "$T/containers.conf"
fi

cleanup() {
        pm kube down "$T/pod.yaml" >/dev/null 2>&1
        pm pod rm -af -t 0 >/dev/null 2>&1
        pm rm -af -t 0 >/dev/null 2>&1
        pm rmi -af >/dev/null 2>&1
        # Whatever podman left mounted in its storage, then the files.
        grep -F " $T/" /proc/self/mountinfo | awk '{print $5}' | sort -r |
                while read -r m; do umount -l "$m" 2>/dev/null; done
        grep -qF " $T/" /proc/self/mountinfo || rm -rf --one-file-system "$T"
}
trap cleanup EXIT

# A trivial container first: a machine whose kernel or podman can't run
# one at all is a machine to skip on, with podman's own words.
image_load() {
        local image=${CLOISTER_OCI_IMAGE:-} t0=$SECONDS rc
        if [ -z "$image" ]; then
                echo "# building the image: packaging/oci/build $T/image"
                "$src/packaging/oci/build" "$T/image" >"$T/build.log" 2>&1
                rc=$?
                # 4: Debian's mirror is out of reach, not the tree's fault.
                [ "$rc" = 4 ] && skip_rest "$(grep -m 1 '^packaging/oci/build: ' "$T/build.log")"
                if [ "$rc" != 0 ]; then
                        show "$T/build.log" 30
                        ok 1 "packaging/oci/build makes the image"
                        done_testing
                        exit 1
                fi
                image=$T/image/cloister-oci.tar
                echo "# built in $((SECONDS - t0)) s: $(grep '^size:' "$T/build.log")"
        fi
        pm load -i "$image" >"$T/load.log" 2>&1
        ok $? "podman load accepts the OCI archive"
        pm image exists localhost/cloister:latest || {
                show "$T/load.log"
                echo "Bail out! no localhost/cloister:latest after podman load"
                exit 1
        }
        if ! pm run --rm --network none localhost/cloister true >"$T/trivial.log" 2>&1; then
                skip_rest "podman cannot run a container here: $(tr '\n' ' ' <"$T/trivial.log" | head -c 300)"
        fi
        # The least privilege starts with a user namespace of the container's own.
        if ! pm run --rm --network none --uidmap "0:$idbase:65536" --gidmap "0:$idbase:65536" \
                localhost/cloister true >"$T/userns.log" 2>&1; then
                skip_rest "podman cannot give a container a user namespace here: $(tr '\n' ' ' <"$T/userns.log" | head -c 300)"
        fi
}

# The demo project as the quickstart makes it (examples/quickstart), owned
# by the containers' root: git and libgit2 refuse a repository someone
# else owns, and this one is shown to the container read-only.
demo_repo() { # demo_repo DIR
        git init -q -b main "$1"
        cp -R "$src/examples/demo/." "$1/"
        git -C "$1" add -A
        GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' GIT_COMMITTER_DATE='2026-01-01T00:00:00Z' \
                git -C "$1" -c user.name='cloister quickstart' -c user.email=quickstart@cloister.invalid \
                -c commit.gpgsign=false commit -q -m 'greet: a greeting and its tests'
        git -C "$1" remote add origin https://git.example.com/demo/greet.git
        chown -R "$idbase:$idbase" "$1"
}

# The patch the quickstart printed: from its "cloister diff" heading to the next.
patch_of() { # patch_of LOG
        awk '/^== cloister diff [^-]/ { on = 1; next } /^== / { on = 0 } on' "$1"
}
