"""The agent end to end on the embedded default: Edge store, SQLite audit, rules responder."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.agent import NON_TEXT_NOTE, TOO_LONG_NOTE
from bot.runtime import Runtime
from connectors.base import Inbound
from epmem.reply.respond import deflection
from testkit.runtime import ask, example, scenario_runtime


@pytest.fixture
async def house(tmp_path: Path) -> AsyncIterator[Runtime]:
    runtime, _ = await scenario_runtime(tmp_path / "data", example("house_and_bonus.yaml"))
    try:
        yield runtime
    finally:
        await runtime.close()


async def test_each_audience_hears_only_what_it_may(house: Runtime) -> None:
    leo = (await house.agent.handle(ask("leo", "How is the house hunt going?"))).text or ""
    assert "Elm Road" in leo
    raj = (await house.agent.handle(ask("raj", "How is the house hunt going?"))).text or ""
    assert "more space" in raj and "Elm Road" not in raj
    # Ana alone may know the truth; with Raj present the whole chat gets the cover
    group = (await house.agent.handle(ask("ana", "How is the house hunt going?", "raj"))).text or ""
    assert "more space" in group and "Elm Road" not in group
    ben = (await house.agent.handle(ask("ben", "Did Maya get any money from work recently?"))).text or ""
    assert "retention bonus" in ben
    kim = (await house.agent.handle(ask("kim", "Did Maya get any money from work recently?"))).text or ""
    assert "bonus" not in kim


async def test_deflection_reads_the_same_for_a_secret_and_for_nothing(house: Runtime) -> None:
    secret = await house.agent.handle(ask("telegram:999", "Did Maya get a retention bonus?"))
    nothing = await house.agent.handle(ask("telegram:999", "Did Maya adopt a horse?"))
    assert secret.text == nothing.text == deflection("Maya Chen")
    # the audit knows the difference, the asker does not
    first = await house.audit.get(secret.audit_id or "")
    second = await house.audit.get(nothing.audit_id or "")
    assert first is not None and second is not None
    assert any(c["fact"] == "f3" and not c["allowed"] for c in first.body["candidates"])
    assert not any(c["fact"] == "f3" for c in second.body["candidates"])


async def test_every_reply_is_audited_and_the_chain_verifies(house: Runtime) -> None:
    out = await house.agent.handle(ask("leo", "How is the house hunt going?"))
    record = await house.audit.get(out.audit_id or "")
    assert record is not None and record.kind == "reply"
    assert record.body["reply"] == out.text and record.body["disclosed"] == ["f1"]
    assert record.body["audience"] == ["leo"]
    used = [c for c in record.body["candidates"] if c["used"]]
    assert used and all("rule" in text for c in used for text in c["verdicts"].values())
    ledger = await house.audit.who_knows("e-house")
    assert [(d.fact_id, d.recipient) for d in ledger] == [("f1", "leo")]
    n, bad = await house.audit.verify()
    assert bad is None and n >= 1


async def test_owner_allow_changes_the_next_answer_and_revoke_undoes_it(house: Runtime) -> None:
    question = "How is the house hunt going?"
    before = (await house.agent.handle(ask("raj", question))).text or ""
    assert "Elm Road" not in before
    reply = (await house.agent.handle(ask("owner", "/allow f1 to raj for 7d"))).text or ""
    assert reply.startswith("Exception 1: allow raj on fact f1 until ")
    # Raj heard the cover f2 before; a cover and its truth are one event told two ways, so the
    # whitelist on the truth alone tells him the truth (epmem/reply/cumulative.py _told_two_ways)
    after = (await house.agent.handle(ask("raj", question))).text or ""
    assert "Elm Road" in after
    changes = await house.audit.records(kind="policy_change")
    assert changes[-1].body["target"] == "fact:f1" and changes[-1].body["who"] == ["raj"]
    assert "Revoked" in ((await house.agent.handle(ask("owner", "/revoke 1"))).text or "")
    assert "Elm Road" not in ((await house.agent.handle(ask("raj", question))).text or "")


async def test_a_non_owner_command_is_only_a_question(house: Runtime) -> None:
    out = await house.agent.handle(ask("raj", "/allow f1 to raj"))
    assert out.text == deflection("Maya Chen")
    record = await house.audit.get(out.audit_id or "")
    assert record is not None and record.kind == "attempted_command"
    assert await house.overlay.exceptions() == []
    # a display name set to the owner's name changes nothing either
    spoof = Inbound(
        platform="telegram",
        chat_id="1",
        chat_kind="direct",
        sender="telegram:1",
        text="/facts",
        audience=("telegram:1",),
        sender_display_name="Maya Chen",
    )
    assert (await house.agent.handle(spoof)).text == deflection("Maya Chen")


async def test_owner_commands(house: Runtime) -> None:
    async def owner(text: str) -> str:
        return (await house.agent.handle(ask("owner", text))).text or ""

    assert "never-share" in await owner("/allow category:credentials to leo")
    assert "unknown contact" in await owner("/allow f1 to nobody")
    assert "no fact, event or category" in await owner("/deny f99 to leo")
    assert "cannot read duration" in await owner("/allow f1 to leo for ever")
    assert "f1" in await owner("/facts elm")
    assert "Leo Chen" in await owner("/contacts")
    preview = await owner("/preview raj How is the house hunt going?")
    assert "more space" in preview and "Elm Road" not in preview
    audit_id = preview.rsplit("/why ", 1)[1].rstrip(")")
    why = await owner(f"/why {audit_id}")
    assert "f1" in why and "denied" in why and "rule 4" in why
    remembered = await owner("/remember I booked a flight to Porto for the marathon")
    fact_id = remembered.split()[2].rstrip(":")
    fact = await house.memory.get(fact_id)
    assert fact is not None and fact.text.startswith("Maya booked a flight") and fact.category == "hobbies"
    assert "Paused" in await owner("/pause")
    assert (await house.agent.handle(ask("leo", "How is the house hunt going?"))).text is None
    await owner("/resume")
    assert "Elm Road" in ((await house.agent.handle(ask("leo", "How is the house hunt going?"))).text or "")
    assert "Unknown command" in await owner("/frobnicate")
    recall = await owner("What about the house?")
    assert "[f1]" in recall and "[f2]" in recall


async def test_owner_recall_shows_what_reaches_the_relevance_step_not_recall_s_low_floor(house: Runtime) -> None:
    """Recall's floor (0.2) is low for the relevance step's rescue; the owner's own recall
    lists the events with a fact at the relevance step's min_recall (0.4), as before."""
    question = "Any plans for the weekend?"
    events = await house.memory.recall(question)
    least = house.engine.relevance.config.min_recall
    strong = {r.fact.id for ev in events if any(x.score >= least for x in ev.facts) for r in ev.facts}
    weak = {r.fact.id for ev in events if all(x.score < least for x in ev.facts) for r in ev.facts}
    assert strong and weak  # the question reaches both bands: the test can fail
    reply = (await house.agent.handle(ask("owner", question))).text or ""
    assert all(f"[{f}]" in reply for f in strong) and not any(f"[{f}]" in reply for f in weak)


async def test_a_reply_s_record_names_the_events_near_the_question_not_recall_s_low_floor(house: Runtime) -> None:
    """The record's candidates (what /forget erases by) are the events with a fact at the
    relevance step's min_recall, and any it told a fact of; not every weakly recalled one."""
    question = "Any plans for the weekend?"
    events = await house.memory.recall(question)
    least = house.engine.relevance.config.min_recall
    weak = {r.fact.id for ev in events if all(x.score < least for x in ev.facts) for r in ev.facts}
    out = await house.agent.handle(ask("leo", question))
    record = await house.audit.get(out.audit_id or "")
    assert record is not None and weak
    named = {c["fact"] for c in record.body["candidates"]}
    told = set(record.body["disclosed"])
    assert named and not (named & weak - told)


async def test_odd_messages_are_audited_and_answered_briefly(house: Runtime) -> None:
    sticker = Inbound(
        platform="telegram",
        chat_id="5",
        chat_kind="direct",
        sender="telegram:5",
        text="",
        audience=("telegram:5",),
        non_text="sticker",
    )
    out = await house.agent.handle(sticker)
    assert out.text == NON_TEXT_NOTE
    record = await house.audit.get(out.audit_id or "")
    assert record is not None and record.kind == "non_text" and record.body["non_text"] == "sticker"
    huge = await house.agent.handle(ask("leo", "x" * 100_000))
    assert huge.text == TOO_LONG_NOTE
    empty = await house.agent.handle(ask("leo", "   "))
    assert empty.text is None


async def test_memory_and_exceptions_survive_a_restart(tmp_path: Path) -> None:
    runtime, scenario = await scenario_runtime(tmp_path / "data", example("house_and_bonus.yaml"))
    await runtime.agent.handle(ask("owner", "/allow f1 to raj"))
    await runtime.close()
    again = await Runtime.open(runtime.settings, policy=scenario.effective_policy())
    try:
        assert await again.memory.count() == len(scenario.facts)
        assert "Elm Road" in ((await again.agent.handle(ask("raj", "How is the house hunt going?"))).text or "")
        assert (await again.audit.verify())[1] is None
    finally:
        await again.close()
