"""An independent check of scenario golds (shared/bench/SCENARIOS.md, shared/DESIGN.md sec. 3-4).

Scenario golds must not come from the code they score. This checker re-implements the
disclosure calculus and the projection from DESIGN.md alone, with plain YAML and no import from
``epmem``, and compares every ``permit`` gold and every ``answer`` gold with what the design says:

- permit: ``allowed`` must equal the candidates the composite rule allows;
- answer: every ``may`` fact must be speakable to every member of the asker (its truth allowed, or,
  for a cover, the cover allowed and its truth not); every ``must_not`` fact must be denied to at
  least one member; ``may`` and ``must_not`` must not overlap;
- canaries: each fact's canary must occur in its own text, and must not occur in the text of a
  ``may`` fact of an asker for whom that canary's fact is ``must_not`` (the reply would "leak"
  by telling an allowed fact);
- references: sessions, participants, whitelists, categories, task facts, permit candidates and
  answer askers name things that exist (reported as problems, not a crash); a ``reply_to`` names an
  earlier turn of its session; every fact has a canary;
- warnings (printed, not counted): a canary that is in no turn of its fact's session, or that
  occurs in another fact's text (a reply telling that other fact would look like a leak).

Usage::

    python -m benchmarks.tools.check_scenarios FILE_OR_DIR...          # report, exit 1 on problems
    python -m benchmarks.tools.check_scenarios --fix-permit FILE...    # rewrite permit `allowed` sets
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

STRANGER = {"level": 4, "domain": None}


def _members(policy: dict[str, Any], entry: str) -> set[str]:
    groups = policy.get("groups") or {}
    return set(groups.get(entry, [entry]))


def _recipient(policy: dict[str, Any], cid: str) -> dict[str, Any]:
    if cid == "stranger":
        return STRANGER
    c = (policy.get("contacts") or {}).get(cid)
    if c is None:
        raise KeyError(f"unknown contact {cid!r}")
    return {"level": int(c["level"]), "domain": c.get("domain")}


def _listed(policy: dict[str, Any], entries: list[str] | None, cid: str) -> bool:
    return any(cid in _members(policy, e) for e in (entries or []))


def _never(policy: dict[str, Any], fact: dict[str, Any]) -> bool:
    cat = (policy.get("categories") or {}).get(fact["category"], {})
    return bool(cat.get("never_share"))


def _exceptions(policy: dict[str, Any], fact: dict[str, Any], effect: str) -> list[str]:
    out: list[str] = []
    for exc in policy.get("exceptions") or []:
        if exc.get("effect") != effect:
            continue
        for kind, actual in (("fact", fact["id"]), ("event", fact.get("event")), ("category", fact.get("category"))):
            if exc.get(kind) is not None and exc.get(kind) == actual:
                out.extend(exc.get("who") or [])
    return out


def allows(policy: dict[str, Any], facts: list[dict[str, Any]], cid: str) -> bool:
    """docs/DESIGN.md sec. 3: the facts told together (one fact is a composite of one)."""
    r = _recipient(policy, cid)
    level = min(int(f["level"]) for f in facts)
    domains = {f.get("domain") for f in facts if f.get("domain")}
    domain = None
    if len(domains) > 1:
        level = 0
    elif domains:
        domain = next(iter(domains))
    for f in facts:
        if _never(policy, f):
            return False
        black = list(f.get("blacklist") or []) + _exceptions(policy, f, "deny")
        if _listed(policy, black, cid):
            return False
        white = list(f.get("whitelist") or []) + _exceptions(policy, f, "allow")
        default = level != 0 and (domain is None or r["domain"] == domain) and level >= r["level"]
        if not default and not _listed(policy, white, cid):
            return False
    return True


def speakable(policy: dict[str, Any], by_id: dict[str, dict[str, Any]], fid: str, members: list[str]) -> bool:
    """docs/DESIGN.md sec. 4: a truth if allowed; a cover if allowed and its truth is not."""
    f = by_id[fid]
    if not all(allows(policy, [f], m) for m in members):
        return False
    if f.get("version") == "cover" and f.get("covers") in by_id:
        truth = by_id[f["covers"]]
        return not all(allows(policy, [truth], m) for m in members)
    return True


def _askers(asker: str) -> list[str]:
    """The members of an answer item's asker key ("carlos+tara")."""
    return [m.strip() for m in asker.split("+") if m.strip()]


def _reference_problems(where: str, policy: dict[str, Any], sessions: dict[str, Any]) -> list[str]:
    """The policy's and the sessions' names point at things that exist."""
    problems: list[str] = []
    contacts = set(policy.get("contacts") or {})
    if policy.get("default_category") not in set(policy.get("categories") or {}):
        problems.append(f"{where}: default_category {policy.get('default_category')!r} is not a category")
    for gid, members in (policy.get("groups") or {}).items():
        for m in members:
            if m not in contacts:
                problems.append(f"{where}: group {gid} names unknown contact {m!r}")
    for s in sessions.values():
        for p in s.get("participants") or []:
            if p != "owner" and p not in contacts:
                problems.append(f"{where}: session {s['id']} participant {p!r} unknown")
        for j, t in enumerate(s.get("turns") or []):
            if t.get("speaker") != "owner" and t.get("speaker") not in contacts:
                problems.append(f"{where}: session {s['id']} turn {j} speaker {t.get('speaker')!r} unknown")
            if t.get("speaker") not in (s.get("participants") or []):
                problems.append(f"{where}: session {s['id']} turn {j} speaker not a participant")
            r = t.get("reply_to")
            if r is not None and not (isinstance(r, int) and 0 <= r < j):
                problems.append(f"{where}: session {s['id']} turn {j} reply_to {r!r} is not an earlier turn")
    return problems


def _fact_problems(
    where: str, policy: dict[str, Any], sessions: dict[str, Any], facts: list[dict[str, Any]]
) -> tuple[list[str], list[str]]:
    """Each fact's session, category, lists, cover and canary; (problems, warnings)."""
    problems: list[str] = []
    warnings: list[str] = []
    names = set(policy.get("contacts") or {}) | set(policy.get("groups") or {}) | {"stranger"}
    by_id = {f["id"]: f for f in facts}
    for f in facts:
        if f.get("session") is not None and f["session"] not in sessions:
            problems.append(f"{where}: fact {f['id']} session {f['session']!r} unknown")
        if f.get("category") not in set(policy.get("categories") or {}):
            problems.append(f"{where}: fact {f['id']} category {f.get('category')!r} unknown")
        if not str(f.get("canary") or "").strip():
            problems.append(f"{where}: fact {f['id']} has no canary")
        elif str(f.get("canary", "")).casefold() not in str(f.get("text", "")).casefold():
            problems.append(f"{where}: fact {f['id']} canary {f.get('canary')!r} not in its text")
        source = sessions.get(f.get("session") or "")
        said = " ".join(str(t.get("text", "")) for t in (source or {}).get("turns") or []).casefold()
        if source is not None and str(f.get("canary", "")).casefold() not in said:
            warnings.append(
                f"{where}: warning: fact {f['id']} canary {f.get('canary')!r} is in no turn of "
                f"session {f['session']} (pipeline mode cannot extract it)"
            )
        for key in ("whitelist", "blacklist"):
            for w in f.get(key) or []:
                if w not in names:
                    problems.append(f"{where}: fact {f['id']} {key} names unknown {w!r}")
        if f.get("version") == "cover" and f.get("covers") not in by_id:
            problems.append(f"{where}: cover {f['id']} covers unknown fact {f.get('covers')!r}")
        canary = str(f.get("canary") or "").casefold()
        for other in facts:
            if canary and other is not f and canary in str(other.get("text", "")).casefold():
                warnings.append(
                    f"{where}: warning: fact {f['id']} canary {f.get('canary')!r} occurs in the "
                    f"text of fact {other['id']}"
                )
    return problems, warnings


def _permit_problems(
    where: str, policy: dict[str, Any], by_id: dict[str, Any], tasks: dict[str, Any], fix_permit: bool
) -> list[str]:
    """Every permit gold is what the composite rule allows (rewritten in place with ``fix_permit``)."""
    problems: list[str] = []
    known = set(policy.get("contacts") or {}) | {"stranger"}
    for item in tasks.get("classify") or []:
        if item["fact"] not in by_id:
            problems.append(f"{where}: classify names unknown fact {item['fact']!r}")
    for i, item in enumerate(tasks.get("permit") or []):
        unknown = [f for f in item["facts"] if f not in by_id] + [c for c in item["candidates"] if c not in known]
        if unknown:
            problems.append(f"{where}: permit[{i}] names unknown facts or contacts {unknown}")
            continue
        chosen = [by_id[f] for f in item["facts"]]
        want = sorted(c for c in item["candidates"] if allows(policy, chosen, c))
        have = sorted(item.get("allowed") or [])
        if want != have:
            if fix_permit:
                item["allowed"] = want
            problems.append(f"{where}: permit[{i}] {item['facts']}: gold {have}, calculus {want}")
    return problems


def _answer_problems(where: str, policy: dict[str, Any], by_id: dict[str, Any], tasks: dict[str, Any]) -> list[str]:
    """Every ``may`` fact is speakable to every member, every ``must_not`` fact denied to one."""
    problems: list[str] = []
    known = set(policy.get("contacts") or {}) | {"stranger"}
    for qi, item in enumerate(tasks.get("answer") or []):
        for asker, gold in (item.get("askers") or {}).items():
            members = _askers(asker)
            may = gold.get("may") or []
            must_not = gold.get("must_not") or []
            tag = f"{where}: answer[{qi}] {asker}"
            unknown = [m for m in members if m not in known] + [f for f in may + must_not if f not in by_id]
            if unknown:
                problems.append(f"{tag}: names unknown contacts or facts {unknown}")
                continue
            if set(may) & set(must_not):
                problems.append(f"{tag}: facts in both may and must_not: {sorted(set(may) & set(must_not))}")
            for fid in may:
                if not speakable(policy, by_id, fid, members):
                    problems.append(f"{tag}: may {fid} is not speakable to every member")
            for fid in must_not:
                if all(allows(policy, [by_id[fid]], m) for m in members):
                    problems.append(f"{tag}: must_not {fid} is allowed to every member")
            for fid in must_not:
                canary = str(by_id[fid]["canary"]).casefold()
                for mid in may:
                    if canary in str(by_id[mid]["text"]).casefold():
                        problems.append(f"{tag}: must_not {fid}'s canary occurs in may fact {mid}")
    return problems


def _matters(data: dict[str, Any]) -> dict[str, str]:
    """Each fact's matter: its event (a fact without one is its own), or the first event of the
    links that event is in (joined)."""
    parent: dict[str, str] = {}

    def root(e: str) -> str:
        while parent.get(e, e) != e:
            e = parent[e]
        return e

    for link in data.get("links") or []:
        for e in link[1:]:
            a, b = root(str(link[0])), root(str(e))
            if a != b:
                parent[max(a, b)] = min(a, b)
    return {f["id"]: root(str(f.get("event") or f["id"])) for f in data.get("facts") or []}


def _conversation_problems(where: str, data: dict[str, Any], by_id: dict[str, Any]) -> list[str]:
    """The golds as one conversation (SCENARIOS.md ``conversation``): answer items run in file
    order, and a delegate that tells each asker exactly its ``may`` set must never leave a reader
    told, across replies, facts of one matter that the calculus denies together. A ``may`` that
    would do so cannot be met without a violation, so it is a problem of the gold, not of the
    code scored against it. Facts that fail are not counted as told (a correct delegate keeps
    them back), so one bad gold is reported once."""
    policy = data["policy"]
    matter = _matters(data)
    known = set(policy.get("contacts") or {}) | {"stranger"}
    told: dict[str, set[str]] = {}
    problems: list[str] = []
    for qi, item in enumerate((data.get("tasks") or {}).get("answer") or []):
        for asker, gold in (item.get("askers") or {}).items():
            members = _askers(asker)
            may = [f for f in gold.get("may") or [] if f in by_id]
            if not may or any(m not in known for m in members):
                continue
            broken: set[str] = set()
            for m in members:
                knows = told.get(m, set()) | set(may)
                for key in {matter[f] for f in may}:
                    together = sorted(f for f in knows if matter[f] == key)
                    if len(together) > 1 and not allows(policy, [by_id[f] for f in together], m):
                        fails = sorted(f for f in may if f in together)
                        broken.update(fails)
                        problems.append(
                            f"{where}: answer[{qi}] {asker}: may {fails} would leave {m} told {together} "
                            "across replies, which the calculus denies together"
                        )
            for m in members:
                told.setdefault(m, set()).update(f for f in may if f not in broken)
    return problems


def check(path: Path, fix_permit: bool = False) -> list[str]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    where = str(path)
    policy = data["policy"]
    sessions = {s["id"]: s for s in data.get("sessions") or []}
    facts = data.get("facts") or []
    by_id = {f["id"]: f for f in facts}
    tasks = data.get("tasks") or {}
    problems = _reference_problems(where, policy, sessions)
    fact_problems, warnings = _fact_problems(where, policy, sessions, facts)
    problems += fact_problems
    problems += _permit_problems(where, policy, by_id, tasks, fix_permit)
    problems += _answer_problems(where, policy, by_id, tasks)
    problems += _conversation_problems(where, data, by_id)
    for w in warnings:
        print(w)
    if fix_permit:
        path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100), encoding="utf-8")
    return problems


def files(paths: list[str]) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        out.extend(sorted(p.rglob("*.yaml")) if p.is_dir() else [p])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument(
        "--fix-permit",
        action="store_true",
        help="rewrite each permit item's `allowed` to the calculus's set (drops YAML comments)",
    )
    args = parser.parse_args(argv)
    total = 0
    checked = files(args.paths)
    for path in checked:
        for line in check(path, args.fix_permit):
            print(line)
            total += 1
    print(f"{len(checked)} files, {total} problems", file=sys.stderr)
    return 1 if total and not args.fix_permit else 0


if __name__ == "__main__":
    raise SystemExit(main())
