"""What one reply tells: the facts that answer the question, and only a set the composite rule
allows for every reader. Real runtime (Edge store, SQLite, MiniLM, the cross-encoder)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.config import Settings
from bot.runtime import Runtime, load_scenario_memory
from epmem.language import ENGLISH
from epmem.memory.facts import Fact
from epmem.policy.calculus import Composite, Gate, Recipient
from epmem.reply.composite import limit_to_composite
from epmem.reply.relevance import question_kind
from epmem.scenario import load_scenario
from testkit.runtime import ask, example, scenario_runtime


@pytest.fixture
async def house(tmp_path: Path) -> AsyncIterator[Runtime]:
    runtime, _ = await scenario_runtime(tmp_path / "data", example("house_and_bonus.yaml"))
    try:
        yield runtime
    finally:
        await runtime.close()


async def body_of(runtime: Runtime, audit_id: str | None) -> dict:  # type: ignore[type-arg]
    record = await runtime.audit.get(audit_id or "")
    assert record is not None
    return record.body


@pytest.fixture
async def house_tells_all(tmp_path: Path) -> AsyncIterator[Runtime]:
    """A relevance step that keeps every fact of a catch-up: only the composite rule limits."""
    scenario = load_scenario(example("house_and_bonus.yaml"))
    everything = ENGLISH.relevance.replace(relative_cut=0.0, rescue_recall=-1.0, max_facts=10)
    runtime = await Runtime.open(
        Settings(data_dir=tmp_path / "all"), policy=scenario.effective_policy(), relevance=everything
    )
    await load_scenario_memory(runtime, scenario)
    try:
        yield runtime
    finally:
        await runtime.close()


async def test_catch_up_never_tells_leo_the_house_and_the_bonus_together(house_tells_all: Runtime) -> None:
    """house_and_bonus: Leo may know f1 and f3 each, never both in one reply (L0 ceiling)."""
    house = house_tells_all
    out = await house.agent.handle(ask("leo", "Catch me up on Maya's news"))
    body = await body_of(house, out.audit_id)
    disclosed = set(body["disclosed"])
    assert disclosed and not {"f1", "f3"} <= disclosed, body["disclosed"]
    held = {h["fact"]: h for h in body["held_back"]}
    assert held and all(h["recipient"] == "leo" and "composite L0" in h["reason"] for h in held.values())
    assert ({"f1", "f3"} - disclosed) <= set(held)
    rulebook = await house.engine.rulebook()
    facts = {f.id: f for f in await house.memory.all()}
    assert Composite.of([rulebook.gate(facts[f]) for f in disclosed]).allows(rulebook.recipient("leo"))
    # the reply says what was disclosed, and nothing that was held back
    text = out.text or ""
    assert ("Elm Road" in text) == ("f1" in disclosed) and ("retention bonus" in text) == ("f3" in disclosed)
    # and /why shows the owner what the composite rule held back, not only `audit show` (issue 21)
    why = (await house.agent.handle(ask("owner", f"/why {out.audit_id}"))).text or ""
    for fact in held:
        assert f"  {fact} " in why and "HELD BACK" in why, why
    assert "held back (composite rule): not told to leo together with" in why and "composite L0" in why


async def test_a_narrow_question_gets_the_fact_that_answers_it(house: Runtime) -> None:
    out = await house.agent.handle(ask("kim", "When is the Atlas launch?"))
    body = await body_of(house, out.audit_id)
    assert body["disclosed"] == ["f5"] and body["relevance"]["kind"] == "when"
    assert "12 May" in (out.text or "")


async def test_relevance_is_blind_to_what_the_asker_may_not_know(house: Runtime) -> None:
    """The same question, with and without a highly relevant secret in memory: the asker's
    reply is the same (the secret neither silences nor changes what may be said)."""
    question = "Is Maya training for a marathon?"
    before = (await house.agent.handle(ask("raj", question))).text
    await house.memory.add(
        [
            Fact(
                id="s1",
                text="Maya is secretly training for the Tokyo marathon with a coach.",
                event_id="e-secret-run",
                category="finances",
                level=0,
                state="owner-set",
            )
        ]
    )
    after = (await house.agent.handle(ask("raj", question))).text
    assert before == after and "Tokyo" not in (after or "")


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Catch me up on Maya's news", "open"),
        ("What is Lin up to these days?", "open"),
        ("tell me the whole visa story", "open"),  # the whole of a story is everything about it
        ("When is the Atlas launch?", "when"),
        ("Where are they moving?", "where"),
        ("Who is the new team lead?", "who"),
        ("Did Maya get any money from work recently?", "yesno"),
        ("Hey, is Tomás okay?", "state"),
        ("How's Tyler's job going?", "state"),
        ("Is Lin leaving the company?", "yesno"),
        ("How much runway does Loomly have left?", "what"),
    ],
)
def test_question_kinds(question: str, kind: str) -> None:
    assert question_kind(question) == kind


GATES = st.builds(
    Gate,
    fact_id=st.sampled_from([f"f{i}" for i in range(8)]),
    level=st.integers(0, 4),
    domain=st.sampled_from([None, "work", "life"]),
    allow=st.dictionaries(st.sampled_from(["a", "b"]), st.just("whitelist:x"), max_size=2),
    deny=st.dictionaries(st.sampled_from(["a", "b"]), st.just("blacklist:x"), max_size=1),
)
READERS = st.lists(
    st.builds(
        Recipient,
        id=st.sampled_from(["a", "b", "c"]),
        level=st.integers(1, 4),
        domain=st.sampled_from([None, "work", "life"]),
    ),
    min_size=1,
    max_size=3,
)


@given(st.lists(GATES, min_size=1, max_size=6, unique_by=lambda g: g.fact_id), READERS)
def test_what_is_kept_always_passes_the_composite_rule(gates: list[Gate], readers: list[Recipient]) -> None:
    kept, held = limit_to_composite(gates, readers)
    by_id = {g.fact_id: g for g in gates}
    if kept:
        assert all(Composite.of([by_id[f] for f in kept]).allows(r) for r in readers)
    assert [g.fact_id for g in gates if g.fact_id in set(kept)] == kept  # relevance order kept
    assert sorted([*kept, *(h.fact_id for h in held)]) == sorted(by_id)
    # greedy and maximal: no held-back fact could join what was kept
    for h in held:
        assert not all(Composite.of([*(by_id[f] for f in kept), by_id[h.fact_id]]).allows(r) for r in readers)


ANSWERS = st.lists(st.lists(st.sampled_from([f"f{i}" for i in range(8)]), max_size=4), max_size=3)
MATTERS = st.dictionaries(st.sampled_from([f"f{i}" for i in range(8)]), st.sampled_from(["m1", "m2"]))


@given(st.lists(GATES, min_size=1, max_size=6, unique_by=lambda g: g.fact_id), READERS, ANSWERS, MATTERS)
def test_each_answer_of_a_message_passes_the_composite_rule_and_so_does_each_matter(
    gates: list[Gate], readers: list[Recipient], answers: list[list[str]], matters: dict[str, str]
) -> None:
    """A message of several questions: each answer is one composite, and facts of one matter are
    one composite whichever answers they are in (as across two replies); a fact no question
    chose is told only with what it may be told together with."""
    kept, held = limit_to_composite(gates, readers, matter_of=matters, answers=answers)
    by_id = {g.fact_id: g for g in gates}
    assert sorted([*kept, *(h.fact_id for h in held)]) == sorted(by_id)
    several = len(answers) > 1
    scopes = [set(a) for a in answers] if several else [set(by_id)]
    scopes += [{f for f in by_id if matters.get(f, f) == m} for m in set(matters.values())]
    chosen = {f for a in answers for f in a} if several else set(by_id)
    unchosen = set(kept) - chosen  # no question chose them: judged with every answer
    scopes = [scope | unchosen for scope in scopes]
    for scope in scopes:
        told = [by_id[f] for f in kept if f in scope]
        if told:
            assert all(Composite.of(told).allows(r) for r in readers), (scope, kept)
    if not several:  # one question, or none: the reply is one composite, as before
        assert (kept, held) == limit_to_composite(gates, readers, matter_of=matters)


@given(st.lists(GATES, min_size=1, max_size=6, unique_by=lambda g: g.fact_id), READERS)
def test_answers_that_each_hold_every_fact_are_one_composite(gates: list[Gate], readers: list[Recipient]) -> None:
    """Two questions that chose the same facts are no wider than one question."""
    ids = [g.fact_id for g in gates]
    assert limit_to_composite(gates, readers, answers=[ids, ids]) == limit_to_composite(gates, readers)
