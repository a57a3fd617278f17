# SPDX-License-Identifier: MIT
"""A raw JSON-RPC client of `cloister mcp` over its stdio, for the Python
tests that drive the server as a model would (and as a hostile one would:
hand-made lines, pipelined calls), and the source repository they serve.
Import it as tap.py is imported, with the tests folder on sys.path.

Nothing waits for ever: every read has a deadline, so a server that stops
answering fails the test, saying so, instead of hanging it. The deadline is
generous (nothing here measures time); it only bounds a call that would
never come back. Once the server has gone silent or closed its output, the
client answers None at once, and the test's own checks fail on it."""
import json
import os
import select
import subprocess
import tempfile
import time

from tap import ok

DEADLINE_S = 120  # a call that has not answered by then never will


def source_repo(path, files):
    """A git repository at path, on branch main, holding files ({name: text})
    in one commit."""
    subprocess.run(["git", "init", "-q", "-b", "main", path], check=True)
    for name, text in files.items():
        with open(os.path.join(path, name), "w") as f:
            f.write(text)
    subprocess.run(["git", "-C", path, "add", "-A"], check=True)
    subprocess.run(["git", "-C", path, "-c", "user.name=t", "-c", "user.email=t@example.com",
                    "commit", "-qm", "base"], check=True)


def scratch_workspace(prefix, files):
    """A scratch directory of its own (its XDG config and state homes set
    for the servers and commands started from here on) holding a source
    repository of files and a workspace config over it: (dir, config)."""
    t = tempfile.mkdtemp(prefix=prefix)
    os.environ["XDG_CONFIG_HOME"] = f"{t}/xdg-config"
    os.environ["XDG_STATE_HOME"] = f"{t}/xdg-state"
    os.makedirs(f"{t}/conf")
    source_repo(f"{t}/src", files)
    cfg = f"{t}/conf/ws.ini"
    with open(cfg, "w") as f:
        f.write(f"[workspace]\nname = ws\nstate = {t}/states/ws\n[repo]\nsource = {t}/src\n")
    return t, cfg


def err(res):
    """Whether a tools/call result is an error."""
    return res.get("isError") is True


class McpClient:
    """`cloister mcp ARGS...` started with its stdin and stdout as the pipe
    the client speaks on; cwd, env and stderr as subprocess.Popen takes them."""

    def __init__(self, cloister, *args, cwd=None, env=None, stderr=subprocess.DEVNULL,
                 deadline_s=DEADLINE_S):
        self.proc = subprocess.Popen([cloister, "mcp", *args], cwd=cwd, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=stderr)
        self.deadline_s = deadline_s
        self.next_id = 0
        self.gone = None  # why the server answers no more, once it does not
        self._buf = b""

    def send_raw(self, line):
        """One line as it is (bytes, no newline): framing the SDK never sends."""
        try:
            self.proc.stdin.write(line + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # the server is gone: recv says so, after the answers it did send

    def send(self, msg):
        self.send_raw(json.dumps(msg).encode())

    def call(self, method, params=None):
        """A request sent without waiting for its answer (pipelining); its id."""
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                   "params": params or {}})
        return self.next_id

    def recv(self):
        """The next message the server sends, or None once it has closed its
        output or sent nothing for deadline_s (the first time, a failed test
        that says which)."""
        if self.gone:
            return None
        end = time.monotonic() + self.deadline_s
        while b"\n" not in self._buf:
            left = end - time.monotonic()
            r, _, _ = select.select([self.proc.stdout], [], [], max(left, 0))
            if not r:
                self._lost(f"cloister mcp sent no whole message in {self.deadline_s} s")
                return None
            chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
            if not chunk:
                code = self.proc.poll()
                self._lost("cloister mcp closed its output" +
                           (f" (exit status {code})" if code is not None else ""))
                return None
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def answer(self, want):
        """The answer to request id want; notifications and other ids are passed over."""
        while True:
            m = self.recv()
            if m is None or m.get("id") == want:
                return m

    def request(self, method, params=None):
        return self.answer(self.call(method, params))

    def initialize(self, client_name):
        """The handshake: initialize's answer (None if there was none), and the
        initialized notification after it."""
        m = self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                        "clientInfo": {"name": client_name, "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return m

    def tool(self, tool_name, /, **args):
        """A tools/call's result; an error result, holding what came instead,
        if the answer was a JSON-RPC error or never came."""
        m = self.request("tools/call", {"name": tool_name, "arguments": args})
        if m is not None and m.get("result"):
            return m["result"]
        why = json.dumps(m) if m is not None else f"no answer: {self.gone}"
        return {"isError": True, "content": [{"type": "text", "text": why}]}

    def close(self):
        """End the input, wait (bounded) for the server to exit, kill it if it
        does not; its exit status."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(timeout=self.deadline_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()
        finally:
            self.proc.stdout.close()

    def _lost(self, why):
        if not self.gone:
            self.gone = why
            ok(False, "the_mcp_server_answers", why)
