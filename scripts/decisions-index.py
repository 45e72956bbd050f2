#!/usr/bin/env python3
"""Rebuild the index at the top of docs/decisions.md from its entries (issue 43 item 5).

An entry is a heading `### D-n — Title (clauses; issue n)`. Its status is `current` unless
the entry carries a `**Status:**` line (or bullet) that starts with `superseded by D-m`,
`superseded in part by D-m` or `measured, not kept`; any other status text (`accepted`,
`decided`, …) reads as `current`. The index sits between the `<!-- index:start -->` and
`<!-- index:end -->` markers, one row per entry, in number order.

Headings written as `### D-n. Title` or `### D-n: title` are rewritten to the one format.

Run from the repository root after adding or merging entries:

    python3 scripts/decisions-index.py          # rewrite docs/decisions.md in place
    python3 scripts/decisions-index.py --check  # exit 1 if the file is not up to date

`tests/integration/docs.rs` fails when the index and the headings disagree.
"""

import re
import sys

PATH = "docs/decisions.md"
START = "<!-- index:start -->"
END = "<!-- index:end -->"

LOOSE_HEADING = re.compile(r"^#{2,4} D-(\d+)\s*(?:—|-|\.|:)\s*(.*?)\s*$")
HEADING = re.compile(r"^### D-(\d+) — (.+)$")
STATUS = re.compile(r"^(?:- )?\*\*Status:\*\*\s*(.*)$")
REF = re.compile(r"D-\d+")


def normalise_headings(lines):
    out = []
    for line in lines:
        m = LOOSE_HEADING.match(line)
        if m and not HEADING.match(line):
            title = m.group(2)
            title = title[:1].upper() + title[1:]
            line = f"### D-{m.group(1)} — {title}"
        out.append(line)
    return out


def short_title(title):
    """The heading's title without its closing `(clauses; issue n)` group."""
    if not title.endswith(")"):
        return title
    depth = 0
    for i in range(len(title) - 1, -1, -1):
        if title[i] == ")":
            depth += 1
        elif title[i] == "(":
            depth -= 1
            if depth == 0:
                return title[:i].rstrip() or title
    return title


def status_of(text):
    """`current`, `superseded [in part ]by D-m[ and D-k]` or `measured, not kept`."""
    low = text.lower()
    for lead in ("superseded in part by", "superseded by"):
        if low.startswith(lead):
            # The references named before the first explanation (` — `, `(`, `;`, `.`).
            head = re.split(r" — |\(|;|\. ", text[len(lead):], maxsplit=1)[0]
            refs = REF.findall(head)
            if refs:
                return f"{lead} {' and '.join(refs)}"
    if low.startswith("measured, not kept"):
        return "measured, not kept"
    return "current"


def slug(heading_text):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to `-`."""
    out = []
    for c in heading_text.lower():
        if c.isalnum() or c in "_-":
            out.append(c)
        elif c == " ":
            out.append("-")
    return "".join(out)


def entries(lines):
    found = []
    for i, line in enumerate(lines):
        m = HEADING.match(line)
        if not m:
            continue
        status = "current"
        for body in lines[i + 1 :]:
            if body.startswith("#"):
                break
            s = STATUS.match(body)
            if s:
                status = status_of(s.group(1).replace("**", ""))
                break
        text = line[4:]
        found.append((int(m.group(1)), short_title(m.group(2)), status, slug(text)))
    return sorted(found)


def index(found):
    rows = ["| Entry | Title | Status |", "|---|---|---|"]
    for n, title, status, anchor in found:
        title = title.replace("|", "\\|")
        rows.append(f"| [D-{n}](#{anchor}) | {title} | {status} |")
    return rows


def rebuild(text):
    lines = normalise_headings(text.split("\n"))
    try:
        a, b = lines.index(START), lines.index(END)
    except ValueError:
        sys.exit(f"{PATH}: no {START} … {END} markers")
    return "\n".join(lines[: a + 1] + index(entries(lines)) + lines[b:])


def main():
    check = sys.argv[1:] == ["--check"]
    with open(PATH, encoding="utf-8") as f:
        text = f.read()
    new = rebuild(text)
    if check:
        if new != text:
            sys.exit(f"{PATH}: the index is out of date; run scripts/decisions-index.py")
        return
    if new != text:
        with open(PATH, "w", encoding="utf-8") as f:
            f.write(new)


if __name__ == "__main__":
    main()
