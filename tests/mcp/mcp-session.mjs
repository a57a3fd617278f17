// SPDX-License-Identifier: MIT
//
// mcp-session.mjs: a recorded agent session over `cloister mcp`, through
// the official MCP TypeScript SDK client, as a model would drive it (run by
// tests/mcp/mcp-session.sh, which makes the project and passes CLOISTER,
// CFG, REPO, WS and SDK). Prints TAP. Every result is checked; each
// tool's latency is recorded and printed as comments at the end (the tail
// is reported, never asserted: the machine is shared and noisy).
//
// Nothing waits on time: a background run is polled with run_output (paced,
// 20 ms apart) until it says it has ended.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const env = process.env;
const { Client } = await import(`${env.SDK}/dist/esm/client/index.js`);
const { StdioClientTransport } = await import(`${env.SDK}/dist/esm/client/stdio.js`);
const { CallToolResultSchema } = await import(`${env.SDK}/dist/esm/types.js`);

let n = 0;
let failed = 0;
const ok = (cond, name, why) => {
  n++;
  if (cond) {
    console.log(`ok ${n} - ${name}`);
  } else {
    failed++;
    console.log(`not ok ${n} - ${name}`);
    if (why !== undefined)
      for (const line of String(typeof why === 'string' ? why : JSON.stringify(why)).slice(0, 2000).split('\n'))
        console.log(`# ${line}`);
  }
};
const text = (res) => (res.content ?? []).map((c) => c.text ?? '').join('');
const sc = (res) => res.structuredContent ?? {};
const gitIn = (...a) => execFileSync('git', ['-C', env.REPO, ...a]).toString();

// Latency of each tool, in ms, as the client sees it (a round trip).
const latency = new Map();
const connect = async (cfg) => {
  const client = new Client({ name: 'cloister-session', version: '1.0.0' });
  const transport = new StdioClientTransport({ command: env.CLOISTER, args: ['mcp', cfg], stderr: 'inherit' });
  await client.connect(transport);
  const call = async (name, args = {}) => {
    const t = process.hrtime.bigint();
    const r = await client.callTool({ name, arguments: args }, CallToolResultSchema, { timeout: 600000 });
    const ms = Number(process.hrtime.bigint() - t) / 1e6;
    if (!latency.has(name)) latency.set(name, []);
    latency.get(name).push(ms);
    return r;
  };
  // Stop the server as a stdio client does (stdin ends), and wait for its end
  // however long its unmount takes: the SDK's close() would kill it after 2 s.
  const close = async () => {
    const proc = transport._process;
    if (proc && proc.exitCode === null && proc.signalCode === null) {
      const gone = new Promise((resolve) => proc.once('close', resolve));
      proc.stdin.end();
      await gone;
    }
    await client.close();
  };
  return { client, call, close };
};
// A background run, polled until its end has been read: its whole output and end.
const finish = async (call, runId) => {
  let out = '';
  for (;;) {
    const r = await call('run_output', { run_id: runId });
    if (r.isError) return { error: text(r) };
    out += sc(r).stdout;
    if (!sc(r).running) return { ...sc(r), stdout: out };
    await new Promise((resolve) => setTimeout(resolve, 20)); // pacing, not a deadline
  }
};

// --- 1. run_command alone: the home and the build outputs last (issue 46) ---------------
{
  const { call, close } = await connect(env.CFG);
  let r = await call('run_command', { command: 'echo F1 > ~/f1.txt && mkdir -p ~/.cache/tool && echo c > ~/.cache/tool/c' });
  ok(!r.isError && sc(r).exit_code === 0, 'only_run_command: a command writes to the home', r);
  r = await call('run_command', { command: 'cat ~/f1.txt ~/.cache/tool/c' });
  ok(!r.isError && sc(r).exit_code === 0 && sc(r).stdout === 'F1\nc\n',
     'only_run_command: the next command finds the home as it was left', r);
  r = await call('run_command', { command: 'make calc && ls calc' });
  ok(!r.isError && sc(r).exit_code === 0, 'only_run_command: a build', r);
  r = await call('run_command', { command: 'test -x calc && make -q calc && echo up-to-date' });
  ok(!r.isError && sc(r).stdout === 'up-to-date\n', 'only_run_command: its outputs are there for the next command', r);
  r = await call('workspace_list');
  ok(!r.isError && sc(r).workspaces[0].mounted === true,
     'only_run_command: the workspace stays mounted between commands', r);
  // /tmp is as in `cloister run`: each run's own.
  r = await call('run_command', { command: 'echo t > /tmp/t.txt' });
  r = await call('run_command', { command: 'test -e /tmp/t.txt && echo kept || echo fresh' });
  let viaRun = '';
  try {
    execFileSync(env.CLOISTER, ['run', env.CFG, '--', 'sh', '-c', 'echo t > /tmp/t.txt'], { stdio: 'ignore' });
    viaRun = execFileSync(env.CLOISTER, ['run', env.CFG, '--', 'sh', '-c', 'test -e /tmp/t.txt && echo kept || echo fresh'],
                          { stdio: ['ignore', 'pipe', 'ignore'] }).toString();
  } catch (e) {
    viaRun = String(e);
  }
  ok(!r.isError && sc(r).stdout === viaRun, 'only_run_command: /tmp is as in cloister run', { mcp: sc(r).stdout, run: viaRun });
  r = await call('run_command', { command: 'cat ~/f1.txt', background: true });
  const end = await finish(call, sc(r).run_id);
  ok(end.exit_code === 0 && end.stdout === 'F1\n', 'only_run_command: a background run sees the same home', end);
  await close();
}

// --- 2. a whole session, as a model would drive it -------------------------------------
const { call, close } = await connect(env.CFG);
let r = await call('workspace_list');
ok(!r.isError && sc(r).workspaces.length === 1 && sc(r).workspaces[0].name === env.WS, 'session: workspace_list', r);
r = await call('run_command', { command: 'cat ~/f1.txt' });
ok(!r.isError && sc(r).exit_code === 1 && /No such file/.test(sc(r).stderr),
   'session: a new server starts from a fresh home (the last one unmounted at its end)', r);
r = await call('file_list', { recursive: true });
const listed = (sc(r).entries ?? []).map((e) => e.path);
ok(!r.isError && ['Makefile', 'src/calc.c', 'src/main.c', 'tests/run.sh'].every((p) => listed.includes(p)),
   'session: file_list shows the project', listed);
r = await call('file_read', { path: 'Makefile' });
ok(!r.isError && /^test: calc/m.test(sc(r).content), 'session: file_read of the Makefile', r);
// The tests first: they fail.
r = await call('run_command', { command: 'make test' });
ok(!r.isError && sc(r).exit_code !== 0 && /FAIL \+ 1 2: -1, not 3/.test(sc(r).stdout), 'session: the tests fail at first', r);
r = await call('file_read', { path: 'src/calc.c', numbered: true });
ok(!r.isError && /return a - b;/.test(sc(r).content) && /^ +5\t/m.test(sc(r).content), 'session: file_read of the source', r);
r = await call('file_edit', { path: 'src/calc.c', old_string: 'return a - b;', new_string: 'return a + b;' });
ok(!r.isError && sc(r).replacements === 1, 'session: file_edit fixes the bug', r);
// Build in the foreground, test in the background, with a second background run beside it.
r = await call('run_command', { command: 'make calc' });
ok(!r.isError && sc(r).exit_code === 0, 'session: the build', r);
const t1 = await call('run_command', { command: 'make test', background: true });
const t2 = await call('run_command', { command: 'for i in 1 2 3; do ./calc + $i $i; done', background: true });
ok(!t1.isError && !t2.isError && sc(t1).running === true && sc(t2).running === true && sc(t1).run_id !== sc(t2).run_id,
   'session: two runs in the background', [t1, t2]);
const e1 = await finish(call, sc(t1).run_id);
const e2 = await finish(call, sc(t2).run_id);
ok(e1.exit_code === 0 && /ok \+ 1 2/.test(e1.stdout) && !/FAIL/.test(e1.stdout), 'session: the tests pass now', e1);
ok(e2.exit_code === 0 && e2.stdout === '2\n4\n6\n', 'session: the other background run', e2);
// A new test case, written as a file; the suite again.
r = await call('file_write', { path: 'tests/cases.txt', content: '+ 1 2 3\n+ 10 5 15\nx 3 4 12\n+ -2 2 0\n' });
ok(!r.isError && sc(r).created === false, 'session: file_write of a test case', r);
r = await call('run_command', { command: 'make test', cwd: '.' });
ok(!r.isError && sc(r).exit_code === 0 && /ok \+ -2 2/.test(sc(r).stdout), 'session: the tests pass with the new case', r);
r = await call('checkpoint', { name: 'green' });
ok(!r.isError && sc(r).name === 'green', 'session: checkpoint', r);
// The fork: a second attempt from the checkpoint (multiplication by repeated addition).
r = await call('fork', { new_config: 'try-b.ini', from: 'green' });
ok(!r.isError && sc(r).name === 'try-b' && sc(r).checkpoint === 'green' && existsSync(sc(r).config), 'session: fork', r);
const forkCfg = sc(r).config;
// Meanwhile the parent goes on: a comment in main.c.
r = await call('file_edit', { path: 'src/main.c', old_string: 'int main(', new_string: '/* calc OP A B */\nint main(' });
ok(!r.isError, 'session: the parent edits on after the fork', r);
{
  const fork = await connect(forkCfg);
  let f = await fork.call('file_read', { path: 'src/calc.c' });
  ok(!f.isError && /return a \+ b;/.test(sc(f).content), 'session: the fork has the checkpointed fix', f);
  f = await fork.call('file_read', { path: 'src/main.c' });
  ok(!f.isError && !/calc OP A B/.test(sc(f).content), 'session: the fork does not have the parent\'s later edit', f);
  f = await fork.call('file_edit', { path: 'src/calc.c', old_string: 'return a * b;',
                                     new_string: 'int r = 0;\n        for (int i = 0; i < b; i++)\n                r += a;\n        return r;' });
  ok(!f.isError, 'session: the fork edits', f);
  f = await fork.call('run_command', { command: 'make test' });
  ok(!f.isError && sc(f).exit_code === 0 && /ok x 3 4/.test(sc(f).stdout), 'session: the tests run in the fork', f);
  const fd = await fork.call('diff', {});
  const pd = await call('diff', {});
  ok(!fd.isError && !pd.isError, 'session: diff in both', [fd, pd]);
  const fp = sc(fd).patch ?? '', pp = sc(pd).patch ?? '';
  ok(/\+\s+r \+= a;/.test(fp) && !/r \+= a;/.test(pp), 'session: only the fork\'s patch has its change', { fp, pp });
  ok(/calc OP A B/.test(pp) && !/calc OP A B/.test(fp), 'session: only the parent\'s patch has its later edit', { fp, pp });
  ok(/\+\s+return a \+ b;/.test(fp) && /\+\s+return a \+ b;/.test(pp) && /\+\+ -2 2 0/.test(fp) && /\+\+ -2 2 0/.test(pp),
     'session: both patches hold the work before the checkpoint', { fp, pp });
  const fs = await fork.call('diff', { stat: true });
  ok(!fs.isError && sc(fs).files.some((x) => x.path === 'src/calc.c') && !sc(fs).files.some((x) => x.path === 'calc'),
     'session: diff stat in the fork (the build output is ignored)', fs);
  f = await fork.call('export', {});
  ok(!f.isError && sc(f).ref === 'refs/cloister/try-b', 'session: the fork exports its own ref', f);
  await fork.close();
}
r = await call('export', { ref: `refs/cloister/${env.WS}+session` });
ok(!r.isError && gitIn('rev-parse', `refs/cloister/${env.WS}+session`).trim() === sc(r).commit, 'session: export', r);
ok(/return a \+ b;/.test(gitIn('show', `refs/cloister/${env.WS}+session:src/calc.c`)) &&
   /calc OP A B/.test(gitIn('show', `refs/cloister/${env.WS}+session:src/main.c`)) &&
   /r \+= a;/.test(gitIn('show', 'refs/cloister/try-b:src/calc.c')),
   'session: each export holds its workspace\'s work');
ok(gitIn('status', '--porcelain') === '' && /return a - b;/.test(gitIn('show', 'HEAD:src/calc.c')),
   'session: the source checkout is untouched');
await close();

// The tail of each tool's latency: reported, not asserted.
const q = (xs, p) => xs[Math.min(xs.length - 1, Math.floor(p * xs.length))];
console.log('# latency per tool (ms, client round trip): calls, median, p90, max');
for (const [name, xs] of [...latency.entries()].sort()) {
  xs.sort((a, b) => a - b);
  console.log(`# ${name.padEnd(14)} ${String(xs.length).padStart(3)} ${q(xs, 0.5).toFixed(1).padStart(8)} ` +
              `${q(xs, 0.9).toFixed(1).padStart(8)} ${xs[xs.length - 1].toFixed(1).padStart(8)}`);
}
console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
