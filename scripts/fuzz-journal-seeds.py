#!/usr/bin/env python3
"""Rebuild fuzz/seeds/journal/ from real run journals (issue 13 item 1).

Runs a small workflow (a secret, a foreach with a two-step body and a retry, a parallel)
with `w6w-sim run --store DIR`, once to the end and once aborted after each of a few
checkpoints (`W6W_SIM_ABORT_AFTER_CHECKPOINT`, so running frames are on disk), then writes
each journal twice: as it is, and in the fuzz target's record-list form (a 0 byte, then
each record's `kind` + JSON separated by 0xFF), so mutations reach past the checksum.
Run from the repository root after `cargo build --release`; the output is committed.
"""
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile

BIN = os.path.abspath("target/release/w6w-sim")
OUT = "fuzz/seeds/journal"
MAGIC = b"w6wjrnl\n"

WORKFLOW = {
    "manifestVersion": "2", "id": "wf_fe", "name": "fe",
    "steps": [
        {"id": "a", "uses": {"app": "echo", "action": "echo"},
         "with": {"k": "{{ secrets.K }}", "plain": 1}},
        {"id": "loop", "uses": {"app": "@w6w/control", "action": "foreach"},
         "with": {"items": [1, 2, 3], "parallelism": 2, "body": ["b", "c"]}},
        {"id": "b", "uses": {"app": "echo", "action": "echo"},
         "with": {"item": {"$": "foreach.item"}}},
        {"id": "c", "uses": {"app": "flaky", "action": "go"},
         "with": {"prev": {"$": "steps.b.output.item"}}, "retry": {"maxAttempts": 2}},
        {"id": "par", "uses": {"app": "@w6w/control", "action": "parallel"},
         "with": {"branches": [["d"], ["e"]]}},
        {"id": "d", "uses": {"app": "echo", "action": "echo"}, "with": {"x": 1}},
        {"id": "e", "uses": {"app": "echo", "action": "echo"},
         "with": {"y": {"$expr": {"+": [1, 2]}}}},
        {"id": "z", "uses": {"app": "echo", "action": "echo"},
         "with": {"last": {"$": "steps.loop.output"}}},
    ],
    "edges": [{"from": "a", "to": "loop"}, {"from": "loop", "to": "par"},
              {"from": "par", "to": "z"}],
}
SCENARIO = {
    "secrets": {"K": "s3cr\"et"},
    "actions": {"c": {"outcomes": [
        {"error": {"code": "timeout", "message": "t", "retryable": True}},
        {"output": {"ok": True}},
    ]}},
}


def records(data):
    """Each framed record's body (`kind` + JSON) after the magic."""
    assert data.startswith(MAGIC), "not a journal"
    off, out = len(MAGIC), []
    while off + 8 <= len(data):
        (length,) = struct.unpack_from("<I", data, off)
        body = data[off + 8:off + 8 + length]
        if len(body) < length:
            break
        out.append(body)
        off += 8 + length
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    journals = []
    with tempfile.TemporaryDirectory() as tmp:
        wf, sc = os.path.join(tmp, "wf.json"), os.path.join(tmp, "sc.json")
        json.dump(WORKFLOW, open(wf, "w"))
        json.dump(SCENARIO, open(sc, "w"))
        for abort in [None, 3, 6, 9, 12]:
            store = os.path.join(tmp, f"st{abort}")
            env = dict(os.environ)
            if abort is not None:
                env["W6W_SIM_ABORT_AFTER_CHECKPOINT"] = str(abort)
            subprocess.run([BIN, "run", wf, "--scenario", sc, "--store", store],
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            with open(os.path.join(store, "run_1.journal"), "rb") as f:
                journals.append(f.read())
    for data in journals:
        listed = b"\0" + b"\xff".join(records(data))
        for seed in (data, listed, data[:-5]):
            name = hashlib.sha256(seed).hexdigest()[:16]
            with open(os.path.join(OUT, name), "wb") as f:
                f.write(seed)
    print(f"{len(os.listdir(OUT))} seeds in {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
