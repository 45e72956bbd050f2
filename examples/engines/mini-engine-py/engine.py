# mini-engine-py: a small w6w engine (sequential core) in Python, standard library only, a
# port of the JavaScript mini-engine (../mini-engine/engine.js) against the RFC's
# WorkflowContext. It implements RUN (plan order, a checkpoint at every transition, resume
# from state.load), RETRY (classification, fixed / exponential backoff capped at 300 s on
# the context's clock), ERR (error edges, onError, skip propagation), REPLAY (reuse recorded
# outputs, `from`), META (the host's onExecuted reports, normalised), the signal between
# steps and the `$` / `$expr` markers (a JSONLogic subset). It does NOT implement controls,
# strands, @w6w/call, templates or documents: its report says so. Every effect is an
# `await` on a context member, which shim.py answers one at a time.
import heapq
import json
import math
import operator
from datetime import datetime, timedelta, timezone

WAIT_MS_MAX = 300_000  # RETRY-4: a backoff is capped at 300 s
TERMINAL = ('succeeded', 'failed', 'canceled')
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class EngineError(Exception):  # a refusal or a failure with a w6w error code (ERR-1)
    def __init__(self, code, message, **extra):
        super().__init__(message)
        self.code, self.extra = code, extra


def iso(ms):  # the clock's spelling of a virtual instant (D-104: times come only from `now`)
    d = EPOCH + timedelta(milliseconds=ms)
    return f'{d:%Y-%m-%dT%H:%M:%S}.{d.microsecond // 1000:03d}Z'


def parse_iso(text):
    d = datetime.strptime(text, '%Y-%m-%dT%H:%M:%S.%fZ').replace(tzinfo=timezone.utc)
    return (d - EPOCH) // timedelta(milliseconds=1)


# ---- plan: Kahn's algorithm, ties by declared index; no edges → declared order (PLAN-*) ----
class Plan:
    def __init__(self, workflow):
        self.steps = workflow.get('steps') or []
        index = {s['id']: i for i, s in enumerate(self.steps)}
        edges = [(index[e['from']], index[e['to']], 'error' if e.get('when') == 'error' else 'success')
                 for e in workflow.get('edges') or []]
        if not edges:  # implicit chain: each step follows the previous one
            edges = [(i - 1, i, 'success') for i in range(1, len(self.steps))]
        self.incoming = [[e for e in edges if e[1] == i] for i in range(len(self.steps))]
        self.outgoing = [[e for e in edges if e[0] == i] for i in range(len(self.steps))]
        indeg = [len(l) for l in self.incoming]
        ready, self.order = [i for i, d in enumerate(indeg) if d == 0], []
        while ready:
            i = heapq.heappop(ready)
            self.order.append(i)
            for e in self.outgoing[i]:
                indeg[e[1]] -= 1
                if indeg[e[1]] == 0:
                    heapq.heappush(ready, e[1])


# ---- expressions: `$` paths and a JSONLogic subset (EXPR-*) with JavaScript's coercions ----
def lookup(root, path):
    v = root
    for part in [] if path in ('', None) else str(path).split('.'):
        if isinstance(v, dict) and part in v:
            v = v[part]
        elif isinstance(v, list) and part.isdigit() and int(part) < len(v):
            v = v[int(part)]
        else:
            return None
    return v


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def truthy(v):  # JSONLogic: null, false, 0, NaN, "" and [] are false; {} is true
    return v == {} or (bool(v) and v == v)


def number(v):  # JavaScript's Number(), what arithmetic and mixed comparisons see
    try:
        return +(v or 0) if v is None or isinstance(v, (bool, int, float)) else float(v.strip() or 0)
    except (AttributeError, ValueError):
        return math.nan


def plain(v):  # what JSON.stringify writes: 3 for 3.0, null for NaN and Infinity
    if isinstance(v, float):
        return None if not math.isfinite(v) else int(v) if v.is_integer() and abs(v) < 2 ** 53 else v
    if isinstance(v, list):
        return [plain(x) for x in v]
    return {k: plain(x) for k, x in v.items()} if isinstance(v, dict) else v


def text(v):  # JavaScript's String(), for `cat` and `in`
    return '' if v is None else json.dumps(v) if isinstance(v, bool) else str(plain(v))


def loose_eq(x, y):  # ==: null only equals null, objects by identity, the rest as numbers
    if x is None or y is None or type(x) is type(y) is str:
        return x == y
    return x is y if isinstance(x, (dict, list)) or isinstance(y, (dict, list)) else number(x) == number(y)


def strict_eq(x, y):  # ===: no coercion, and true is not 1
    if is_num(x) and is_num(y):
        return x == y
    return x is y if isinstance(x, (dict, list)) else type(x) is type(y) and x == y


def ordered(test):  # < > <= >=: strings by code point, anything else as numbers
    return lambda a, n: test(*a[:2]) if type(a[0]) is type(a[1]) is str else test(number(a[0]), number(a[1]))


def divide(x, y, mod=False):  # JavaScript gives Infinity or NaN (written null), never raises
    x, y = number(x), number(y)
    if y == 0:
        return math.nan if mod or x == 0 or x != x else math.copysign(math.inf, x)
    return math.fmod(x, y) if mod else x / y


OPS = {  # each takes the evaluated arguments `a`, padded with nulls, and their count `n`
    '==': lambda a, n: loose_eq(a[0], a[1]), '!=': lambda a, n: not loose_eq(a[0], a[1]),
    '===': lambda a, n: strict_eq(a[0], a[1]), '!==': lambda a, n: not strict_eq(a[0], a[1]),
    '>': ordered(operator.gt), '>=': ordered(operator.ge),
    '<': ordered(operator.lt), '<=': ordered(operator.le),
    '!': lambda a, n: not truthy(a[0]), '!!': lambda a, n: truthy(a[0]),
    '+': lambda a, n: sum(number(x) for x in a[:n]), '*': lambda a, n: math.prod(number(x) for x in a[:n]),
    '-': lambda a, n: -number(a[0]) if n == 1 else number(a[0]) - number(a[1]),
    '/': lambda a, n: divide(a[0], a[1]), '%': lambda a, n: divide(a[0], a[1], mod=True),
    'cat': lambda a, n: ''.join(text(x) for x in a[:n]),
    'in': lambda a, n: text(a[0]) in a[1] if isinstance(a[1], str) else any(strict_eq(a[0], x) for x in a[1]),
}


def logic(rule, data):
    if isinstance(rule, list):
        return [logic(r, data) for r in rule]
    if not isinstance(rule, dict) or len(rule) != 1:
        return rule
    (op, args), = rule.items()
    args = args if isinstance(args, list) else [args]
    if op in ('and', 'or'):  # short-circuit: the deciding value itself
        v = op == 'and'
        for x in args:
            v = logic(x, data)
            if truthy(v) != (op == 'and'):
                break
        return v
    if op == 'if':
        for i in range(0, len(args) - 1, 2):
            if truthy(logic(args[i], data)):
                return logic(args[i + 1], data)
        return logic(args[-1], data) if len(args) % 2 else None
    a = [logic(x, data) for x in args] + [None, None]
    if op == 'var':
        v = lookup(data, a[0])
        return a[1] if v is None and len(args) > 1 else v
    if op not in OPS:
        raise EngineError('unknown_operator', f'unknown operator {op}')
    return OPS[op](a, len(args))


def resolve(value, scope):
    if isinstance(value, list):
        return [resolve(v, scope) for v in value]
    if not isinstance(value, dict):
        return value
    if list(value) == ['$']:
        return lookup(scope, value['$'])
    if list(value) == ['$expr']:
        return plain(logic(value['$expr'], scope))
    return {k: resolve(v, scope) for k, v in value.items()}


# ---- the engine ----------------------------------------------------------------------------
def step_meta(reports):
    """META-1..3: the attempt's first report wins, even when discarded; four keys only."""
    m = reports[0] if reports else None
    fits = lambda v: isinstance(v, str) and len(v) <= 256  # noqa: E731
    if not isinstance(m, dict) or not all(fits(m.get(k)) for k in ('app', 'version', 'action')):
        return None
    return {'app': m['app'], 'version': m['version'], 'action': m['action'],
            'connectionId': m.get('connectionId') if fits(m.get('connectionId')) else None}


class ActionFailed(Exception):  # an invoke answered a StepError {code, message, phase, retryable}
    def __init__(self, error):
        super().__init__(error.get('message', ''))
        self.error = error


class Engine:
    def __init__(self, workflow):
        self.workflow, self.plan = workflow, Plan(workflow)

    def seed_variables(self, supplied):  # MODEL-7: seeded once, declared defaults applied
        out, supplied = {}, supplied or {}
        for v in self.workflow.get('variables') or []:
            if v['key'] in supplied or 'default' in v:
                out[v['key']] = supplied.get(v['key'], v.get('default'))
            elif v.get('required'):
                raise EngineError('invalid_variables', f"variable {v['key']} is required", variable=v['key'])
        return out

    async def run(self, seed, ctx):
        variables = self.seed_variables(seed.get('variables'))
        run_id, wf = seed['runId'], self.workflow.get('id')
        state = {'runId': run_id, 'workflowId': wf, 'status': 'running', 'variables': variables,
                 'steps': {}, 'stepErrors': [], 'trigger': seed.get('trigger')}
        # The run-start checkpoint carries the trigger and runAttempt (RUNERR-2, RUNERR-3).
        await ctx.checkpoint({'runId': run_id, 'workflowId': wf, 'status': 'running', 'variables': variables,
                              'trigger': seed.get('trigger'), 'runAttempt': 1})
        return await self.walk(ctx, state)

    async def resume(self, run_id, ctx):  # RUN-4: a fresh process knows only state.load
        state = await ctx.load(run_id)
        if not state:
            raise EngineError('run_not_found', f'no run {run_id}')
        if state.get('status') in TERMINAL:
            return state  # resuming twice is idempotent: change nothing
        state.setdefault('steps', {}), state.setdefault('stepErrors', [])
        return await self.walk(ctx, state)

    async def replay(self, run_id, start, ctx):
        original = await ctx.load(run_id)
        if not original:
            raise EngineError('run_not_found', f'no run {run_id}')
        if original.get('status') not in TERMINAL:
            raise EngineError('run_not_resumable', f"run {run_id} is {original.get('status')}")
        p = self.plan
        fresh = set()
        if start is not None:  # REPLAY-3: `from` and its descendants run again
            ids = [s['id'] for s in p.steps]
            if start not in ids:
                raise EngineError('unknown_step', f'replay from {start}: no such step')
            stack = [ids.index(start)]
            while stack:
                i = stack.pop()
                if i not in fresh:
                    fresh.add(i)
                    stack.extend(e[1] for e in p.outgoing[i])
        # REPLAY-1: reuse what succeeded; with `from`, every settled record outside it.
        reusable = ('succeeded',) if start is None else ('succeeded', 'failed', 'skipped')
        carried = {}
        for i in p.order:
            r = (original.get('steps') or {}).get(p.steps[i]['id'])
            if r and i not in fresh and r.get('status') in reusable:
                carried[r['stepId']] = r
        state = {**original, 'status': 'running', 'steps': dict(carried), 'stepErrors': []}
        state.pop('output', None), state.pop('error', None)
        await ctx.checkpoint({'runId': run_id, 'workflowId': self.workflow.get('id'), 'resetSteps': True,
                              'clear': ['output', 'error', 'stepErrors'], 'status': 'running',
                              'variables': original.get('variables'), 'steps': carried, 'runAttempt': 1,
                              'rerouteError': None, 'replay': {'from': start, 'carried': list(carried)}})
        return await self.walk(ctx, state)

    async def walk(self, ctx, state):
        p = self.plan
        skipped = set()  # edges (from, to, when) that will not fire
        scope = {'vars': state.get('variables') or {}, 'steps': {},
                 'trigger': state.get('trigger') or {'type': 'manual'}, 'secrets': ctx.secrets}
        for i in p.order:
            step, incoming, outgoing = p.steps[i], p.incoming[i], p.outgoing[i]
            record = state['steps'].get(step['id'])
            is_skipped = bool(incoming) and all(e in skipped for e in incoming)
            error_edge = any(e[2] == 'error' for e in outgoing)
            # Routing wins over a carried record (REPLAY-2): a replay reuses a step only where
            # the new run reaches it; a step the new routing skips is recorded skipped.
            if record and is_skipped and record['status'] != 'skipped':
                record = None
            if not record or record['status'] not in ('succeeded', 'failed', 'skipped'):
                if ctx.aborted:  # RUN-7: the signal ends the run between steps
                    return await self.finish(ctx, state, {'status': 'canceled'})
                if is_skipped:  # RUN-5, D-10: attempt 0, no input, no output
                    record = {'stepId': step['id'], 'status': 'skipped', 'attempt': 0}
                    await self.commit_step(ctx, state, record)
                else:
                    prior = record if record and record['status'] == 'running' else None
                    record = await self.execute(ctx, state, step, scope, prior)
                    extra, recorded = {}, step.get('onError') == 'continue-record'
                    if record['status'] == 'failed' and not error_edge and recorded:
                        extra['stepErrors'] = [{'stepId': step['id'], **record['error']}]  # ERR-5, D-3
                    await self.commit_step(ctx, state, record, extra)
            # settle: publish the output and route (ERR-2..ERR-7)
            if record['status'] == 'succeeded':
                scope['steps'][step['id']] = {'output': record.get('output')}
                if record.get('meta'):
                    scope['steps'][step['id']]['meta'] = record['meta']
                skipped.update(e for e in outgoing if e[2] == 'error')
            elif record['status'] == 'failed':
                if error_edge:  # an error edge overrides onError (ERR-6)
                    skipped.update(e for e in outgoing if e[2] == 'success')
                elif step.get('onError', 'fail') == 'fail':
                    return await self.finish(ctx, state, {'status': 'failed',
                                                          'error': {'stepId': step['id'], **record['error']}})
            elif record['status'] == 'skipped':
                skipped.update(outgoing)
        # The run's output is the last succeeded step's, in plan order (RUN-9).
        output = next((state['steps'][p.steps[k]['id']].get('output') for k in reversed(p.order)
                       if state['steps'].get(p.steps[k]['id'], {}).get('status') == 'succeeded'), None)
        return await self.finish(ctx, state, {'status': 'succeeded', 'output': output})

    async def commit_step(self, ctx, state, record, extra=None):
        await ctx.checkpoint({'runId': state['runId'], 'steps': {record['stepId']: record}, **(extra or {})})
        state['steps'][record['stepId']] = record
        state['stepErrors'].extend((extra or {}).get('stepErrors', []))

    async def finish(self, ctx, state, patch):
        await ctx.checkpoint({'runId': state['runId'], **patch})
        state.update(patch)
        ctx.log('info', f"run ended {patch['status']}")
        return state

    # `prior`: the step's running record when a crash interrupted it. A failed attempt is
    # durable before its backoff (`nextAttempt`, D-111): a resume waits what is left of the
    # backoff and runs the next attempt, never the failed one again.
    async def execute(self, ctx, state, step, scope, prior):
        pending = (prior or {}).get('nextAttempt')
        record = {'stepId': step['id'], 'status': 'running',
                  'attempt': pending['attempt'] if pending else max(1, (prior or {}).get('attempt', 1))}
        try:
            params, resolution_error = resolve(step.get('with') or {}, scope), None
            record['input'] = params  # RUN-6: the resolved params (the shim redacts secrets)
        except Exception as e:  # noqa: BLE001 — any failure to resolve is a resolution error
            params, resolution_error = None, e
        if pending:
            await ctx.wait_before_retry(step['id'], pending['attempt'],
                                        max(0, parse_iso(pending['at']) - ctx.now()))
        record['startedAt'] = iso(ctx.now())
        await self.commit_step(ctx, state, record)

        def settled(status, key, value, meta=None):  # a failed step may record meta too (META-4)
            return {**record, 'status': status, key: value, 'finishedAt': iso(ctx.now()),
                    **({'meta': meta} if meta else {})}

        if resolution_error:  # ERR-8: a params failure is phase "resolution", never retried
            return settled('failed', 'error', {'code': getattr(resolution_error, 'code', 'resolution_failed'),
                           'message': str(resolution_error), 'phase': 'resolution', 'retryable': False})
        uses, retry = step.get('uses') or {}, step.get('retry') or {}
        max_attempts = max(1, math.floor(retry.get('maxAttempts') or 1))
        idempotent = ctx.idempotent(step['id'])
        while True:
            reports = []  # this attempt's onExecuted reports: a superseded attempt's are ignored
            try:
                output = await ctx.invoke(reports.append, app=uses.get('app'), action=uses.get('action'),
                                          connection=uses.get('connection'), params=params,
                                          stepId=step['id'], attempt=record['attempt'])
                return settled('succeeded', 'output', output, step_meta(reports))
            except ActionFailed as err:
                error = {k: err.error[k] for k in ('code', 'message', 'phase') if k in err.error}
                error.setdefault('message', '')
                # RETRY-1/2, ERR-8: only an execute failure of an idempotent action, or one
                # that says it is retryable; auth, resolution and output never.
                error['retryable'] = err.error.get('phase') == 'execute' and (
                    idempotent or err.error.get('retryable') is True)
                if not error['retryable'] or record['attempt'] >= max_attempts:
                    return settled('failed', 'error', error, step_meta(reports))
                nxt = record['attempt'] + 1
                base = retry.get('delayMs') or 0
                raw = base * 2 ** (nxt - 2) if retry.get('backoff') == 'exponential' else base
                wait = math.ceil(min(raw, WAIT_MS_MAX)) if raw > 0 else 0  # RETRY-4
                at = iso(ctx.now() + wait)
                await self.commit_step(ctx, state, {**record, 'nextAttempt': {'attempt': nxt, 'at': at}})
                await ctx.wait_before_retry(step['id'], nxt, wait)  # RETRY-5: recorded as a wait
                record['attempt'], record['startedAt'] = nxt, iso(ctx.now())
                await self.commit_step(ctx, state, dict(record))
