#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# kube.sh: the Kubernetes manifests of deploy/kubernetes, checked offline
# against the API schema, then run by a real engine, podman kube play:
#   - every manifest validates (tests/deploy/k8s-validate.py, on Debian's
#     python3-kubernetes), and a manifest with a misspelt field does not;
#   - the Job's Pod is the Pod template, and the Pod's memory limit is
#     [limits] memory of its workspace;
#   - the Pod runs: its init container clones the demo repository from the
#     repositories volume, the agent container seals the broker's secret
#     from the Secret, runs the agent in the sandbox with the template's
#     securityContext (a user namespace, six capabilities, the seccomp
#     profile, no new privileges, a read-only root), and writes the patch
#     to the patches volume; the patch applies to a clone of the repository
#     here, outside; the container's log holds the journal's and the
#     audit's lines as JSON, and their signed chains verify from them with
#     the public key the task writes beside its patch.
#
# podman kube play 4.3 (Debian 12) reads procMount: Unmasked but does not
# apply it, and maps hostUsers: false to a user namespace drawn from
# /etc/subuid: the test names runc-procmount as the runtime (it applies the
# field as a Kubernetes runtime does) and gives the user namespace on the
# command line. Needs root, podman, runc, catatonit (the Pod's infra
# container) and python3-kubernetes (tests/install-deps --deploy); skips
# (77) without them, or where podman can run no container here.
. "$(dirname "$0")/lib.sh"

k8s=$src/deploy/kubernetes
py=/usr/bin/python3

# --- offline: the manifests against the API schema -----------------------
if ! $py -c 'import kubernetes, yaml' 2>/dev/null; then
        skip "the manifests validate against the Kubernetes API schema" \
                "python3-kubernetes is not installed (tests/install-deps --deploy)"
else
        $py "$src/tests/deploy/k8s-validate.py" "$k8s"/*.yaml >"$T/validate.log" 2>&1
        rc=$?
        sed 's/^/# /' "$T/validate.log"
        ok $rc "every manifest of deploy/kubernetes validates against the Kubernetes API schema"
        sed 's/allowPrivilegeEscalation:/allowPrivilegeEscalaton:/' "$k8s/task-pod.yaml" >"$T/typo.yaml"
        $py "$src/tests/deploy/k8s-validate.py" "$T/typo.yaml" >"$T/typo.log" 2>&1
        rc=$?
        [ "$rc" = 1 ] && has "$T/typo.log" "unknown field 'allowPrivilegeEscalaton'"
        ok $? "a manifest with a misspelt field does not validate"
        $py - "$k8s" >"$T/same.log" 2>&1 <<'EOF'
import re, sys, yaml
k8s = sys.argv[1]
pod = yaml.safe_load(open(f"{k8s}/task-pod.yaml"))
job = yaml.safe_load(open(f"{k8s}/task-job.yaml"))
assert job["spec"]["template"]["spec"] == pod["spec"], "the Job's Pod spec is not task-pod.yaml's"
assert job["spec"]["template"]["metadata"]["annotations"] == pod["metadata"]["annotations"]
cm = yaml.safe_load(open(f"{k8s}/config.yaml"))
ws = cm["data"]["ws.ini"]
mem = re.search(r"^memory = (\d+)G$", ws, re.M).group(1)
agent = [c for c in pod["spec"]["containers"] if c["name"] == "agent"][0]
assert agent["resources"]["limits"]["memory"] == f"{mem}Gi", "limits.memory is not [limits] memory"
assert "cgroup = container" in ws
print("same spec; memory limit", agent["resources"]["limits"]["memory"], "= [limits] memory", mem + "G")
EOF
        rc=$?
        sed 's/^/# /' "$T/same.log"
        ok $rc "the Job wraps the Pod template, whose memory limit is its [limits] memory"
fi

# --- podman kube play ------------------------------------------------------
command -v catatonit >/dev/null || [ -x /usr/libexec/podman/catatonit ] ||
        { skip "podman kube play runs the task to a patch" "catatonit is not installed"; done_testing; exit; }
image_load
# The runtime: runc, applying procMount: Unmasked (runc-procmount).
cat >>"$T/containers.conf" <<EOF
[engine.runtimes]
cloister-runc = ["$src/tests/deploy/runc-procmount"]
EOF
sed -i 's/^runtime = "runc"$/runtime = "cloister-runc"/' "$T/containers.conf"

# The volumes a cluster would have: the repositories (the demo's, written
# by someone else: root here) and an empty one for the patches; the Secret.
pm volume create cloister-repos >/dev/null && pm volume create cloister-patches >/dev/null
repos=$(pm volume inspect cloister-repos --format '{{.Mountpoint}}')
patches=$(pm volume inspect cloister-patches --format '{{.Mountpoint}}')
demo_repo "$repos/demo"
chown -R 0:0 "$repos/demo"
pm secret create cloister-broker-secrets "$k8s/secret.yaml" >/dev/null
{ cat "$k8s/config.yaml"; echo ---; cat "$k8s/task-pod.yaml"; } >"$T/pod.yaml"

pm kube play --network none \
        --userns "auto:uidmapping=0:$idbase:65536,gidmapping=0:$idbase:65536" \
        --seccomp-profile-root "$src/deploy/seccomp" "$T/pod.yaml" >"$T/play.log" 2>&1
rc=$?
[ "$rc" = 0 ] || show "$T/play.log"
ok $rc "podman kube play starts the Pod"
status=$(timeout 600 podman --root "$T/storage" --runroot "$T/run" --tmpdir "$T/libpod" \
        wait cloister-task-agent 2>"$T/wait.log")
pm logs cloister-task-agent >"$T/agent.log" 2>&1
[ "$status" = 0 ] || { show "$T/wait.log"; show "$T/agent.log" 30; pm logs cloister-task-clone 2>&1 | tail -5 | sed 's/^/# clone: /'; }
is_zero=1
[ "$status" = 0 ] && is_zero=0
ok $is_zero "the agent container runs the task to its end (exit status ${status:-none})"
has "$T/agent.log" "[limits] cgroup = container: the container's cgroup enforces memory <= 2G"
ok $? "the task's run says the container's cgroup enforces [limits] memory"

grep -q '^diff --git a/greet.sh b/greet.sh' "$patches/demo.patch" 2>/dev/null
ok $? "the patch comes out on the patches volume"
git clone -q "$repos/demo" "$T/clone" 2>/dev/null
git -C "$T/clone" apply "$patches/demo.patch" 2>"$T/apply.err" && (cd "$T/clone" && ./test.sh >/dev/null)
rc=$?
[ "$rc" = 0 ] || show "$T/apply.err"
ok $rc "the patch applies to a clone outside, and the demo's tests pass with it"

# [logs] stdout = json: the container's log is the cluster's pipeline.
grep -q '^{"cloister":"journal","workspace":"task","chain":"[0-9a-f]*","n":[0-9]*,"prev":"[0-9a-f]*","line":{.*"path":"/workspace/README.md"' "$T/agent.log"
ok $? "the container's log holds the journal's lines, tagged with the workspace"
$py "$src/deploy/collector/verify-chain" --keys "$patches/demo.paserk" --workspace task --from-start \
        "$T/agent.log" >"$T/chain.log" 2>&1
rc=$?
sed 's/^/# /' "$T/chain.log"
ok $rc "the journal and audit chains verify from the container's log and the task's public key alone"

done_testing
