#!/usr/bin/env python3
"""Rebuild fuzz/seeds/<target>/ from the conformance case files (issue 12 item 8).

Each target gets a small seed corpus drawn from the cases: eval request lines, workflows,
scenarios, JSONLogic rules and template texts. Run from the repository root; the output is
committed, so the fuzzers start from inputs that reach deep into the code.
"""
import glob
import hashlib
import json
import os

LIMIT = 60
seeds = {t: [] for t in ["eval_line", "validate", "scenario", "jsonlogic", "template"]}


def walk_strings(v, out):
    if isinstance(v, str):
        if "{{" in v:
            out.append(v)
    elif isinstance(v, list):
        for i in v:
            walk_strings(i, out)
    elif isinstance(v, dict):
        for i in v.values():
            walk_strings(i, out)


for path in sorted(glob.glob("conformance/cases/*.json")):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    for case in doc.get("cases", []):
        req = case.get("request", {})
        text = json.dumps(req, separators=(",", ":"))
        if "$file" not in text and len(text) < 4000:
            seeds["eval_line"].append(text)
        if isinstance(req.get("workflow"), dict):
            seeds["validate"].append(json.dumps(req["workflow"]))
        if isinstance(req.get("scenario"), dict):
            seeds["scenario"].append(json.dumps(req["scenario"]))
        if req.get("op") == "logic" and "logic" in req:
            seeds["jsonlogic"].append(json.dumps(req["logic"]))
        if req.get("op") == "parse" and isinstance(req.get("text"), str):
            seeds["template"].append(req["text"])
        found = []
        walk_strings(req, found)
        seeds["template"].extend(found)

for target, items in seeds.items():
    out = os.path.join("fuzz", "seeds", target)
    os.makedirs(out, exist_ok=True)
    for old in glob.glob(os.path.join(out, "*")):
        os.remove(old)
    unique = sorted(set(items), key=lambda s: (len(s), s))
    step = max(1, len(unique) // LIMIT)
    for s in unique[::step][:LIMIT]:
        data = s.encode("utf-8")
        name = hashlib.sha1(data).hexdigest()[:16]
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print(f"{target}: {min(LIMIT, len(unique[::step]))} seeds")
