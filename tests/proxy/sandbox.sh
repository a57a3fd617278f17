#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# sandbox.sh: [network] mode = proxy through `cloister run`: real git
# clone, fetch and push inside the sandbox to a git http-backend behind
# HTTPS on 127.0.0.1 that checks the injected credential; push scoping as
# git reports it; curl through CONNECT; no DNS and no route but the proxy;
# the proxy killed mid-run (the agent loses the network, nothing else);
# and the real secret searched for inside the sandbox, in the journal and
# in the logs.
. "$CLOISTER_SRC/tests/proxy/lib.sh"

command -v git >/dev/null || skip_all "git is not installed"
[ -x "$(command -v bwrap 2>/dev/null)" ] || skip_all "bubblewrap is not installed"
bwrap --unshare-user --unshare-net --ro-bind / / true 2>/dev/null ||
        skip_all "this kernel or container does not allow user and network namespaces"
[ -e /dev/fuse ] || skip_all "FUSE is not available (/dev/fuse missing)"

make_certs || skip_all "openssl could not make a test CA"
# The git server's repository, with one commit on main.
mkdir -p "$T/gitroot/org" "$T/seed"
git init -q --bare -b main "$T/gitroot/org/repo.git"
git -C "$T/gitroot/org/repo.git" config http.receivepack true
git -C "$T/seed" init -q -b main
echo one >"$T/seed/a"
git -C "$T/seed" add a
git -C "$T/seed" -c user.name=t -c user.email=t@t commit -qm one
git -C "$T/seed" push -q "$T/gitroot/org/repo.git" main
start_server git --tls --git-root "$T/gitroot" --auth "Basic $(b64 "x-access-token:$GITSECRET")" ||
        { echo "Bail out! the git server did not start"; exit 1; }
GP=$(port git)

# The workspace: its own repo, a mirror holding the test CA (for curl).
mkdir -p "$T/repo" "$T/state" "$T/cadir"
cp "$T/ca/ca.pem" "$T/cadir/"
git -C "$T/repo" init -q -b main
echo hello >"$T/repo/hello.txt"
git -C "$T/repo" add hello.txt
git -C "$T/repo" -c user.name=t -c user.email=t@t commit -qm init
cat >"$T/policy.ini" <<EOF
[scope "git"]
audience = https://git.test
workspaces = wsp
hosts = git.test
username = x-access-token
EOF
CFG=$T/ws.ini
cat >"$CFG" <<EOF
[workspace]
name = wsp
state = $T/state
mountpoint = $T/mnt
[repo]
source = $T/repo
[mirror "ca"]
source = $T/cadir
path = /opt/ca
[broker]
policy = $T/policy.ini
[network]
mode = proxy
allow = web.test:$GP
resolve = git.test:127.0.0.1, web.test:127.0.0.1
test_ca = $T/ca/ca.pem
[inject "git"]
host = git.test
port = $GP
methods = GET, POST
paths = /git/org/repo.git/**
scope = git
secret = git-token
scheme = basic
username = x-access-token
push_refs = refs/heads/cloister/wsp/*
EOF
mkdir -p "$T/state/broker" && chmod 700 "$T/state" "$T/state/broker"
printf '%s' "$GITSECRET" | "$CLOISTER" secret add git-token --config "$CFG" >/dev/null 2>&1
trap 'stop_all; "$CLOISTER" unmount "$CFG" >/dev/null 2>&1; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
crun() { "$CLOISTER" run "$CFG" -- "$@" 2>>"$T/run.log"; }
out=$(crun true 2>&1) || case "$out" in
*"needs a pids cgroup"*) skip_all "running as root without a usable pids cgroup: $out" ;;
*) echo "Bail out! cloister run fails: $out"; exit 1 ;;
esac

# An ASan client reserves ~20 TiB of shadow address space, more than any
# RLIMIT_AS the sandbox allows: under ASan, git-credential-cloister cannot run
# inside, so git gets a token issued on the host (from a broker this script
# starts, which the runs then share) through a one-line helper instead. The
# proxy, the part under test, is the ASan build either way.
GITFN='g() { git "$@"; }'
if ldd "$CLOISTER" 2>/dev/null | grep -q libasan; then
        echo "# ASan build: git gets its token from a host-side helper, not git-credential-cloister"
        start_broker "$CFG" "$T/state/broker.sock" || { echo "Bail out! broker did not start"; exit 1; }
        "$CLOISTER" token issue git --ttl 900 --socket "$T/state/broker.sock" >"$T/cadir/tok"
        GITFN='g() { git -c credential.helper= -c "credential.helper=!f() { echo username=x-access-token; echo password=\$(cat /opt/ca/tok); }; f" "$@"; }'
fi

# --- git through the proxy ----------------------------------------------------
out=$(crun sh -c "$GITFN"'
        cd /tmp && g clone -q https://git.test/git/org/repo.git c && cd c &&
        git log --format=%s && echo two >b && git add b &&
        git -c user.name=a -c user.email=a@a commit -qm two &&
        g push -q origin HEAD:refs/heads/cloister/wsp/work && echo PUSHED &&
        { g push origin HEAD:main 2>&1; echo "main=$?"; } &&
        { g push origin :refs/heads/cloister/wsp/work 2>&1; echo "delete=$?"; } &&
        g fetch -q origin && echo FETCHED' 2>"$T/run.err")
is git_runs_inside_the_sandbox "$?" 0
contains git_clone_through_the_proxy_works "$out" "one"
contains git_push_inside_the_pattern_works "$out" "PUSHED"
is pushed_branch_is_on_the_server "$(git -C "$T/gitroot/org/repo.git" log --format=%s -1 cloister/wsp/work 2>&1)" two
contains git_push_outside_the_pattern_fails "$out" "main=1"
contains refused_push_reads_as_a_git_rejection "$out" "[remote rejected] HEAD -> main (push refused: refs/heads/main is outside the rule's push_refs"
is refused_push_left_main_alone "$(git -C "$T/gitroot/org/repo.git" log --format=%s -1 main)" one
contains deleting_a_branch_is_refused "$out" "delete=1"
is refused_delete_left_the_branch "$(git -C "$T/gitroot/org/repo.git" rev-parse -q --verify cloister/wsp/work >/dev/null && echo kept)" kept
contains git_fetch_through_the_proxy_works "$out" "FETCHED"
cfg=$(crun cat /workspace/.git/config)
contains workspace_git_config_rewrites_injected_hosts "$cfg" '[url "http://git.test/"]'
contains workspace_git_config_names_the_credential_helper "$cfg" "helper = /run/cloister/bin/git-credential-cloister"
grep -q "\"Basic $(b64 "x-access-token:$GITSECRET")\"" "$T/git.requests" &&
        ok server_got_the_injected_credential || not_ok server_got_the_injected_credential
grep -q "v4.public" "$T/git.requests" && not_ok server_never_saw_a_cloister_token ||
        ok server_never_saw_a_cloister_token

# --- the smuggled push of issue 43 (8), from inside ------------------------------
# An allowed GET whose Connection names Content-Length carries the head of
# a receive-pack POST to main as its body; the next allowed upload-pack
# POST supplies the push. Refused at the first request; main stays.
G=$T/gitroot/org/repo.git
old=$(git -C "$G" rev-parse main)
new=$(git -C "$G" -c user.name=x -c user.email=x@x commit-tree -p "$old" -m evil "$(git -C "$G" rev-parse 'main^{tree}')")
python3 - "$old" "$new" >"$T/cadir/push.body" <<'EOP'
import hashlib, sys
cmd = f"{sys.argv[1]} {sys.argv[2]} refs/heads/main\0report-status\n".encode()
pack = b"PACK\0\0\0\2\0\0\0\0"
sys.stdout.buffer.write(b"%04x" % (len(cmd) + 4) + cmd + b"0000" + pack + hashlib.sha1(pack).digest())
EOP
cat >"$T/cadir/smuggle.py" <<'EOP'
import base64, socket, subprocess, os
if os.path.exists("/opt/ca/tok"):
    tok = open("/opt/ca/tok").read().strip()
else:
    out = subprocess.run(["/run/cloister/bin/git-credential-cloister", "get"], capture_output=True,
                         input=b"protocol=http\nhost=git.test\n\n").stdout.decode()
    tok = dict(l.split("=", 1) for l in out.splitlines() if "=" in l)["password"]
basic = base64.b64encode(f"x-access-token:{tok}".encode()).decode()
sm = (b"POST /git/org/repo.git/git-receive-pack HTTP/1.1\r\n"
      b"Content-Type: application/x-git-receive-pack-request\r\nX-Ignore: ")
body = open("/opt/ca/push.body", "rb").read()
first = (f"GET http://git.test/git/org/repo.git/info/refs?service=git-upload-pack HTTP/1.1\r\n"
         f"Host: git.test\r\nAuthorization: Basic {basic}\r\nConnection: Content-Length\r\n"
         f"Content-Length: {len(sm)}\r\n\r\n").encode() + sm
second = (f"POST http://git.test/git/org/repo.git/git-upload-pack HTTP/1.1\r\nHost: git.test\r\n"
          f"Authorization: Basic {basic}\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
s.sendall(first + second)
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
print(data.decode("latin-1").split("\r\n")[0])
EOP
before=$(grep -c "git-receive-pack" "$T/git.requests")
out=$(crun python3 /opt/ca/smuggle.py 2>&1)
contains smuggled_push_from_inside_is_refused "$out" " 400 "
is smuggled_push_from_inside_never_reaches_receive_pack "$(grep -c "git-receive-pack" "$T/git.requests")" "$before"
is smuggled_push_from_inside_leaves_main_unchanged "$(git -C "$G" rev-parse main)" "$old"

# --- the network the agent has --------------------------------------------------
out=$(crun sh -c 'curl -sS --cacert /opt/ca/ca.pem https://web.test:'"$GP"'/hi' 2>&1)
contains curl_connect_inside_the_sandbox_works "$out" "hello from git"
out=$(crun sh -c 'curl -sS -o /dev/null -w "%{http_code}" https://example.com/ 2>&1; echo " rc=$?"')
contains unlisted_host_is_refused_inside "$out" "rc=56"
out=$(crun sh -c 'env | grep -i _proxy= | sort | tr "\n" " "')
contains proxy_variables_are_set "$out" "HTTPS_PROXY=http://127.0.0.1:3128"
out=$(crun sh -c 'getent hosts git.test; echo rc=$?; grep -c nameserver /etc/resolv.conf')
contains no_dns_inside_the_sandbox "$out" "rc=2"
out=$(crun sh -c 'curl -sS --noproxy "*" -k -o /dev/null https://127.0.0.1:'"$GP"'/ 2>&1; echo rc=$?')
contains no_route_but_the_proxy "$out" "rc=7"
out=$(crun sh -c 'cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d " "')
is sandbox_has_only_loopback "$out" lo

# --- the proxy killed mid-run ------------------------------------------------------
rm -f "$T/mnt/workspace/go"
crun sh -c 'curl -sS --cacert /opt/ca/ca.pem -o /dev/null -w "%{http_code}" https://web.test:'"$GP"'/a >/workspace/before 2>&1
        while [ ! -e /workspace/go ]; do sleep 0.1; done
        curl -sS --cacert /opt/ca/ca.pem https://web.test:'"$GP"'/b >/dev/null 2>&1; echo $? >/workspace/after
        echo still-here >/workspace/alive' >"$T/kill.out" 2>&1 &
RUN=$!
for _ in $(seq 300); do [ -s "$T/mnt/workspace/before" ] && [ -s "$T/state/proxy.pid" ] && break; sleep 0.1; done
PPID_=$(cat "$T/state/proxy.pid" 2>/dev/null)
if [ -n "$PPID_" ] && kill -0 "$PPID_" 2>/dev/null; then
        kill -KILL "$PPID_"
        touch "$T/mnt/workspace/go"
        wait "$RUN"
        rc=$?
        # What the sandbox wrote, read back through the next run (the mount went with this one).
        got=$(crun sh -c 'cat /workspace/before; echo; cat /workspace/after /workspace/alive' | tr '\n' ' ')
        is killed_proxy_run_exits_normally "$rc" 0
        is proxy_was_reachable_then_refused_and_the_sandbox_went_on "$got" "200 7 still-here "
        is the_proxy_is_gone "$(kill -0 "$PPID_" 2>/dev/null && echo alive || echo gone)" gone
else
        touch "$T/mnt/workspace/go"
        wait "$RUN"
        not_ok proxy_was_reachable_then_refused_and_the_sandbox_went_on "no proxy pid: $(cat "$T/kill.out")"
fi

# --- the secret never appears where it must not ----------------------------------------
# The command line names the secret only base64-encoded: every command's
# argv goes into the run record (runs.jsonl), which the check below reads.
out=$(crun sh -c 'env; cat /etc/gitconfig /workspace/.git/config; s=$(echo '"$(printf %s "$GITSECRET" | base64 -w0)"' | base64 -d); echo "pattern of ${#s} bytes"; grep -rl -- "$s" /tmp /workspace /home /etc /run /opt 2>/dev/null; echo searched')
lacks real_secret_is_not_inside_the_sandbox "${out%searched}" "$GITSECRET"
contains the_search_inside_ran "$out" "searched"
contains the_search_inside_looked_for_the_whole_secret "$out" "pattern of ${#GITSECRET} bytes"
"$CLOISTER" log "$CFG" >"$T/journal.txt" 2>&1
leaks=$(grep -rl -- "$GITSECRET" "$T/state" "$T/journal.txt" "$T"/*.log "$T/run.err" "$T/kill.out" 2>/dev/null | tr '\n' ' ')
is real_secret_is_not_in_journal_logs_or_state "$leaks" ""
out=$("$CLOISTER" audit verify "$CFG")
is net_log_chain_is_intact "$?" 0
done_testing
