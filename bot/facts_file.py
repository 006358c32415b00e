"""Hand-written fact files: the ``facts:`` list of a scenario, as the owner's own memory."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from epmem.memory import Fact
from epmem.policy import Policy, PolicyError, Problem, line_for, read_yaml, schema_problems
from epmem.scenario import GoldFact


class _FileFact(GoldFact):
    canary: str = ""


def read_facts_file(path: Path, policy: Policy) -> list[Fact]:
    """Validate the whole file before anything is stored: one bad entry stores nothing."""
    data, lines = read_yaml(path)
    source = str(path)
    if not isinstance(data, list):
        raise PolicyError(source, [Problem((), "a facts file is a YAML list of facts", 1)])
    problems: list[Problem] = []
    facts: list[Fact] = []
    lists = set(policy.contacts) | set(policy.groups)
    for i, item in enumerate(data):
        try:
            gold = _FileFact.model_validate(item)
        except ValidationError as exc:
            problems.extend(Problem(p.path, p.message, line_for(lines, p.path))
                            for p in schema_problems(exc, (i,)))
            continue
        if gold.category not in policy.categories:
            problems.append(Problem((i, "category"), f"unknown category {gold.category!r}",
                                    line_for(lines, (i, "category"))))
        for key in ("whitelist", "blacklist"):
            for j, who in enumerate(getattr(gold, key)):
                if who not in lists:
                    problems.append(Problem((i, key, j), f"unknown contact or group {who!r}",
                                            line_for(lines, (i, key, j))))
        facts.append(gold.to_fact())
    ids = [f.id for f in facts]
    if len(set(ids)) != len(ids):
        problems.append(Problem((), "duplicate fact ids", 1))
    if problems:
        raise PolicyError(source, problems)
    return facts
