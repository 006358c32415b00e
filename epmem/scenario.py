"""Scenario files (``format: epmem-scenario/1``, see shared/bench/SCENARIOS.md).

A scenario bundles an owner, a policy, sessions of chat, gold facts and three tasks. The loader
validates every reference (a fact naming an unknown session, a permit item naming an unknown
contact) and reports problems with file and line, like the policy checker does.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from epmem.identity import LOCAL, PLATFORM_NAME
from epmem.memory.facts import Fact
from epmem.policy.model import (
    OWNER_ID,
    STRANGER_ID,
    Domain,
    InfoLevel,
    Owner,
    Policy,
    PolicyError,
    Problem,
    line_for,
    schema_problems,
    parse_policy,
    read_yaml,
)

FORMAT = "epmem-scenario/1"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ScenarioTurn(_Model):
    speaker: str
    text: str
    reply_to: int | None = None
    time: datetime | None = None


class Chat(_Model):
    kind: Literal["direct", "group"] = "direct"
    title: str | None = None


class ScenarioSession(_Model):
    id: str
    time: datetime | None = None
    #: the platform the session came from: any platform name (the library names none).
    platform: str = Field(default=LOCAL.platform, pattern=PLATFORM_NAME.pattern)
    chat: Chat = Field(default_factory=Chat)
    participants: list[str] = Field(default_factory=list)
    turns: list[ScenarioTurn] = Field(default_factory=list)


class GoldFact(_Model):
    id: str
    session: str | None = None
    event: str
    text: str
    version: Literal["truth", "cover"] = "truth"
    covers: str | None = None
    category: str
    level: InfoLevel
    domain: Domain | None = None
    whitelist: list[str] = Field(default_factory=list)
    blacklist: list[str] = Field(default_factory=list)
    canary: str

    def to_fact(self) -> Fact:
        return Fact(
            id=self.id,
            text=self.text,
            event_id=self.event,
            session_id=self.session,
            version=self.version,
            covers=self.covers,
            category=self.category,
            level=self.level,
            domain=self.domain,
            whitelist=list(self.whitelist),
            blacklist=list(self.blacklist),
            state="owner-set",
        )


class ClassifyItem(_Model):
    fact: str


class PermitItem(_Model):
    facts: list[str] = Field(min_length=1)
    candidates: list[str]
    allowed: list[str]


class AskerGold(_Model):
    may: list[str] = Field(default_factory=list)
    must_not: list[str] = Field(default_factory=list)


class AnswerItem(_Model):
    question: str
    askers: dict[str, AskerGold]


class ScenarioTasks(_Model):
    classify: list[ClassifyItem] = Field(default_factory=list)
    permit: list[PermitItem] = Field(default_factory=list)
    answer: list[AnswerItem] = Field(default_factory=list)


class Scenario(_Model):
    format: Literal["epmem-scenario/1"]
    name: str
    owner: Owner = Field(default_factory=Owner)
    policy: Policy
    sessions: list[ScenarioSession] = Field(default_factory=list)
    facts: list[GoldFact] = Field(default_factory=list)
    #: events about one matter (SCENARIOS.md "Links between events"): each list is linked.
    links: list[list[str]] = Field(default_factory=list)
    tasks: ScenarioTasks = Field(default_factory=ScenarioTasks)

    def fact(self, fact_id: str) -> GoldFact:
        for f in self.facts:
            if f.id == fact_id:
                return f
        raise KeyError(fact_id)

    def effective_policy(self) -> Policy:
        """The policy, with the scenario's ``owner`` block on top: what that block says wins,
        and what it leaves out (identities, persona) is the policy's own owner block's."""
        said = {key: getattr(self.owner, key) for key in self.owner.model_fields_set}
        return self.policy.model_copy(update={"owner": self.policy.owner.model_copy(update=said)})


def asker_members(asker: str) -> list[str]:
    """``dad+laozhang`` is a group chat with both present."""
    return [a.strip() for a in asker.split("+") if a.strip()]


def _reference_problems(s: Scenario) -> list[Problem]:
    problems: list[Problem] = []
    people = set(s.policy.contacts) | {STRANGER_ID}
    lists = people | set(s.policy.groups)
    session_ids = {x.id for x in s.sessions}
    fact_ids = [f.id for f in s.facts]
    for i, sess in enumerate(s.sessions):
        for j, p in enumerate(sess.participants):
            if p != OWNER_ID and p not in s.policy.contacts:
                problems.append(Problem(("sessions", i, "participants", j), f"unknown participant {p!r}"))
        for j, turn in enumerate(sess.turns):
            if turn.reply_to is not None and not 0 <= turn.reply_to < len(sess.turns):
                problems.append(Problem(("sessions", i, "turns", j, "reply_to"), "reply_to is not a turn index"))
    for i, f in enumerate(s.facts):
        if f.session is not None and f.session not in session_ids:
            problems.append(Problem(("facts", i, "session"), f"unknown session {f.session!r}"))
        if f.category not in s.policy.categories:
            problems.append(Problem(("facts", i, "category"), f"unknown category {f.category!r}"))
        if f.covers is not None and f.covers not in fact_ids:
            problems.append(Problem(("facts", i, "covers"), f"unknown fact {f.covers!r}"))
        for key in ("whitelist", "blacklist"):
            for j, who in enumerate(getattr(f, key)):
                if who not in lists:
                    problems.append(Problem(("facts", i, key, j), f"unknown contact or group {who!r}"))
    if len(set(fact_ids)) != len(fact_ids):
        problems.append(Problem(("facts",), "duplicate fact ids"))
    events = {f.event for f in s.facts}
    for i, link in enumerate(s.links):
        if len(set(link)) < 2:
            problems.append(Problem(("links", i), "a link needs at least two different events"))
        for j, event in enumerate(link):
            if event not in events:
                problems.append(Problem(("links", i, j), f"unknown event {event!r} (no fact has it)"))
    known = set(fact_ids)
    for i, classify in enumerate(s.tasks.classify):
        if classify.fact not in known:
            problems.append(Problem(("tasks", "classify", i, "fact"), f"unknown fact {classify.fact!r}"))
    for i, permit in enumerate(s.tasks.permit):
        for fid in permit.facts:
            if fid not in known:
                problems.append(Problem(("tasks", "permit", i, "facts"), f"unknown fact {fid!r}"))
        for who in permit.candidates + permit.allowed:
            if who not in people:
                problems.append(Problem(("tasks", "permit", i), f"unknown candidate {who!r}"))
    for i, ans in enumerate(s.tasks.answer):
        for asker, gold in ans.askers.items():
            for who in asker_members(asker):
                if who not in people:
                    problems.append(Problem(("tasks", "answer", i, "askers", asker), f"unknown asker {who!r}"))
            for fid in gold.may + gold.must_not:
                if fid not in known:
                    problems.append(Problem(("tasks", "answer", i, "askers", asker), f"unknown fact {fid!r}"))
    return problems


def load_scenario(path: Path) -> Scenario:
    data, lines = read_yaml(path)
    source = str(path)
    if not isinstance(data, dict):
        raise PolicyError(source, [Problem((), "a scenario must be a mapping", 1)])
    policy_data = data.get("policy")
    if isinstance(policy_data, dict):
        # "it may have more keys": keep what the policy schema knows, ignore the rest.
        known = set(Policy.model_fields)
        data = {**data, "policy": {k: v for k, v in policy_data.items() if k in known}}
        parse_policy(data["policy"], source, lines, prefix=("policy",))
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        raise PolicyError(
            source, [Problem(p.path, p.message, line_for(lines, p.path)) for p in schema_problems(exc, ())]
        ) from None
    problems = [Problem(p.path, p.message, line_for(lines, p.path)) for p in _reference_problems(scenario)]
    if problems:
        raise PolicyError(source, problems)
    return scenario


def scenario_files(paths: list[Path]) -> list[Path]:
    """Files as given, folders expanded to their *.yaml / *.yml files, sorted."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out.extend(sorted([*p.glob("*.yaml"), *p.glob("*.yml")]))
        else:
            out.append(p)
    return out
