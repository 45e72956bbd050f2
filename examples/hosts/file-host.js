// A file-backed w6w host for the context protocol's host seam (docs/context-protocol.md):
//   w6w-sim conformance --host 'node examples/hosts/file-host.js --dir /tmp/w6w-host'
// It owns durability: state.checkpoint folds the RunStatePatch into the stored RunState and
// writes it with temp file + fsync + rename (+ fsync of the directory) BEFORE it answers,
// so a SIGKILL at any instant leaves the last acknowledged state on disk (RUN-3).
// No dependencies; Node 20.
'use strict';
const fs = require('fs');
const path = require('path');
const readline = require('readline');

// The patch semantics (docs/context-protocol.md "Folding a checkpoint").
function fold(state, patch) {
  const s = state || { runId: patch.runId, workflowId: patch.workflowId || '', status: 'queued', variables: {}, steps: {} };
  if (patch.resetSteps) { s.steps = {}; delete s.output; delete s.error; }
  if (patch.workflowId !== undefined) s.workflowId = patch.workflowId;
  if (patch.status !== undefined) s.status = patch.status;
  if (patch.variables !== undefined) s.variables = patch.variables;
  for (const f of patch.clear || []) { if (f === 'stepErrors') s.stepErrors = []; else delete s[f]; }
  if ('output' in patch) s.output = patch.output;
  if (patch.error !== undefined) s.error = patch.error;
  for (const [id, rec] of Object.entries(patch.steps || {})) s.steps[id] = rec;
  if (patch.stepErrors && patch.stepErrors.length) s.stepErrors = [...(s.stepErrors || []), ...patch.stepErrors];
  const known = new Set(['runId', 'workflowId', 'resetSteps', 'status', 'variables', 'output', 'error', 'clear', 'steps', 'stepErrors']);
  for (const [k, v] of Object.entries(patch)) {
    if (known.has(k)) continue;
    if (v === null) delete s[k]; else s[k] = v;
  }
  return s;
}

const safe = (s) => /^[A-Za-z0-9_.-]{1,128}$/.test(s);

function fileOf(dir, namespace, runId) {
  if (!safe(namespace) || !safe(runId)) throw new Error('unsafe namespace or run id');
  return path.join(dir, namespace, `${runId}.json`);
}

function readState(file) {
  try { return JSON.parse(fs.readFileSync(file, 'utf8')); } catch (e) { if (e.code === 'ENOENT') return null; throw e; }
}

function writeDurably(file, state) {
  const dir = path.dirname(file);
  fs.mkdirSync(dir, { recursive: true });
  const tmp = `${file}.tmp`;
  const fd = fs.openSync(tmp, 'w');
  fs.writeSync(fd, JSON.stringify(state));
  fs.fsyncSync(fd);
  fs.closeSync(fd);
  fs.renameSync(tmp, file);
  const d = fs.openSync(dir, 'r'); fs.fsyncSync(d); fs.closeSync(d);
}

// `persist(file, state, answer)`: the durability policy. This host's: write, then answer.
// Schedules (CTRL-7: a `wait` resumes at a time) are kept per run in `<runId>.schedules.json`
// with the same policy unless `persistSchedules` / `loadSchedules` say otherwise.
function serve({ name, persist, load, persistSchedules = persist, loadSchedules = load }) {
  const args = process.argv.slice(2);
  const dir = args[args.indexOf('--dir') + 1];
  if (!args.includes('--dir') || !dir) { process.stderr.write('usage: --dir DIR\n'); process.exit(2); }
  const write = (m) => process.stdout.write(`${JSON.stringify(m)}\n`);
  const rl = readline.createInterface({ input: process.stdin });
  rl.on('line', (line) => {
    if (!line.trim()) return;
    const m = JSON.parse(line);
    if (m.type === 'hello') {
      write({ type: 'ready', protocol: 'w6w-context', version: 1, implementation: { name, version: '0.1.0' } });
      return;
    }
    const answer = (body) => write({ type: 'answer', id: m.id, ...body });
    try {
      const { namespace } = m.args;
      if (m.member === 'state.checkpoint') {
        const file = fileOf(dir, namespace, m.args.patch.runId);
        const state = fold(load(file), m.args.patch);
        persist(file, state, () => answer({ ok: null }));
      } else if (m.member === 'state.load') {
        answer({ ok: load(fileOf(dir, namespace, m.args.runId)) });
      } else if (m.member === 'schedule' || m.member === 'schedule.fired') {
        // Keep (or forget, once fired) a timer: durable before the answer, like a checkpoint.
        const { runId, resumeToken } = m.args;
        const file = fileOf(dir, namespace, `${runId}.schedules`);
        const kept = (loadSchedules(file) || []).filter((e) => e.resumeToken !== resumeToken);
        if (m.member === 'schedule') kept.push({ runId, resumeToken, fireAtMs: m.args.fireAtMs });
        persistSchedules(file, kept, () => answer({ ok: null }));
      } else if (m.member === 'schedule.pending') {
        answer({ ok: loadSchedules(fileOf(dir, namespace, `${m.args.runId}.schedules`)) || [] });
      } else {
        answer({ error: { code: 'unsupported_member', message: `no member ${m.member}` } });
      }
    } catch (e) {
      answer({ error: { code: 'store_error', message: e.message } });
    }
  });
  rl.on('close', () => process.exit(0));
}

module.exports = { fold, fileOf, readState, writeDurably, serve };

if (require.main === module) {
  serve({
    name: 'file-host (Node example)',
    load: readState,
    persist: (file, state, ack) => { writeDurably(file, state); ack(); },
  });
}
