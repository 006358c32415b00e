"""Hand-written fact files: the ``facts:`` list of a scenario, as the owner's own memory.

The annotation written there is the owner's, completed from the category where a field is left
out (epmem/ingest/explicit.py): ``level`` and ``domain`` may be omitted, ``canary`` too (it is
the benchmark's, not the owner's).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from epmem.ingest import AnnotationProblem, complete_explicit
from epmem.memory import Fact
from epmem.policy import InfoLevel, Policy, PolicyError, Problem, line_for, read_yaml, schema_problems
from epmem.policy import load_policy
from epmem.scenario import GoldFact

from bot.config import Settings


class _FileFact(GoldFact):
    level: InfoLevel | None = None  # type: ignore[assignment]
    canary: str = ""


def read_facts_file(path: Path, policy: Policy) -> list[Fact]:
    """Validate the whole file before anything is stored: one bad entry stores nothing."""
    data, lines = read_yaml(path)
    source = str(path)
    if not isinstance(data, list):
        raise PolicyError(source, [Problem((), "a facts file is a YAML list of facts", 1)])
    problems: list[Problem] = []
    facts: list[Fact] = []
    for i, item in enumerate(data):
        try:
            gold = _FileFact.model_validate(item)
        except ValidationError as exc:
            problems.extend(Problem(p.path, p.message, line_for(lines, p.path)) for p in schema_problems(exc, (i,)))
            continue
        try:
            ann = complete_explicit(
                policy,
                gold.category,
                level=gold.level,
                domain=gold.domain,
                domain_given="domain" in gold.model_fields_set,
                whitelist=gold.whitelist,
                blacklist=gold.blacklist,
            )
        except AnnotationProblem as exc:
            problems.append(Problem((i, exc.field), str(exc), line_for(lines, (i, exc.field))))
            continue
        facts.append(
            Fact(
                id=gold.id,
                text=gold.text,
                event_id=gold.event,
                session_id=gold.session,
                version=gold.version,
                covers=gold.covers,
                category=ann.category,
                level=ann.level,
                domain=ann.domain,
                whitelist=list(ann.whitelist),
                blacklist=list(ann.blacklist),
                state="owner-set",
                evidence=[f"owner:file:{path.name}"],
            )
        )
    ids = [f.id for f in facts]
    if len(set(ids)) != len(ids):
        problems.append(Problem((), "duplicate fact ids", 1))
    if problems:
        raise PolicyError(source, problems)
    return facts


async def import_facts_file(settings: Settings, policy_file: Path, path: Path) -> int:
    """Check the whole file against the policy, then store its facts by their ids (importing the
    same file again replaces them instead of adding copies)."""
    from bot.runtime import Runtime

    policy = load_policy(policy_file)
    facts = read_facts_file(path, policy)
    runtime = await Runtime.open(settings, policy=policy)
    try:
        await runtime.memory.add(facts)
    finally:
        await runtime.close()
    return len(facts)
