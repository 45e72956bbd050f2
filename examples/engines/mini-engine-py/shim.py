# The shim: maps the w6w context protocol (docs/context-protocol.md) to the RFC's
# WorkflowContext for engine.py. The engine is a coroutine; each context member it awaits
# is a `Call` the shim writes before suspending it. Lockstep: after each suite message the
# coroutine runs until it awaits an answer, then the shim says `idle` with that call — or
# `done` when the engine returned. Sequential, so no event loop and no threads.
import json
import sys

sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree
from engine import ActionFailed, Engine, EngineError, is_num  # noqa: E402

# SEC-1 (D-207): what the engine writes is scrubbed by value before it leaves — every secret
# of the session, as text or number, in every data value and key (never a structural field
# such as a status or an id); one shorter than 4 characters only where a value is exactly it,
# as the suite judges. Checkpoints get a scrubbed copy; the engine keeps its live values.
STRUCTURAL = {'runId', 'workflowId', 'status', 'stepId', 'attempt', 'phase', 'code', 'retryable',
              'startedAt', 'finishedAt', 'resetSteps', 'clear', 'runAttempt'}


def write(message):
    sys.stdout.write(json.dumps(message, ensure_ascii=False, separators=(',', ':')) + '\n')
    sys.stdout.flush()


def js_text(v):  # a number as JavaScript prints it: 3, not 3.0
    return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)


def leaves(v):
    if isinstance(v, dict):
        v = list(v.values())
    return [x for item in v for x in leaves(item)] if isinstance(v, list) else [v]


def scrubber(secrets):
    values = [v for v in leaves(secrets) if v and isinstance(v, str) or is_num(v)]
    needles = sorted({js_text(v) if is_num(v) else v for v in values}, key=len, reverse=True)

    def text(t):
        for n in needles:
            t = '[redacted]' if t == n else t.replace(n, '[redacted]') if len(n) >= 4 else t
        return t

    def scrub(v):
        if isinstance(v, str):
            return text(v)
        if is_num(v):
            return '[redacted]' if js_text(v) in needles else v
        if isinstance(v, list):
            return [scrub(x) for x in v]
        if isinstance(v, dict):
            return {text(k): x if k in STRUCTURAL else scrub(x) for k, x in v.items()}
        return v

    return scrub if needles else (lambda v: v)


class Call:  # one context member the engine awaits: the shim answers it through `send`
    def __init__(self, member, args):
        self.member, self.args = member, args

    def __await__(self):
        return (yield self)


def answered(answer):
    if 'error' in answer:  # a store failure: the engine stops with its code
        raise EngineError(answer['error'].get('code', 'store_error'), answer['error'].get('message', ''))
    return answer.get('ok')


class Context:
    """The RFC's WorkflowContext as the suite offers it for one session."""

    def __init__(self, start, clock):
        host = start.get('host') or {}
        self.secrets = host.get('secrets') or {}
        self.scrub = scrubber(self.secrets)
        self.idempotent_steps = set(host.get('idempotentSteps') or [])  # RETRY-2: the catalog's word
        self.clock = clock

    # The test double's clock and signal: the suite's virtual time, never the wall clock.
    def now(self):
        return self.clock['now']

    @property
    def aborted(self):
        return self.clock['aborted']

    def idempotent(self, step_id):
        return step_id in self.idempotent_steps

    def log(self, level, message):
        write({'type': 'log', 'level': level, 'message': self.scrub(message)})

    def secret_paths(self, v, at=''):  # JSON Pointers of secret-derived params, for the host to redact
        if isinstance(v, dict):
            escape = lambda k: k.replace('~', '~0').replace('/', '~1')  # noqa: E731 — RFC 6901
            return [p for k, x in v.items() for p in self.secret_paths(x, f'{at}/{escape(k)}')]
        if isinstance(v, list):
            return [p for i, x in enumerate(v) for p in self.secret_paths(x, f'{at}/{i}')]
        return [at] if self.scrub(v) != v else []

    async def invoke(self, on_executed, **args):  # params: the one place a secret may travel (SEC-1)
        answer = await Call('invoke', {**args, 'secretPaths': self.secret_paths(args['params'])})
        for meta in answer.get('onExecuted') or []:  # the host's reports, before settling (META-1)
            on_executed(meta)
        if 'error' in answer:
            raise ActionFailed(answer['error'])
        return answer.get('ok')

    async def checkpoint(self, patch):  # RUN-3: answered once durable
        answered(await Call('state.checkpoint', {'patch': self.scrub(patch)}))

    async def load(self, run_id):
        return answered(await Call('state.load', {'runId': run_id}))

    async def wait_before_retry(self, step_id, attempt, ms):  # RETRY-4/5: a wait the suite records
        answered(await Call('waitBeforeRetry', {'stepId': step_id, 'attempt': attempt, 'ms': ms}))


class Shim:
    def __init__(self):
        self.clock = {'now': 0, 'aborted': False}
        self.session, self.call_id = None, 0  # session: (coroutine, context)

    def start(self, msg):
        ctx = Context(msg, self.clock)

        async def work():  # a workflow the engine cannot plan is refused in `done` too
            engine = Engine(msg['workflow'])
            if msg['type'] == 'run':
                return await engine.run({**msg.get('seed', {}), 'runId': msg['run']['id']}, ctx)
            if msg['type'] == 'resume':  # after a crash; a token would be a `wait`'s: none here
                return await engine.resume(msg['runId'], ctx)
            return await engine.replay(msg['runId'], msg.get('from'), ctx)

        self.session, self.call_id = (work(), ctx), 0
        self.advance(None)

    def advance(self, answer):
        """Run the engine until it awaits an answer (write the call, then idle) or returns."""
        work, ctx = self.session
        try:
            call = work.send(answer)
        except StopIteration:
            self.session = None
            return write({'type': 'done'})
        except Exception as e:  # noqa: BLE001 — a refusal or a failure: the session's error
            self.session = None
            error = {'code': getattr(e, 'code', 'engine_error'), 'message': str(e), **getattr(e, 'extra', {})}
            return write({'type': 'done', 'error': ctx.scrub(error)})
        self.call_id += 1
        write({'type': 'call', 'id': self.call_id, 'member': call.member, 'args': call.args})
        write({'type': 'idle', 'waiting': [self.call_id]})

    def handle(self, msg):
        if is_num(msg.get('now')):
            self.clock['now'] = msg['now']
        if isinstance(msg.get('aborted'), bool):
            self.clock['aborted'] = msg['aborted']
        kind = msg.get('type')
        if kind == 'hello':
            write({'type': 'ready', 'protocol': 'w6w-context', 'version': 1,
                   'implementation': {'name': 'mini-engine (Python)', 'version': '0.1.0'},
                   # the sequential core (op.run + op.replay), the signal (RUN-7) and META
                   'capabilities': ['signal', 'meta']})
        elif kind == 'op':
            error = {'code': 'unsupported_op', 'message': 'mini-engine-py only runs, resumes and replays'}
            write({'type': 'opResult', 'id': msg['id'], 'response': {'error': error}})
        elif kind in ('run', 'resume', 'replay'):
            self.start(msg)
        elif kind == 'answer' and self.session and msg.get('id') == self.call_id:
            self.advance(msg)
        else:
            raise RuntimeError(f'unexpected message {msg!r}')


if __name__ == '__main__':
    shim = Shim()
    for line in iter(sys.stdin.readline, ''):
        if line.strip():
            shim.handle(json.loads(line))
