#!/usr/bin/env python3
"""A hostile candidate drawn from a seed: `random_peer.py adapter|engine|host SEED`.

It speaks just enough of the adapter or context protocol to get past the hello most of the
time, then answers every line the suite sends with a drawn mix of well-formed messages
holding wrong or extreme values and lines no protocol allows: wrong ids and types, numbers
beyond f64, lone surrogates, NUL, deep nesting, invalid UTF-8, half lines, a line over the
suite's 16 MiB limit, silence, exit. The suite must judge it (every case red or not
applicable) and never panic, hang or abort (tests/integration/hostile_peers.rs).
"""

import json
import random
import sys

MODE = sys.argv[1]
RNG = random.Random(int(sys.argv[2]))
OUT = sys.stdout.buffer


def emit(raw):
    OUT.write(raw if isinstance(raw, bytes) else raw.encode("utf-8"))
    OUT.write(b"\n")
    OUT.flush()


def scalar():
    return RNG.choice([
        None, True, False, 0, -1, 1.5, 2**53 + 1, 10**30, "", "x", "step-1", "r1",
        "\u0000", "[redacted]", "\ud83d\ude00", "2026-01-01T00:00:00.000Z", -0.0,
    ])


def value(depth=0):
    roll = RNG.random()
    if depth > 3 or roll < 0.5:
        return scalar()
    if roll < 0.75:
        return [value(depth + 1) for _ in range(RNG.randrange(4))]
    keys = ["id", "type", "ok", "error", "runId", "status", "steps", "patch", "code",
            "message", "attempt", "output", "member", "args", "waiting", "x"]
    return {RNG.choice(keys): value(depth + 1) for _ in range(RNG.randrange(5))}


def garbage():
    """A line no protocol allows, or a JSON text that bends the parser."""
    return RNG.choice([
        b"",
        b"   ",
        b"not json",
        b"{",
        b'{"id": 1, "response": ',
        b"\xff\xfe\x80 invalid utf-8",
        b'{"s": "\xc3\x28"}',
        b'"\\ud800"',
        b'{"n": 1e400}',
        b'{"n": -1e400, "m": 123456789012345678901234567890}',
        b'{"a": 1, "a": 2}',
        b"[" * 100000 + b"]" * 100000,
        b'{"k":' * 5000 + b"1" + b"}" * 5000,
        b"\x00\x00\x00",
        b"null",
        b"[]",
        b"12",
    ])


def oversized():
    # Just over the suite's 16 MiB line limit: refused as too long, never read whole.
    return b'{"pad": "' + b"x" * (16 * 1024 * 1024 + 16) + b'"}'


def maybe_bend(message):
    """`message` as a line, now and then bent: a field replaced, garbage, or cut in half."""
    roll = RNG.random()
    if roll < 0.06:
        return garbage()
    if roll < 0.09 and isinstance(message, dict) and message:
        message[RNG.choice(list(message))] = value()
    if roll < 0.11:
        text = json.dumps(message).encode("utf-8")
        return text[: RNG.randrange(1, max(2, len(text)))]
    if roll < 0.112:
        return oversized()
    return json.dumps(message)


def read_line():
    line = sys.stdin.buffer.readline()
    if not line:
        sys.exit(0)
    try:
        return json.loads(line)
    except ValueError:
        return None


def exit_now():
    """Sometimes the candidate just stops."""
    if RNG.random() < 0.01:
        sys.exit(RNG.choice([0, 1, 3]))


def adapter():
    read_line()
    emit(maybe_bend({"protocol": "w6w-adapter", "version": 1,
                     "implementation": {"name": RNG.choice(["random peer", "", 7])},
                     "capabilities": RNG.choice([["*"], ["op.plan", "-op.run"], "all", [1]])}))
    while True:
        request = read_line()
        exit_now()
        rid = request.get("id") if isinstance(request, dict) else None
        shape = RNG.random()
        if shape < 0.4:
            answer = {"id": rid, "response": {"ok": value()}}
        elif shape < 0.6:
            answer = {"id": rid, "response": {"error": {"code": RNG.choice(["x", 1, None]),
                                                        "message": value()}}}
        elif shape < 0.7:
            answer = {"id": RNG.choice([rid, 0, -1, "1", 2**64, None]), "response": value()}
        elif shape < 0.8:
            answer = {"id": rid, "protocolError": value()}
        else:
            answer = value()
        for _ in range(RNG.choice([1, 1, 1, 2])):
            emit(maybe_bend(answer))


MEMBERS = ["invoke", "state.checkpoint", "state.load", "sleep", "waitBeforeRetry",
           "schedule", "queue.enqueue", "invokeCallable", "nope"]


def patch(run_id):
    return {"runId": RNG.choice([run_id, "other", None]),
            "status": RNG.choice(["running", "succeeded", "failed", "sideways", 3]),
            "steps": RNG.choice([{}, {"a": {"stepId": "a", "status": "succeeded",
                                            "attempt": RNG.choice([1, "1", -1, 2**40])}},
                                 value()]),
            "output": value()}


def engine():
    read_line()
    emit(maybe_bend({"type": "ready", "protocol": "w6w-context", "version": 1,
                     "implementation": {"name": "random peer"},
                     "capabilities": RNG.choice([["*"], ["ops"], [], "x"])}))
    next_id = 1
    while True:
        message = read_line()
        exit_now()
        kind = message.get("type") if isinstance(message, dict) else None
        if kind == "op":
            emit(maybe_bend({"type": "opResult",
                             "id": RNG.choice([message.get("id"), 99, None]),
                             "response": RNG.choice([{"ok": value()}, value()])}))
            continue
        run_id = (message.get("run") or {}).get("id") if isinstance(message, dict) else None
        waiting = []
        for _ in range(RNG.randrange(4)):
            member = RNG.choice(MEMBERS)
            args = {"patch": patch(run_id)} if member == "state.checkpoint" else value()
            emit(maybe_bend({"type": "call", "id": next_id, "member": member, "args": args}))
            waiting.append(next_id)
            next_id += RNG.choice([1, 1, 1, 0, -1])
        if RNG.random() < 0.2:
            emit(maybe_bend({"type": "log", "level": RNG.choice(["info", "loud"]),
                             "message": value()}))
        end = RNG.random()
        if end < 0.6 and waiting:
            emit(maybe_bend({"type": "idle", "waiting": RNG.choice([waiting, [0], "all"])}))
        elif end < 0.9:
            emit(maybe_bend({"type": "done"}))
        else:
            emit(maybe_bend(value()))


def host():
    read_line()
    emit(maybe_bend({"type": "ready", "protocol": "w6w-context", "version": 1,
                     "implementation": {"name": "random peer"}}))
    while True:
        call = read_line()
        exit_now()
        cid = call.get("id") if isinstance(call, dict) else None
        member = call.get("member") if isinstance(call, dict) else None
        args = (call.get("args") or {}) if isinstance(call, dict) else {}
        args = args if isinstance(args, dict) else {}
        if member == "state.load" and RNG.random() < 0.6:
            ok = {"runId": RNG.choice([args.get("runId"), "other"]), "workflowId": "wf",
                  "status": RNG.choice(["running", "succeeded", "nope"]),
                  "steps": RNG.choice([{}, value()]), "variables": value(),
                  "trigger": {"type": "manual"}, "runAttempt": RNG.choice([1, 0, "1"])}
        elif member == "schedule.pending" and RNG.random() < 0.6:
            ok = [{"runId": args.get("runId"), "resumeToken": value(), "fireAtMs": value()}]
        else:
            ok = None if RNG.random() < 0.7 else value()
        answer = RNG.choice([{"type": "answer", "id": cid, "ok": ok},
                             {"type": "answer", "id": cid, "ok": ok},
                             {"type": "answer", "id": cid,
                              "error": {"code": value(), "message": value()}},
                             {"type": "answer", "id": RNG.choice([cid, 0, None]), "ok": ok}])
        emit(maybe_bend(answer))


{"adapter": adapter, "engine": engine, "host": host}[MODE]()
