"""Extra gold checks for the confided set, beyond benchmarks/tools/check_scenarios.py.

Rules from the brief that the shared checker does not enforce:
- shape: 1-3 sessions, 3-6 facts, 4-8 contacts, 0-2 groups, 5-8 categories with a never_share one,
  a default category at L3/L4, classify = every truth fact, 3-6 permit items, 2-4 questions with
  3-5 askers each, a two-line header comment;
- canaries: each canary occurs (case-insensitively) in its session's turns, in no other fact's
  text, in no question of the file, and not in the standard deflection naming the owner;
- event consistency: for every asker, every fact of an event that the asker's gold touches is
  placed where the calculus puts it (speakable -> may; denied to some member -> must_not;
  allowed but not speakable, i.e. a cover whose truth is allowed -> neither).

Usage (from the repository root)::

    python benchmarks/scenarios/confided/extra_checks.py benchmarks/scenarios/confided
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from benchmarks.tools.check_scenarios import allows, speakable  # noqa: E402


def check(path: Path) -> list[str]:
    raw = path.read_text(encoding="utf-8")
    d = yaml.safe_load(raw)
    out: list[str] = []
    lines = raw.splitlines()
    if not (len(lines) > 2 and lines[0].startswith("#") and lines[1].startswith("#") and not lines[2].startswith("#")):
        out.append("header must be exactly two comment lines")
    pol = d["policy"]
    facts = d["facts"]
    by = {f["id"]: f for f in facts}
    sessions = {s["id"]: s for s in d["sessions"]}
    owner = d["owner"]["name"]
    deflection = f"Sorry, I can't help with that. I'll let {owner} know you asked.".casefold()
    if not 1 <= len(sessions) <= 3:
        out.append(f"{len(sessions)} sessions")
    if not 3 <= len(facts) <= 6:
        out.append(f"{len(facts)} facts")
    if not 4 <= len(pol["contacts"]) <= 8:
        out.append(f"{len(pol['contacts'])} contacts")
    if len(pol.get("groups") or {}) > 2:
        out.append("more than 2 groups")
    if not 5 <= len(pol["categories"]) <= 8:
        out.append(f"{len(pol['categories'])} categories")
    if not any(c.get("never_share") for c in pol["categories"].values()):
        out.append("no never_share category")
    if pol["categories"][pol["default_category"]]["level"] < 3:
        out.append("default category below L3")
    questions = [q["question"].casefold() for q in d["tasks"]["answer"]]
    for f in facts:
        c = str(f["canary"]).casefold()
        said = " ".join(t["text"] for t in sessions[f["session"]]["turns"]).casefold()
        if c not in said:
            out.append(f"{f['id']}: canary {c!r} not said in {f['session']}")
        if c in deflection:
            out.append(f"{f['id']}: canary {c!r} occurs in a deflection")
        for g in facts:
            if g is not f and c in g["text"].casefold():
                out.append(f"{f['id']}: canary {c!r} occurs in {g['id']}'s text")
        for q in questions:
            if c in q:
                out.append(f"{f['id']}: canary {c!r} occurs in question {q!r}")
    truths = {f["id"] for f in facts if f["version"] == "truth"}
    classified = {i["fact"] for i in d["tasks"]["classify"]}
    if classified != truths:
        out.append(f"classify {sorted(classified)} != truth facts {sorted(truths)}")
    if not 3 <= len(d["tasks"]["permit"]) <= 6:
        out.append(f"{len(d['tasks']['permit'])} permit items")
    if not 2 <= len(d["tasks"]["answer"]) <= 4:
        out.append(f"{len(d['tasks']['answer'])} questions")
    for q in d["tasks"]["answer"]:
        if not 3 <= len(q["askers"]) <= 5:
            out.append(f"{len(q['askers'])} askers for {q['question']!r}")
        for asker, gold in q["askers"].items():
            members = asker.split("+")
            may = set(gold.get("may") or [])
            must_not = set(gold.get("must_not") or [])
            events = {by[x]["event"] for x in may | must_not}
            for f in facts:
                if f["event"] not in events:
                    continue
                if speakable(pol, by, f["id"], members):
                    want = "may"
                elif not all(allows(pol, [f], m) for m in members):
                    want = "must_not"
                else:
                    want = "neither"
                have = "may" if f["id"] in may else "must_not" if f["id"] in must_not else "neither"
                if want != have:
                    out.append(f"{q['question'][:40]!r} {asker}: {f['id']} is {have}, calculus says {want}")
    return out


def main(argv: list[str]) -> int:
    total = 0
    paths = [p for a in argv for p in (sorted(Path(a).glob("*.yaml")) if Path(a).is_dir() else [Path(a)])]
    for p in paths:
        for line in check(p):
            print(f"{p}: {line}")
            total += 1
    print(f"{len(paths)} files, {total} problems", file=sys.stderr)
    return 1 if total else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:] or [str(Path(__file__).parent)]))
