// SPDX-License-Identifier: MIT
//
// mcp-sdk.mjs: `cloister mcp` driven end to end by the official MCP
// TypeScript SDK's client (pinned in tests/npm), over stdio, as an agent
// CLI would drive it. Prints TAP. Run by tests/mcp/mcp-sdk.sh, which makes
// the workspace and passes: CLOISTER (the binary), CFG (the config), REPO
// (its source repository), WS (its name), MARK (a name unique to this run,
// for the processes it looks for on the host), SDK (the SDK's folder).
//
// Nothing here depends on timing: a run that must be "still running" waits
// for a file that the test writes through the server after the fact, and
// waits for a process to die poll until it has (or the harness times out).
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, existsSync } from 'node:fs';

const env = process.env;
const { Client } = await import(`${env.SDK}/dist/esm/client/index.js`);
const { StdioClientTransport } = await import(`${env.SDK}/dist/esm/client/stdio.js`);
const { CallToolResultSchema } = await import(`${env.SDK}/dist/esm/types.js`);
const { Ajv } = await import(`${env.SDK}/../../ajv/dist/ajv.js`).then((m) => ({ Ajv: m.default ?? m.Ajv }));

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
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const text = (res) => (res.content ?? []).map((c) => c.text ?? '').join('');
const HOST_SECRET = 'root:x:0:0'; // a line of the host's /etc/passwd

// Host processes whose command line holds MARK (the sandbox's are visible from here).
const marked = (mark) => {
  try {
    return execFileSync('pgrep', ['-f', mark]).toString().trim().split('\n').filter(Boolean);
  } catch {
    return [];
  }
};
const untilGone = async (mark) => {
  while (marked(mark).length > 0) await sleep(100);
  return true;
};

const transport = new StdioClientTransport({
  command: env.CLOISTER,
  args: ['mcp', env.CFG],
  stderr: 'inherit',
});
const client = new Client({ name: 'cloister-tests', version: '1.0.0' });
await client.connect(transport);
const call = (name, args, opts) =>
  client.callTool({ name, arguments: { workspace: env.WS, ...args } }, CallToolResultSchema, opts);

// --- the handshake and the tools ---------------------------------------------------
ok(client.getServerVersion()?.name === 'cloister', 'server_says_it_is_cloister', client.getServerVersion());
ok(client.getServerCapabilities()?.tools !== undefined, 'server_offers_tools');
ok(/Workspaces served: 'ws'/.test(client.getInstructions() ?? ''), 'instructions_name_the_workspace',
   client.getInstructions());

const { tools } = await client.listTools();
const want = ['workspace_list', 'run_command', 'run_output', 'run_kill', 'file_read', 'file_write',
              'file_edit', 'file_list', 'file_delete', 'diff', 'export'];
ok(JSON.stringify(tools.map((t) => t.name).sort()) === JSON.stringify([...want].sort()),
   'tools_list_has_exactly_the_documented_tools', tools.map((t) => t.name));
const ajv = new Ajv({ strict: false });
for (const t of tools) {
  let good = true;
  let why;
  try {
    ajv.compile(t.inputSchema);
    ajv.compile(t.outputSchema);
  } catch (e) {
    good = false;
    why = e.message;
  }
  ok(good && t.inputSchema.type === 'object' && t.outputSchema.type === 'object' &&
     t.inputSchema.properties.workspace?.enum?.includes(env.WS) && typeof t.description === 'string',
     `schemas_of_${t.name}_compile_and_name_the_workspace`, why ?? t);
}

// --- workspace_list ----------------------------------------------------------------
let r = await call('workspace_list', {});
ok(!r.isError && r.structuredContent.workspaces.length === 1 &&
   r.structuredContent.workspaces[0].name === env.WS && r.structuredContent.workspaces[0].rev === 'HEAD',
   'workspace_list_lists_the_served_workspace', r);
r = await client.callTool({ name: 'file_read', arguments: { workspace: 'other', path: 'README' } });
ok(r.isError === true, 'a_workspace_not_served_does_not_exist', r);

// --- the file tools ----------------------------------------------------------------
r = await call('file_write', { path: 'src/new.c', content: 'int answer(void) { return 41; }\n' });
ok(!r.isError && r.structuredContent.created === true && r.structuredContent.bytes === 32,
   'file_write_creates_a_file_and_its_folder', r);
r = await call('file_edit', { path: 'src/new.c', old_string: 'return 41', new_string: 'return 42' });
ok(!r.isError && r.structuredContent.replacements === 1, 'file_edit_replaces_a_unique_string', r);
r = await call('file_edit', { path: 'src/new.c', old_string: 'no such text', new_string: 'x' });
ok(r.isError && /not found/.test(text(r)), 'file_edit_of_a_missing_string_is_an_error', r);
await call('file_write', { path: 'twice.txt', content: 'a\na\n' });
r = await call('file_edit', { path: 'twice.txt', old_string: 'a', new_string: 'b' });
ok(r.isError && /2 times/.test(text(r)), 'file_edit_of_an_ambiguous_string_is_an_error', r);
r = await call('file_edit', { path: 'twice.txt', old_string: 'a', new_string: 'b', replace_all: true });
ok(!r.isError && r.structuredContent.replacements === 2, 'file_edit_replace_all_replaces_each', r);
r = await call('file_read', { path: '/workspace/src/new.c' });
ok(!r.isError && r.structuredContent.content === 'int answer(void) { return 42; }\n' &&
   r.structuredContent.encoding === 'utf-8', 'file_read_reads_back_the_edit_by_absolute_path', r);
r = await call('file_read', { path: 'lines.txt', offset: 1, limit: 2, numbered: true });
ok(!r.isError && r.structuredContent.content === '     2\ttwo\n     3\tthree\n' &&
   r.structuredContent.truncated === true, 'file_read_offset_limit_numbered', r);
r = await call('file_read', { path: 'blob.bin' });
ok(!r.isError && r.structuredContent.encoding === 'base64' &&
   Buffer.from(r.structuredContent.content, 'base64').equals(readFileSync(`${env.REPO}/blob.bin`)),
   'file_read_returns_binary_as_base64', r);
r = await call('file_read', { path: '/home/agent' });
ok(r.isError && /directory/.test(text(r)), 'file_read_of_a_directory_is_an_error', r);
r = await call('file_list', { path: 'src', recursive: true });
const names = r.structuredContent?.entries?.map((e) => `${e.type}:${e.path}`) ?? [];
ok(!r.isError && names.includes('file:new.c') && names.includes('file:main.c'),
   'file_list_lists_a_folder', r);
r = await call('file_list', { recursive: true, pattern: '*.c' });
ok(!r.isError && r.structuredContent.entries.every((e) => e.path.endsWith('.c')) &&
   r.structuredContent.entries.some((e) => e.path === 'src/new.c') &&
   !r.structuredContent.entries.some((e) => e.path.startsWith('.git/')),
   'file_list_recursive_with_a_pattern_skips_git', r);
r = await call('file_delete', { path: 'src' });
ok(r.isError && /not empty/.test(text(r)), 'file_delete_refuses_a_folder_that_is_not_empty', r);
r = await call('file_delete', { path: 'twice.txt' });
ok(!r.isError && r.structuredContent.deleted === 'file', 'file_delete_removes_a_file', r);
r = await call('file_read', { path: 'twice.txt' });
ok(r.isError, 'a_deleted_file_is_gone', r);
r = await call('file_write', { path: '/home/agent/.bashrc', content: 'x' });
ok(r.isError && /read-only/.test(text(r)), 'file_write_leaves_the_home_alone', r);
r = await call('file_write', { path: '/opt/licenses/GPL', content: 'x' });
ok(r.isError && /read-only/.test(text(r)), 'file_write_leaves_a_mirror_alone', r);
r = await call('file_read', { path: '/opt/licenses/GPL-3', limit: 1 });
ok(!r.isError && /GNU GENERAL PUBLIC LICENSE/.test(r.structuredContent.content),
   'file_read_reads_a_mirror', r);

// --- escapes: every path argument, every trick ----------------------------------------
r = await call('run_command', {
  command: 'ln -s /etc/passwd abs && ln -s ../../../../../../etc/passwd rel && ' +
           'ln -s /proc/self/root/etc/passwd magic && ln -s /.cloister/workspace meta && ' +
           'ln -s /tmp dirlink && ln -s / rootlink && echo linked',
});
ok(!r.isError && r.structuredContent.exit_code === 0, 'the_agent_makes_hostile_symlinks', r);
const escapes = [
  '../../../../etc/passwd', '/etc/passwd', '/proc/self/root/etc/passwd', '/proc/1/root/etc/passwd',
  'abs', 'rel', 'magic', 'meta', 'rootlink/etc/passwd', '/.cloister/workspace', `${env.REPO}/a.txt`,
  '/workspace/../../../etc/passwd', 'dirlink/../../etc/passwd',
];
for (const p of escapes) {
  r = await call('file_read', { path: p });
  ok(r.isError === true && !text(r).includes(HOST_SECRET) &&
     !JSON.stringify(r.structuredContent ?? {}).includes(HOST_SECRET),
     `file_read_stays_inside: ${p}`, r);
}
for (const p of ['/', '..', '../..', '/proc/self/root', 'rootlink', '/.cloister', 'dirlink']) {
  r = await call('file_list', { path: p });
  const listed = JSON.stringify(r.structuredContent ?? {});
  ok(!listed.includes('"shadow"') && !listed.includes('"changes"') && !listed.includes('"passwd"'),
     `file_list_stays_inside: ${p}`, r);
}
const hostTarget = `/tmp/${env.MARK}-escape`;
for (const p of ['dirlink/x', `dirlink/${env.MARK}-escape`, '../escape', '/tmp/x', '/etc/cloister-x',
                 'rootlink/tmp/x', 'abs', '/workspace/../x', `${env.REPO}/x`]) {
  r = await call('file_write', { path: p, content: 'pwned' });
  ok(r.isError === true, `file_write_refuses: ${p}`, r);
  r = await call('file_edit', { path: p, old_string: 'root', new_string: 'toor' });
  ok(r.isError === true, `file_edit_refuses: ${p}`, r);
}
ok(!existsSync(hostTarget) && !readFileSync('/etc/passwd', 'utf8').includes('toor:'),
   'nothing_was_written_on_the_host');
for (const p of ['abs', '..', '/', '/etc/passwd', 'dirlink/.', '/workspace', '']) {
  r = await call('file_delete', { path: p });
  ok(p === 'abs' ? !r.isError : r.isError === true,
     p === 'abs' ? 'file_delete_removes_a_symlink_not_its_target' : `file_delete_refuses: '${p}'`, r);
}
ok(existsSync('/etc/passwd'), 'the_hosts_file_is_still_there');
r = await client.callTool({ name: 'file_read', arguments: { workspace: env.WS, path: 'a.txt', bogus: 1 } });
ok(r.isError && /unknown argument 'bogus'/.test(text(r)), 'an_unknown_argument_is_a_tool_error', r);
r = await client.callTool({ name: 'file_read', arguments: { workspace: env.WS, path: 7 } });
ok(r.isError && /must be a string/.test(text(r)), 'a_wrongly_typed_argument_is_a_tool_error', r);
r = await client.callTool({ name: 'file_read', arguments: { workspace: env.WS, path: 'a\u0000b' } });
ok(r.isError === true, 'a_path_with_a_nul_is_refused', r);

// --- run_command -------------------------------------------------------------------
r = await call('run_command', { command: 'make test' });
ok(!r.isError && r.structuredContent.exit_code === 0 && /all tests passed/.test(r.structuredContent.stdout),
   'run_command_builds_and_tests_the_project', r);
r = await call('run_command', { command: 'pwd; id -u; echo $HOME; echo "$FOO"; cat', cwd: 'src',
                                env: { FOO: 'bar' }, stdin: 'from stdin' });
ok(!r.isError && r.structuredContent.stdout === '/workspace/src\n1000\n/home/agent\nbar\nfrom stdin',
   'run_command_cwd_env_stdin', r);
r = await call('run_command', { command: 'echo out; echo err >&2; exit 3' });
ok(!r.isError && r.structuredContent.exit_code === 3 && r.structuredContent.stdout === 'out\n' &&
   r.structuredContent.stderr === 'err\n' && /exit code 3/.test(text(r)),
   'run_command_reports_exit_code_and_both_streams', r);
for (const bad of ['PATH', 'LD_PRELOAD', 'HOME', 'CLOISTER_TOKEN', 'https_proxy', '1X']) {
  r = await call('run_command', { command: 'true', env: { [bad]: 'x' } });
  ok(r.isError === true, `run_command_refuses_env_${bad}`, r);
}
r = await call('run_command', { command: 'head -c 300000 /dev/zero | tr "\\0" a; echo; echo END' });
ok(!r.isError && r.structuredContent.truncated === true && r.structuredContent.stdout_bytes === 300005 &&
   r.structuredContent.stdout.endsWith('END\n') && r.structuredContent.stdout.length < 70000,
   'run_command_keeps_the_head_and_tail_of_long_output', r.structuredContent);
r = await call('run_command', { command: `cp /bin/sleep /tmp/${env.MARK}-t && /tmp/${env.MARK}-t 60`,
                                timeout_s: 1 });
ok(!r.isError && r.structuredContent.timed_out === true &&
   r.structuredContent.limits_hit.includes('timeout'), 'run_command_timeout_stops_it', r);
ok(await untilGone(`${env.MARK}-t`), 'a_timed_out_command_is_gone');
r = await call('run_command', { command: 'ls -A ~ | wc -l; cat ~/.ssh/id_rsa' });
ok(!r.isError && r.structuredContent.stdout === '0\n' && r.structuredContent.exit_code !== 0,
   'run_command_has_an_empty_home', r.structuredContent);

// Concurrency: a run waits for a file that only a later file_write makes.
const waiting = call('run_command', { command: 'while [ ! -e go ]; do sleep 0.05; done; echo released' });
r = await call('file_read', { path: 'a.txt' });
ok(!r.isError, 'file_read_answers_while_a_run_waits', r);
await call('file_write', { path: 'go', content: '' });
r = await waiting;
ok(!r.isError && r.structuredContent.stdout === 'released\n', 'the_waiting_run_then_ends', r);
await call('file_delete', { path: 'go' });

// Progress: the run ends only once the client has seen a progress notification.
let progressed = 0;
const slow = call('run_command', { command: 'while [ ! -e go2 ]; do sleep 0.05; done; echo done' },
                  { onprogress: async () => {
                      if (progressed++ === 0) await call('file_write', { path: 'go2', content: '' });
                    }, resetTimeoutOnProgress: true });
r = await slow;
ok(!r.isError && progressed >= 1 && r.structuredContent.stdout === 'done\n',
   'run_command_sends_progress_notifications', { progressed, r });
await call('file_delete', { path: 'go2' });

// Cancellation: an aborted request kills its command and the command's children.
const ac = new AbortController();
const cancelled = call('run_command', {
  command: `cp /bin/sleep /tmp/${env.MARK}-c && (/tmp/${env.MARK}-c 1000 & /tmp/${env.MARK}-c 1000 & wait)`,
}, { signal: ac.signal });
while (marked(`${env.MARK}-c 1000`).length < 2) await sleep(50);
ac.abort();
let rejected = false;
try {
  await cancelled;
} catch {
  rejected = true;
}
ok(rejected, 'a_cancelled_request_is_rejected_by_the_client');
ok(await untilGone(`${env.MARK}-c 1000`), 'cancellation_kills_the_command_and_its_children');

// Background: a run keeps going, its output is read, then it is stopped.
r = await call('run_command', {
  command: `cp /bin/sleep /tmp/${env.MARK}-b && echo started && while [ ! -e go3 ]; do /tmp/${env.MARK}-b 0.05; done; echo tick; /tmp/${env.MARK}-b 1000`,
  background: true,
});
const runId = r.structuredContent?.run_id;
ok(!r.isError && r.structuredContent.running === true && /^run-\d+$/.test(runId ?? ''),
   'a_background_run_returns_a_run_id', r);
await call('file_write', { path: 'go3', content: '' });
let seen = '';
while (!seen.includes('tick')) {
  r = await call('run_output', { run_id: runId });
  seen += r.structuredContent?.stdout ?? '';
  if (r.isError) break;
  await sleep(50);
}
ok(seen === 'started\ntick\n' && r.structuredContent.running === true, 'run_output_reads_new_output', { seen, r });
r = await call('run_kill', { run_id: runId });
ok(!r.isError && r.structuredContent.running === false && r.structuredContent.stopped === 'killed',
   'run_kill_stops_it', r);
ok(await untilGone(`${env.MARK}-b 1000`), 'run_kill_leaves_no_process');
r = await call('run_output', { run_id: runId });
ok(r.isError === true, 'a_killed_run_is_forgotten', r);
r = await call('run_output', { run_id: 'run-999' });
ok(r.isError === true, 'run_output_of_an_unknown_run_is_an_error', r);
await call('file_delete', { path: 'go3' });

// --- review -----------------------------------------------------------------------
r = await call('diff', {});
ok(!r.isError && /\+int answer\(void\) \{ return 42; \}/.test(r.structuredContent.patch) &&
   !/lines.txt/.test(r.structuredContent.patch), 'diff_is_the_patch_of_the_work', r);
r = await call('diff', { stat: true });
ok(!r.isError && r.structuredContent.files.some((f) => f.path === 'src/new.c' && f.status === 'added'),
   'diff_stat_lists_the_files', r);
r = await call('export', {});
const gitIn = (...a) => execFileSync('git', ['-C', env.REPO, ...a]).toString().trim();
ok(!r.isError && r.structuredContent.ref === `refs/cloister/${env.WS}` &&
   gitIn('rev-parse', `refs/cloister/${env.WS}`) === r.structuredContent.commit,
   'export_sets_the_ref_in_the_source', r);
ok(gitIn('show', `refs/cloister/${env.WS}:src/new.c`) === 'int answer(void) { return 42; }',
   'the_exported_commit_holds_the_work');
r = await call('export', { ref: `refs/cloister/${env.WS}+try-2` });
ok(!r.isError && gitIn('rev-parse', `refs/cloister/${env.WS}+try-2`).length === 40,
   'export_takes_a_labelled_ref_of_its_own', r);
for (const ref of ['refs/heads/main', 'refs/cloister/other', `refs/cloister/${env.WS}x`, 'HEAD',
                   `${env.WS}+../../heads/main`, `${env.WS}+a/b`]) {
  r = await call('export', { ref });
  ok(r.isError === true, `export_refuses_ref: ${ref}`, r);
}
ok(gitIn('status', '--porcelain') === '' && gitIn('rev-parse', '--abbrev-ref', 'HEAD') === 'main',
   'the_source_checkout_is_untouched');

await client.close();

// --- the protocol itself, raw --------------------------------------------------------
const raw = spawn(env.CLOISTER, ['mcp', '--request-max', '64K', env.CFG], { stdio: ['pipe', 'pipe', 'inherit'] });
let buf = '';
const waiters = [];
raw.stdout.on('data', (d) => {
  buf += d;
  let i;
  while ((i = buf.indexOf('\n')) >= 0) {
    const line = buf.slice(0, i);
    buf = buf.slice(i + 1);
    const w = waiters.shift();
    if (w) w(line);
  }
});
const send = (line) => new Promise((resolve) => { waiters.push(resolve); raw.stdin.write(line + '\n'); });
const err = async (line) => {
  try {
    return JSON.parse(await send(line));
  } catch (e) {
    return { notJson: e.message };
  }
};
let m = await err('{"jsonrpc":"2.0","id":1,"method":"tools/list"}');
ok(m.error?.code === -32600 && m.id === 1, 'requests_before_initialize_are_refused', m);
m = await err('{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"1999-01-01","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}');
ok(m.result?.protocolVersion === '2025-11-25', 'an_unknown_version_gets_the_latest', m);
m = await err('{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2024-11-05"}}');
ok(m.error?.code === -32600, 'a_second_initialize_is_refused', m);
m = await err('{not json');
ok(m.error?.code === -32700 && m.id === null, 'malformed_json_is_a_parse_error', m);
m = await err('{"jsonrpc":"2.0","id":3}');
ok(m.error?.code === -32600 && m.id === 3, 'a_request_without_a_method_is_invalid', m);
m = await err('{"jsonrpc":"1.0","id":4,"method":"ping"}');
ok(m.error?.code === -32600, 'a_wrong_jsonrpc_version_is_invalid', m);
m = await err('{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}');
ok(m.error?.code === -32600, 'an_object_id_is_invalid', m);
m = await err('[{"jsonrpc":"2.0","id":5,"method":"ping"}]');
ok(m.error?.code === -32600, 'a_batch_is_refused', m);
m = await err('"just a string"');
ok(m.error?.code === -32600, 'a_json_string_is_invalid', m);
m = await err('{"jsonrpc":"2.0","id":6,"method":"no/such/method"}');
ok(m.error?.code === -32601 && m.id === 6, 'an_unknown_method_is_not_found', m);
m = await err('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}');
ok(m.error?.code === -32602, 'an_unknown_tool_is_invalid_params', m);
m = await err('{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"arguments":{}}}');
ok(m.error?.code === -32602, 'tools_call_without_a_name_is_invalid_params', m);
m = await err('{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"file_read","arguments":[1]}}');
ok(m.error?.code === -32602, 'arguments_that_are_not_an_object_are_invalid_params', m);
m = await err('{"jsonrpc":"2.0","id":10,"method":"ping","a":1,"a":2}');
ok(m.error?.code === -32700, 'duplicate_keys_are_refused', m);
m = await err(`{"jsonrpc":"2.0","id":11,"method":"ping","params":{"pad":"${'x'.repeat(100000)}"}}`);
ok(m.error?.code === -32600 && /longer than/.test(m.error.message), 'an_overlong_message_is_dropped', m);
m = await err('{"jsonrpc":"2.0","id":12,"method":"ping"}');
ok(m.result !== undefined && m.id === 12, 'the_server_still_answers_after_all_that', m);
m = await err('{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"file_read","arguments":{"path":"a.txt"}}}');
ok(m.result?.structuredContent?.content === 'hello\nworld\n', 'a_raw_tool_call_works', m);
raw.stdin.end();
const code = await new Promise((resolve) => raw.on('exit', (c) => resolve(c)));
ok(code === 0, 'the_server_exits_0_when_stdin_ends', code);

console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
