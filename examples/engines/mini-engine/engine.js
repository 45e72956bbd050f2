// mini-engine: a small, dependency-free w6w engine (sequential core) written against the
// RFC's WorkflowContext, independently of the Rust reference. It implements RUN (plan
// order, checkpoints at every transition, resume from state.load), RETRY (classification,
// fixed / exponential backoff capped at 300 s on the context's clock), ERR (error edges,
// onError, skip propagation), REPLAY (reuse recorded outputs, `from`) and the `$` / `$expr`
// markers (a JSONLogic subset). It does NOT implement controls, strands, @w6w/call,
// templates, documents or meta normalisation — its conformance report says so.
'use strict';

const WAIT_MS_MAX = 300000;

function iso(ms) { return new Date(ms).toISOString(); }

// ---- plan: Kahn's algorithm, ties by declared index; no edges → declared order ----------
function plan(workflow) {
  const steps = workflow.steps || [];
  const index = new Map(steps.map((s, i) => [s.id, i]));
  const edges = (workflow.edges || []).map((e) => ({
    from: index.get(e.from), to: index.get(e.to), when: e.when === 'error' ? 'error' : 'success',
  }));
  const incoming = steps.map(() => []);
  const outgoing = steps.map(() => []);
  for (const e of edges) { outgoing[e.from].push(e); incoming[e.to].push(e); }
  if (edges.length === 0) {
    // Implicit chain: each step follows the previous one.
    for (let i = 1; i < steps.length; i++) {
      const e = { from: i - 1, to: i, when: 'success' };
      outgoing[i - 1].push(e); incoming[i].push(e);
    }
  }
  const indeg = incoming.map((l) => l.length);
  const ready = []; const order = [];
  indeg.forEach((d, i) => { if (d === 0) ready.push(i); });
  while (ready.length) {
    ready.sort((a, b) => a - b);
    const i = ready.shift(); order.push(i);
    for (const e of outgoing[i]) if (--indeg[e.to] === 0) ready.push(e.to);
  }
  return { steps, order, incoming, outgoing, implicit: edges.length === 0 };
}

// ---- expressions: `$` paths and a JSONLogic subset --------------------------------------
function lookup(root, path) {
  if (path === '' || path === null || path === undefined) return root;
  let v = root;
  for (const part of String(path).split('.')) {
    if (v === null || typeof v !== 'object' || !(part in v)) return null;
    v = v[part];
  }
  return v === undefined ? null : v;
}
const truthy = (v) => !(v === null || v === false || v === 0 || v === '' || Number.isNaN(v) ||
  (Array.isArray(v) && v.length === 0));
function logic(rule, data) {
  if (Array.isArray(rule)) return rule.map((r) => logic(r, data));
  if (rule === null || typeof rule !== 'object') return rule;
  const keys = Object.keys(rule);
  if (keys.length !== 1) return rule;
  const op = keys[0];
  let args = rule[op];
  if (!Array.isArray(args)) args = [args];
  const a = () => args.map((x) => logic(x, data));
  switch (op) {
    case 'var': { const [p, d] = a(); const v = lookup(data, p); return v === null && d !== undefined ? d : v; }
    case '==': { const [x, y] = a(); return x == y; } // eslint-disable-line eqeqeq
    case '!=': { const [x, y] = a(); return x != y; } // eslint-disable-line eqeqeq
    case '===': { const [x, y] = a(); return x === y; }
    case '!==': { const [x, y] = a(); return x !== y; }
    case '>': { const [x, y] = a(); return x > y; }
    case '>=': { const [x, y] = a(); return x >= y; }
    case '<': { const [x, y] = a(); return x < y; }
    case '<=': { const [x, y] = a(); return x <= y; }
    case '!': return !truthy(a()[0]);
    case '!!': return truthy(a()[0]);
    case 'and': { let v = true; for (const x of args) { v = logic(x, data); if (!truthy(v)) return v; } return v; }
    case 'or': { let v = false; for (const x of args) { v = logic(x, data); if (truthy(v)) return v; } return v; }
    case 'if': {
      for (let i = 0; i + 1 < args.length; i += 2) if (truthy(logic(args[i], data))) return logic(args[i + 1], data);
      return args.length % 2 ? logic(args[args.length - 1], data) : null;
    }
    case '+': return a().reduce((s, x) => s + Number(x), 0);
    case '*': return a().reduce((s, x) => s * Number(x), 1);
    case '-': { const v = a(); return v.length === 1 ? -v[0] : v[0] - v[1]; }
    case '/': { const [x, y] = a(); return x / y; }
    case '%': { const [x, y] = a(); return x % y; }
    case 'cat': return a().map((x) => (x === null ? '' : String(x))).join('');
    case 'in': { const [x, y] = a(); return y !== null && y !== undefined && y.indexOf(x) !== -1; }
    default: throw Object.assign(new Error(`unknown operator ${op}`), { code: 'unknown_operator' });
  }
}
function resolve(value, scope) {
  if (Array.isArray(value)) return value.map((v) => resolve(v, scope));
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value);
  if (keys.length === 1 && keys[0] === '$') return lookup(scope, value.$);
  if (keys.length === 1 && keys[0] === '$expr') return logic(value.$expr, scope);
  const out = {};
  for (const k of keys) out[k] = resolve(value[k], scope);
  return out;
}

// ---- the engine ----------------------------------------------------------------------------
class Engine {
  constructor(workflow) { this.workflow = workflow; this.plan = plan(workflow); }

  static error(code, message) { return Object.assign(new Error(message), { code }); }

  seedVariables(supplied) {
    const out = {};
    for (const v of this.workflow.variables || []) {
      if (supplied && Object.prototype.hasOwnProperty.call(supplied, v.key)) out[v.key] = supplied[v.key];
      else if ('default' in v) out[v.key] = v.default;
      else if (v.required) {
        throw Object.assign(Engine.error('invalid_variables', `variable ${v.key} is required`), { variable: v.key });
      }
    }
    return out;
  }

  async run(seed, ctx) {
    const variables = this.seedVariables(seed.variables);
    const state = { runId: seed.runId, workflowId: this.workflow.id, status: 'running', variables, steps: {}, stepErrors: [], trigger: seed.trigger };
    await ctx.state.checkpoint({ runId: seed.runId, workflowId: this.workflow.id, status: 'running', variables, trigger: seed.trigger, runAttempt: 1 });
    return this.walk(ctx, state);
  }

  async resume(runId, ctx) {
    const state = await ctx.state.load(runId);
    if (!state) throw Engine.error('run_not_found', `no run ${runId}`);
    if (['succeeded', 'failed', 'canceled'].includes(state.status)) return state;
    state.steps = state.steps || {}; state.stepErrors = state.stepErrors || [];
    return this.walk(ctx, state);
  }

  async replay(runId, from, ctx) {
    const original = await ctx.state.load(runId);
    if (!original) throw Engine.error('run_not_found', `no run ${runId}`);
    if (!['succeeded', 'failed', 'canceled'].includes(original.status)) {
      throw Engine.error('run_not_resumable', `run ${runId} is ${original.status}`);
    }
    const { steps, order, outgoing } = this.plan;
    const fresh = new Set();
    if (from !== null && from !== undefined) {
      const start = steps.findIndex((s) => s.id === from);
      if (start < 0) throw Engine.error('unknown_step', `replay from ${from}: no such step`);
      const stack = [start];
      while (stack.length) { const i = stack.pop(); if (!fresh.has(i)) { fresh.add(i); for (const e of outgoing[i]) stack.push(e.to); } }
    }
    const carried = {};
    for (const i of order) {
      const r = (original.steps || {})[steps[i].id];
      if (!r || fresh.has(i)) continue;
      if (from !== null && from !== undefined ? ['succeeded', 'failed', 'skipped'].includes(r.status) : r.status === 'succeeded') carried[r.stepId] = r;
    }
    const state = { ...original, status: 'running', steps: { ...carried }, stepErrors: [] };
    delete state.output; delete state.error;
    await ctx.state.checkpoint({ runId, workflowId: this.workflow.id, resetSteps: true, clear: ['output', 'error', 'stepErrors'], status: 'running', variables: original.variables, steps: carried, runAttempt: 1, rerouteError: null, replay: { from: from === undefined ? null : from, carried: Object.keys(carried) } });
    return this.walk(ctx, state);
  }

  async walk(ctx, state) {
    const { steps, order, incoming, outgoing } = this.plan;
    const skipped = new Set(); // "from>to>when"
    const key = (e) => `${e.from}>${e.to}>${e.when}`;
    const scope = { vars: state.variables || {}, steps: {}, trigger: state.trigger || { type: 'manual' }, secrets: ctx.secrets || {} };
    for (const i of order) {
      const step = steps[i];
      let record = state.steps[step.id];
      const isSkipped = incoming[i].length > 0 && incoming[i].every((e) => skipped.has(key(e)));
      // Routing wins over a carried record (REPLAY-2): a replay reuses a step only where
      // the new run reaches it; a step the new routing skips is recorded skipped.
      if (record && isSkipped && record.status !== 'skipped') record = undefined;
      if (!record || !['succeeded', 'failed', 'skipped'].includes(record.status)) {
        if (ctx.signal && ctx.signal.aborted) return this.finish(ctx, state, { status: 'canceled' });
        if (isSkipped) {
          record = { stepId: step.id, status: 'skipped', attempt: 0 };
          await this.commitStep(ctx, state, record);
        } else {
          record = await this.execute(ctx, state, step, scope, record && record.status === 'running' ? record : null);
          const errorEdge = outgoing[i].some((e) => e.when === 'error');
          const extra = {};
          if (record.status === 'failed' && !errorEdge && step.onError === 'continue-record') {
            extra.stepErrors = [{ stepId: step.id, ...record.error }];
          }
          await this.commitStep(ctx, state, record, extra);
        }
      }
      // settle: publish and route
      if (record.status === 'succeeded') {
        scope.steps[step.id] = record.meta ? { output: record.output, meta: record.meta } : { output: record.output };
        for (const e of outgoing[i]) if (e.when === 'error') skipped.add(key(e));
      } else if (record.status === 'failed') {
        const errorEdge = outgoing[i].some((e) => e.when === 'error');
        if (errorEdge) { for (const e of outgoing[i]) if (e.when === 'success') skipped.add(key(e)); }
        else if (!step.onError || step.onError === 'fail') {
          return this.finish(ctx, state, { status: 'failed', error: { stepId: step.id, ...record.error } });
        }
      } else if (record.status === 'skipped') {
        for (const e of outgoing[i]) skipped.add(key(e));
      }
    }
    let output = null;
    for (let k = order.length - 1; k >= 0; k--) {
      const r = state.steps[steps[order[k]].id];
      if (r && r.status === 'succeeded') { output = r.output === undefined ? null : r.output; break; }
    }
    return this.finish(ctx, state, { status: 'succeeded', output });
  }

  async commitStep(ctx, state, record, extra = {}) {
    await ctx.state.checkpoint({ runId: state.runId, steps: { [record.stepId]: record }, ...extra });
    state.steps[record.stepId] = record;
    if (extra.stepErrors) state.stepErrors.push(...extra.stepErrors);
  }

  async finish(ctx, state, patch) {
    await ctx.state.checkpoint({ runId: state.runId, ...patch });
    Object.assign(state, patch);
    ctx.log('info', `run ended ${patch.status}`);
    return state;
  }

  // `prior`: the step's running record when a crash interrupted it. A failed attempt is
  // durable before its backoff (`nextAttempt`, D-111): a resume waits what is left of the
  // backoff and runs the next attempt, never the failed one again.
  async execute(ctx, state, step, scope, prior) {
    const next = prior && prior.nextAttempt;
    const record = { stepId: step.id, status: 'running', attempt: next ? next.attempt : Math.max(1, prior ? prior.attempt : 1) };
    let params; let resolutionError = null;
    try { params = resolve(step.with || {}, scope); } catch (e) { resolutionError = e; }
    if (!resolutionError) record.input = params;
    if (next) await ctx.waitBeforeRetry(step.id, next.attempt, Math.max(0, Date.parse(next.at) - ctx.now()));
    record.startedAt = iso(ctx.now());
    await this.commitStep(ctx, state, record);
    const failed = (error) => ({ ...record, status: 'failed', error, finishedAt: iso(ctx.now()) });
    if (resolutionError) {
      return failed({ code: resolutionError.code || 'resolution_failed', message: resolutionError.message, phase: 'resolution', retryable: false });
    }
    const uses = step.uses || {};
    const retry = step.retry || {};
    const maxAttempts = Math.max(1, Math.floor(retry.maxAttempts || 1));
    const idempotent = ctx.catalog.idempotent(step.id, uses.app, uses.action);
    for (;;) {
      let meta = null;
      try {
        const output = await ctx.invoke({
          app: uses.app, action: uses.action, connection: uses.connection === undefined ? null : uses.connection,
          params, stepId: step.id, attempt: record.attempt,
          onExecuted: (m) => { if (meta === null) meta = m; },
        });
        const done = { ...record, status: 'succeeded', output, finishedAt: iso(ctx.now()) };
        return done;
      } catch (err) {
        const error = { code: err.code, message: err.message, phase: err.phase, retryable: false };
        error.retryable = error.phase === 'execute' && (idempotent || err.retryable === true);
        if (!error.retryable || record.attempt >= maxAttempts) return failed(error);
        const next = record.attempt + 1;
        const base = Number(retry.delayMs || 0);
        const raw = retry.backoff === 'exponential' ? base * 2 ** (next - 2) : base;
        const wait = raw > 0 ? Math.ceil(Math.min(raw, WAIT_MS_MAX)) : 0;
        await this.commitStep(ctx, state, { ...record, nextAttempt: { attempt: next, at: iso(ctx.now() + wait) } });
        await ctx.waitBeforeRetry(step.id, next, wait);
        record.attempt = next;
        record.startedAt = iso(ctx.now());
        await this.commitStep(ctx, state, { ...record });
      }
    }
  }
}

module.exports = { Engine, plan, resolve, logic };
