"""Heard it from you, on the console (docs/DESIGN.md sec. 3): a closed fact is told back to the
people who heard it said, with no consultation; anyone else gets the deflection and the owner
one consultation; the reason is audited and shown by /why and /who-knows; the owner turns it
off per fact, per contact or entirely; a password is never told back."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from testkit.consulting import KNEE_Q, OPEN_ANSWER, House, open_house
from testkit.sessions import session

CODE_Q = "What's the code for the garage door?"
KNEE_DIRECT = "How is Maya's knee doing?"


@pytest.fixture
async def heard(tmp_path: Path) -> AsyncIterator[House]:
    h = await open_house(tmp_path / "data", heard_it=True)
    await h.runtime.distiller.ingest(
        session(
            [("owner", "The garage door password is 4471, don't lose it.")], sid="s10", participants=["owner", "grace"]
        )
    )
    try:
        yield h
    finally:
        await h.runtime.close()


async def test_who_heard_it_is_told_it_back_without_asking_the_owner(heard: House) -> None:
    knee = await heard.fact("ligament")
    assert knee.undecided and knee.heard_by == ["grace"] and knee.heard_in
    out = await heard.ask("grace", KNEE_DIRECT)
    assert "ligament" in (out.text or "")
    assert out.to_owner is None and out.actions == ()
    assert await heard.store.pending() == []
    [record] = await heard.records("reply")
    [candidate] = [c for c in record.body["candidates"] if c["fact"] == knee.id]
    assert candidate["used"] and f"heard it in {knee.heard_in}" in candidate["verdicts"]["grace"]
    why = await heard.owner(f"/why {record.id}")
    assert f"heard it in {knee.heard_in}" in why
    knows = await heard.owner(f"/who-knows {knee.id}")
    assert "grace was told" in knows and "grace heard it said" in knows


async def test_who_was_not_there_gets_the_deflection_and_the_owner_one_consultation(heard: House) -> None:
    knee = await heard.fact("ligament")
    out = await heard.ask("ana", KNEE_Q)
    assert out.text == OPEN_ANSWER  # the open fact only: Ana was not in Grace's chat
    assert out.to_owner is not None and knee.text in out.to_owner
    assert len(await heard.store.pending()) == 1


async def test_a_password_said_in_a_direct_chat_is_never_told_back(heard: House) -> None:
    code = await heard.fact("4471")
    assert code.heard_by == []
    out = await heard.ask("grace", CODE_Q)
    assert "4471" not in (out.text or "")


@pytest.mark.parametrize("switch", ["/heard off {fact}", "/heard off event:{event}", "/heard off grace", "/heard off"])
async def test_the_owner_turns_it_off_for_a_fact_an_event_a_contact_or_entirely(heard: House, switch: str) -> None:
    knee = await heard.fact("ligament")
    said = await heard.owner(switch.format(fact=knee.id, event=knee.event_id))
    assert said.startswith("Heard it from you is off"), said
    out = await heard.ask("grace", KNEE_DIRECT)
    assert "ligament" not in (out.text or "")
    [change] = [r for r in await heard.records("policy_change") if r.body.get("action") == "heard"]
    assert change.body["on"] is False
    assert (await heard.owner(switch.replace(" off", " on").format(fact=knee.id, event=knee.event_id))).startswith(
        "Heard it from you is on"
    )
    assert "ligament" in ((await heard.ask("grace", KNEE_DIRECT)).text or "")


async def test_once_the_owner_decides_the_decision_alone_counts(heard: House) -> None:
    knee = await heard.fact("ligament")
    out = await heard.ask("ana", KNEE_Q)
    cid = next(a.command for a in out.actions if a.command.endswith(" private")).split()[1]
    await heard.owner(f"/consult {cid} private")
    assert not (await heard.fact("ligament")).undecided
    assert "ligament" not in ((await heard.ask("grace", KNEE_DIRECT)).text or ""), knee.id


async def test_a_heard_fact_is_one_answer_of_a_message_that_asks_two_things(heard: House) -> None:
    """Heard it from you counts for a fact told alone: in one answer it is never joined to another
    fact, but a message that asks two things gets two answers, as two messages would."""
    knee = await heard.fact("ligament")
    two = await heard.ask("grace", "How's Maya's knee? And what race is Maya training for?")
    assert "ligament" in (two.text or "") and "Bath half marathon" in (two.text or "")
    assert two.to_owner is None
    [record] = await heard.records("reply")
    assert record.body["relevance"]["answers"] == [[knee.id], ["f6"]] and "held_back" not in record.body
    one = await heard.ask("grace", "How is Maya's marathon training going, and her knee?")
    assert "ligament" in (one.text or "") and "Bath half marathon" not in (one.text or "")
    held = (await heard.records("reply"))[-1].body["held_back"]
    assert [h["fact"] for h in held] == ["f6"] and "composite" in held[0]["reason"]
