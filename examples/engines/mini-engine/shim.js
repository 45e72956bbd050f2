// The shim: maps the w6w context protocol (docs/context-protocol.md) to the RFC's
// WorkflowContext for engine.js. Lockstep: after each suite message, let every promise
// settle (setImmediate runs after the microtask queue drains), then say `idle` with the
// calls still waiting — or `done` when the engine returned.
'use strict';
const readline = require('readline');
const { Engine } = require('./engine');

const write = (m) => process.stdout.write(`${JSON.stringify(m)}\n`);
const pending = new Map(); // call id -> {resolve}
let nextId = 0;
let session = null;
const clock = { now: 0 };
const signal = { aborted: false };

function call(member, args) {
  const id = ++nextId;
  write({ type: 'call', id, member, args });
  return new Promise((resolve) => pending.set(id, { resolve }));
}

// SEC-1: what the engine writes is scrubbed by value before it leaves — every secret of the
// session, as text or number, in every data value (never a structural field such as a
// status or an id). Checkpoints get a scrubbed copy: the engine keeps its live values.
const STRUCTURAL = new Set(['runId', 'workflowId', 'status', 'stepId', 'attempt', 'phase', 'code',
  'retryable', 'startedAt', 'finishedAt', 'resetSteps', 'clear', 'runAttempt']);
function scrubber(secrets) {
  const needles = [];
  const collect = (v) => {
    if (typeof v === 'string' && v) needles.push(v);
    else if (typeof v === 'number') needles.push(String(v));
    else if (v && typeof v === 'object') Object.values(v).forEach(collect);
  };
  collect(secrets);
  needles.sort((a, b) => b.length - a.length);
  const text = (t) => needles.reduce((s, n) => s.split(n).join('[redacted]'), t);
  const scrub = (v) => {
    if (typeof v === 'string') return text(v);
    if (typeof v === 'number') return needles.includes(String(v)) ? '[redacted]' : v;
    if (Array.isArray(v)) return v.map(scrub);
    if (v && typeof v === 'object') {
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, STRUCTURAL.has(k) ? x : scrub(x)]));
    }
    return v;
  };
  return needles.length ? scrub : (v) => v;
}

function context(start) {
  const host = start.host || {};
  const idempotent = new Set(host.idempotentSteps || []);
  const scrub = scrubber(host.secrets || {});
  return {
    run: start.run,
    secrets: host.secrets || {},
    catalog: { idempotent: (stepId) => idempotent.has(stepId) },
    async invoke(req) {
      const { onExecuted, ...args } = req;
      const answer = await call('invoke', args);
      for (const m of answer.onExecuted || []) if (onExecuted) onExecuted(m);
      if (answer.error) throw Object.assign(new Error(answer.error.message), answer.error);
      return answer.ok;
    },
    log(level, message, data) { write(data === undefined ? { type: 'log', level, message: scrub(message) } : { type: 'log', level, message: scrub(message), data: scrub(data) }); },
    state: {
      async checkpoint(patch) {
        const a = await call('state.checkpoint', { patch: scrub(patch) });
        if (a.error) throw Object.assign(new Error(a.error.message), a.error);
      },
      async load(runId) {
        const a = await call('state.load', { runId });
        if (a.error) throw Object.assign(new Error(a.error.message), a.error);
        return a.ok;
      },
    },
    async schedule(directive) { await call('schedule', { directive }); },
    queue: { enqueue: async (job) => (await call('queue.enqueue', { job })).ok },
    signal,
    // The test double's clock: the suite's virtual time, never the wall clock.
    now: () => clock.now,
    sleep: async (ms) => { await call('sleep', { ms }); },
    waitBeforeRetry: async (stepId, attempt, ms) => { await call('waitBeforeRetry', { stepId, attempt, ms }); },
  };
}

function startSession(msg) {
  pending.clear(); nextId = 0;
  const s = { finished: false };
  session = s;
  const ctx = context(msg);
  const finish = (body) => { s.finished = true; write({ type: 'done', ...body }); };
  let work;
  try {
    const engine = new Engine(msg.workflow);
    if (msg.type === 'run') work = engine.run({ runId: msg.run.id, ...msg.seed }, ctx);
    else if (msg.type === 'resume') work = engine.resume(msg.runId, ctx, msg.token);
    else work = engine.replay(msg.runId, msg.from, ctx);
  } catch (e) { work = Promise.reject(e); }
  work.then(() => finish({}), (e) => finish({ error: { code: e.code || 'engine_error', message: e.message, ...(e.variable ? { variable: e.variable } : {}) } }));
}

async function handle(line) {
  if (!line.trim()) return;
  const msg = JSON.parse(line);
  if (typeof msg.now === 'number') clock.now = msg.now;
  if (typeof msg.aborted === 'boolean') signal.aborted = msg.aborted;
  switch (msg.type) {
    case 'hello':
      write({ type: 'ready', protocol: 'w6w-context', version: 1, implementation: { name: 'mini-engine (JavaScript)', version: '0.1.0' }, capabilities: [] });
      return;
    case 'op':
      write({ type: 'opResult', id: msg.id, response: { error: { code: 'unsupported_op', message: 'mini-engine implements run, resume and replay only' } } });
      return;
    case 'run': case 'resume': case 'replay':
      startSession(msg); break;
    case 'answer': {
      const p = pending.get(msg.id);
      if (!p) throw new Error(`an answer to no outstanding call: ${line}`);
      pending.delete(msg.id);
      p.resolve(msg);
      break;
    }
    default: throw new Error(`unexpected message ${line}`);
  }
  await new Promise((r) => setImmediate(r)); // every microtask has run
  if (session && !session.finished) write({ type: 'idle', waiting: [...pending.keys()] });
}

const queue = []; let busy = false;
async function pump() {
  if (busy) return; busy = true;
  try { while (queue.length) await handle(queue.shift()); } catch (e) { process.stderr.write(`${e.stack}\n`); process.exit(2); }
  busy = false;
}
readline.createInterface({ input: process.stdin }).on('line', (l) => { queue.push(l); pump(); });
