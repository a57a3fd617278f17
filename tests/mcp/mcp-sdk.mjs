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

// Every structuredContent is checked against its tool's outputSchema, made
// strict: an object that lists its properties may hold no other (a key
// the schema does not declare is a key a client can't know of).
const strict = (schema) => {
  if (Array.isArray(schema)) return schema.map(strict);
  if (schema === null || typeof schema !== 'object') return schema;
  const out = {};
  for (const [k, v] of Object.entries(schema))
    out[k] = k === 'properties' ? Object.fromEntries(Object.entries(v).map(([p, x]) => [p, strict(x)])) : strict(v);
  if (out.properties && out.additionalProperties === undefined) out.additionalProperties = false;
  return out;
};
const outChecks = new Map(); // tool -> {calls, bad: [why]}
let outValidators;
const checkOut = (name, r) => {
  if (!outValidators || r?.isError || r?.structuredContent === undefined) return;
  const v = outValidators.get(name);
  const seen = outChecks.get(name) ?? { calls: 0, bad: [] };
  seen.calls++;
  if (!v(r.structuredContent)) seen.bad.push({ errors: v.errors, got: r.structuredContent });
  outChecks.set(name, seen);
};
const call = async (name, args, opts) => {
  const r = await client.callTool({ name, arguments: { workspace: env.WS, ...args } }, CallToolResultSchema, opts);
  checkOut(name, r);
  return r;
};

// --- the handshake and the tools ---------------------------------------------------
ok(client.getServerVersion()?.name === 'cloister', 'server_says_it_is_cloister', client.getServerVersion());
ok(client.getServerCapabilities()?.tools !== undefined, 'server_offers_tools');
ok(/Workspaces served: 'ws'/.test(client.getInstructions() ?? ''), 'instructions_name_the_workspace',
   client.getInstructions());

const { tools } = await client.listTools();
const want = ['workspace_list', 'run_command', 'run_output', 'run_kill', 'file_read', 'file_write',
              'file_edit', 'file_list', 'file_delete', 'diff', 'export', 'checkpoint', 'restore',
              'fork'];
ok(JSON.stringify(tools.map((t) => t.name).sort()) === JSON.stringify([...want].sort()),
   'tools_list_has_exactly_the_documented_tools', tools.map((t) => t.name));
const ajv = new Ajv({ strict: false });
outValidators = new Map(tools.map((t) => [t.name, new Ajv({ strict: false, allowUnionTypes: true }).compile(strict(t.outputSchema))]));
for (const t of tools) {
  const undescribed = Object.entries(t.inputSchema.properties ?? {})
    .filter(([, p]) => typeof p.description !== 'string' || p.description.length < 8).map(([k]) => k);
  ok(undescribed.length === 0, `every_input_property_of_${t.name}_has_a_description`, undescribed);
}
// The docs say how many tools there are, and name each: checked, so they can't drift.
{
  const words = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten',
                 'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen',
                 'eighteen', 'nineteen', 'twenty'];
  const mcpMd = readFileSync(`${env.DOCS}/mcp.md`, 'utf8').replace(/\s+/g, ' ');
  const said = /through (\w+) tools/.exec(mcpMd)?.[1];
  ok(said === words[tools.length], 'docs_mcp_md_gives_the_number_of_tools', { said, tools: tools.length });
  const rows = [...mcpMd.matchAll(/\| `(\w+)` \|/g)].map((m) => m[1]);
  ok(JSON.stringify([...rows].sort()) === JSON.stringify(tools.map((t) => t.name).sort()),
     'docs_mcp_md_has_a_row_for_each_tool_and_no_other', rows);
  const man = readFileSync(`${env.DOCS}/cloister-mcp.md`, 'utf8').replace(/\s+/g, ' ');
  const listed = /The tools are (.*?)\./.exec(man)?.[1] ?? '';
  const names = [...listed.matchAll(/`(\w+)`/g)].map((m) => m[1]);
  ok(JSON.stringify([...names].sort()) === JSON.stringify(tools.map((t) => t.name).sort()),
     'the_man_page_names_each_tool', names);
}
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
ok(r.isError === true && text(r).includes(`'${env.WS}'`), 'a_workspace_not_served_does_not_exist_and_the_error_names_the_served_ones', r);

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

// --- issue 46's smaller faults -----------------------------------------------------
// A first line longer than a read: a real chunk of it, and a continuation that moves on.
await call('file_write', { path: 'long.txt', content: `${'é'.repeat(150000)}\nsecond\n` });
r = await call('file_read', { path: 'long.txt' });
const sc = r.structuredContent ?? {};
ok(!r.isError && sc.content.length > 100000 && /^é+$/.test(sc.content) && sc.lines === 1 &&
   sc.truncated === true && sc.line_cut?.line === 1 &&
   Buffer.byteLength(sc.content) + sc.line_cut.bytes_left_out === 300001 &&
   sc.line_cut.at_byte === Buffer.byteLength(sc.content) && /offset 1/.test(text(r)),
   'file_read_of_a_first_line_over_256k_returns_a_chunk_of_it', { ...sc, content: `${sc.content?.length} chars` });
r = await call('file_read', { path: 'long.txt', offset: sc.first_line - 1 + sc.lines });
ok(!r.isError && r.structuredContent.content === 'second\n', 'file_read_goes_on_after_a_cut_line', r);
await call('file_delete', { path: 'long.txt' });
// "src/../x" is the same file for every file tool.
r = await call('file_write', { path: 'src/../dotdot.txt', content: 'up and down\n' });
ok(!r.isError && r.structuredContent.created === true, 'file_write_takes_a_path_through_dotdot_inside', r);
r = await call('file_read', { path: 'dotdot.txt' });
ok(!r.isError && r.structuredContent.content === 'up and down\n', 'file_write_through_dotdot_wrote_the_repos_file', r);
r = await call('file_write', { path: 'src/new-dir/../../dotdot2.txt', content: 'x' });
ok(!r.isError, 'file_write_makes_a_folder_and_comes_back_out_of_it', r);
r = await call('file_edit', { path: 'src/../dotdot.txt', old_string: 'up', new_string: 'UP' });
ok(!r.isError, 'file_edit_takes_the_same_path', r);
r = await call('file_delete', { path: 'src/../dotdot.txt' });
ok(!r.isError, 'file_delete_takes_the_same_path', r);
await call('file_delete', { path: 'dotdot2.txt' });
r = await call('file_write', { path: 'src/../../x.txt', content: 'x' });
ok(r.isError && /leads out of the repository/.test(text(r)), 'file_write_out_of_the_repository_says_so', r);
// Binary content, as base64 both ways.
const bin = Buffer.from([...Array(1024).keys()].map((i) => (i * 37 + 11) & 255));
r = await call('file_write', { path: 'bin/blob2.bin', content: bin.toString('base64'), encoding: 'base64' });
ok(!r.isError && r.structuredContent.bytes === 1024, 'file_write_takes_base64_content', r);
r = await call('file_read', { path: 'bin/blob2.bin' });
ok(!r.isError && r.structuredContent.encoding === 'base64' &&
   Buffer.from(r.structuredContent.content, 'base64').equals(bin), 'file_write_of_base64_writes_the_bytes', r);
r = await call('file_write', { path: 'bin/bad.bin', content: 'not base64!', encoding: 'base64' });
ok(r.isError && /not base64/.test(text(r)), 'file_write_refuses_content_that_is_not_base64', r);
r = await call('file_write', { path: 'bin/bad.bin', content: 'QUJD\u0000REVG', encoding: 'base64' });
ok(r.isError && /not base64/.test(text(r)), 'file_write_refuses_base64_cut_by_a_nul', r);
r = await call('file_write', { path: 'bin/wrapped.bin', content: 'QUJD\nREVG\n', encoding: 'base64' });
ok(!r.isError && r.structuredContent.bytes === 6, 'file_write_takes_wrapped_base64', r);
await call('file_delete', { path: 'bin/wrapped.bin' });
await call('file_delete', { path: 'bin/blob2.bin' });
await call('file_delete', { path: 'bin' });
// Outside the view: the error says what the file tools see.
for (const p of ['/etc/passwd', '/usr/bin', 'meta-nothing']) {
  r = await call(p === '/usr/bin' ? 'file_list' : 'file_read', { path: p });
  const t = text(r);
  ok(r.isError && (p === 'meta-nothing' ? /no such file/.test(t) && !/sees?/.test(t)
                                       : /the file tools see the repository \(\/workspace/.test(t) &&
                                         t.includes('/home/agent') && t.includes('/opt/licenses')),
     `a_path_outside_the_view_says_what_is_seen: ${p}`, r);
}
// openat2's EAGAIN (a rename anywhere on the host raced a "..") is retried.
{
  const spin = spawn('python3', ['-c', `
import os, sys, tempfile
d = tempfile.mkdtemp(prefix='${env.MARK}-rename.')
a, b = os.path.join(d, 'a'), os.path.join(d, 'b')
open(a, 'w').close()
print(d, flush=True)
while True:
    os.rename(a, b); os.rename(b, a)
`], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((resolve) => spin.stdout.once('data', resolve));
  let failures = [];
  for (let i = 0; i < 300; i++) {
    r = await call('file_read', { path: 'src/../a.txt' });
    if (r.isError || r.structuredContent.content !== 'hello\nworld\n') failures.push(text(r));
  }
  spin.kill('SIGKILL');
  ok(failures.length === 0, 'file_read_through_dotdot_survives_renames_on_the_host',
     `${failures.length} of 300 failed: ${failures.slice(0, 3).join(' | ')}`);
}

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
r = await client.callTool({ name: 'run_command', arguments: { workspace: env.WS, command: 'true', env: 'x' } });
ok(r.isError && /must be an object, not a string/.test(text(r)), 'an_error_says_an_object_not_a_object', r);
r = await client.callTool({ name: 'file_read', arguments: { workspace: env.WS, path: 'a.txt', offset: 'x' } });
ok(r.isError && /must be an integer/.test(text(r)), 'an_error_says_an_integer', r);
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

// --- checkpoint, restore, fork (issue 33's commands, as tools) -----------------------
r = await call('file_write', { path: 'attempt.txt', content: 'first\n' });
r = await call('checkpoint', { name: 'cp1' });
ok(!r.isError && r.structuredContent.name === 'cp1' && r.structuredContent.depth >= 1,
   'checkpoint_freezes_the_mounted_workspace', r);
r = await call('checkpoint', { name: 'cp1' });
ok(r.isError === true && /cp1/.test(text(r)), 'a_checkpoint_name_is_taken_once', r);
for (const bad of ['../x', '.hidden', 'a/b', '-rf', '']) {
  r = await call('checkpoint', { name: bad });
  ok(r.isError === true, `checkpoint_refuses_the_name: '${bad}'`, r);
}
r = await call('checkpoint', { list: true });
ok(!r.isError && r.structuredContent.checkpoints.some((c) => c.name === 'cp1'),
   'checkpoint_list_shows_it', r);
await call('file_write', { path: 'attempt.txt', content: 'second, a bad turn\n' });
await call('file_write', { path: 'junk.txt', content: 'junk\n' });
r = await call('restore', { checkpoint: 'cp1' });
ok(!r.isError && r.structuredContent.checkpoint === 'cp1', 'restore_goes_back_to_the_checkpoint', r);
r = await call('file_read', { path: 'attempt.txt' });
ok(!r.isError && r.structuredContent.content === 'first\n', 'after_restore_the_file_is_as_checkpointed', r);
r = await call('file_read', { path: 'junk.txt' });
ok(r.isError === true, 'after_restore_a_later_file_is_gone', r);
r = await call('restore', { checkpoint: 'no-such' });
ok(r.isError === true, 'restore_of_an_unknown_checkpoint_is_an_error', r);
// (the run is known to have started, and to hold the mount, once its file is there)
const bg = await call('run_command', { command: `echo > started.txt; sleep 1000 # ${env.MARK}-restore`,
                                       background: true });
while ((await call('file_read', { path: 'started.txt' })).isError) await sleep(100);
r = await call('restore', { checkpoint: 'cp1' });
ok(r.isError === true && /still mounted/.test(text(r)), 'restore_is_refused_while_a_command_runs', r);
await call('run_kill', { run_id: bg.structuredContent.run_id });
await untilGone(`${env.MARK}-restore`);
await call('file_delete', { path: 'started.txt' });
const cfgDir = env.CFG.slice(0, env.CFG.lastIndexOf('/'));
for (const bad of ['../evil.ini', '/tmp/evil.ini', 'evil', 'a/b.ini', '.ini', '.x.ini']) {
  r = await call('fork', { new_config: bad });
  ok(r.isError === true, `fork_refuses_the_config_name: '${bad}'`, r);
}
ok(!existsSync('/tmp/evil.ini') && !existsSync(`${cfgDir}/../evil.ini`), 'no_refused_fork_wrote_a_file');
r = await call('fork', { new_config: 'attempt-2.ini', from: 'cp1' });
ok(!r.isError && r.structuredContent.name === 'attempt-2' && r.structuredContent.parent === env.WS &&
   r.structuredContent.config === `${cfgDir}/attempt-2.ini` && existsSync(`${cfgDir}/attempt-2.ini`),
   'fork_writes_a_config_beside_the_served_one', r);
r = await call('fork', { new_config: 'attempt-2.ini' });
ok(r.isError === true && /exists/.test(text(r)), 'fork_never_overwrites_a_config', r);
r = await call('fork', { new_config: 'attempt-3.ini', name: env.WS });
ok(r.isError === true, 'a_fork_needs_a_name_of_its_own', r);
let forkOut = '';
try {
  forkOut = execFileSync(env.CLOISTER, ['run', `${cfgDir}/attempt-2.ini`, '--', 'cat', 'attempt.txt'],
                         { stdio: ['ignore', 'pipe', 'pipe'] }).toString();
} catch (e) {
  forkOut = String(e.stderr ?? e);
}
ok(forkOut === 'first\n', 'the_fork_runs_with_the_checkpointed_state', forkOut);
r = await call('workspace_list', {});
ok(!r.isError && r.structuredContent.workspaces.every((w) => w.name !== 'attempt-2'),
   'the_fork_is_not_served_by_this_server', r);
r = await call('checkpoint', { name: 'cp1', delete: true });
ok(!r.isError && r.structuredContent.deleted === 'cp1', 'checkpoint_delete_works', r);

// Every structuredContent seen, against its tool's outputSchema made strict.
r = await call('run_command', { command: 'echo h > ~/home-note.txt' });
r = await call('diff', {});
ok(!r.isError && r.structuredContent.home.some((h) => h.path.endsWith('home-note.txt')) &&
   typeof r.structuredContent.ignored === 'number', 'diff_reports_the_home_and_the_ignored_count', r);
await call('diff', { stat: true });
for (const t of tools) {
  const seen = outChecks.get(t.name) ?? { calls: 0, bad: [] };
  ok(seen.calls > 0 && seen.bad.length === 0, `structured_content_of_${t.name}_matches_its_output_schema`,
     seen.calls ? seen.bad.slice(0, 2) : 'never called with success');
}

await client.close();
try {
  execFileSync(env.CLOISTER, ['unmount', `${cfgDir}/attempt-2.ini`], { stdio: 'ignore' });
} catch {}

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
