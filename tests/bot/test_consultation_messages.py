"""One message to the owner about several events of one question (issue 37): the best closed
event and those the cross-encoder is sure answer the question, each its own consultation, its
own section of the note and its own buttons, and one consultation for the bounds and for
``per_reply`` (bot/consultations/flow.py ``ask_about``). A real runtime over the house example,
Grace's two chats taken in (the knee and the promotion, both closed until Maya decides)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from bot.clock import utcnow
from testkit.consulting import Turns, open_house
from testkit.runtime import ask
from testkit.sessions import session

QUESTION = "Any news about Maya's knee or her promotion?"
KEYS = ("tell", "like", "who", "private")
#: a third closed event, said to Grace: what a later question of hers would consult about.
STORY: Turns = [("owner", "I'm resting my legs for a few weeks, so no runs for now.")]
REST_Q = "Why has Maya stopped running?"


async def test_two_sure_events_are_one_note_with_a_section_and_buttons_each(tmp_path: Path) -> None:
    h = await open_house(tmp_path / "data", consult_per_reply=2, consult_per_message=3)
    try:
        knee, promotion = await h.fact("ligament"), await h.fact("principal")
        out = await h.ask("grace", QUESTION)
        note = out.to_owner
        assert note is not None and len(h.sent.notes) == 1
        c1, c2 = await h.store.pending()
        assert c1.batch == c2.batch == c1.id and c1.audit_id == c2.audit_id
        assert {c1.event_id, c2.event_id} == {knee.event_id, promotion.event_id}
        # who asked what once, then a section per event with its facts and its own /consult ID
        lines = note.splitlines()
        assert note.count(QUESTION) == 1 and lines.count("[1 of 2]") == lines.count("[2 of 2]") == 1
        first, second = note.split("[2 of 2]")
        assert f"  {c1.facts[0]}: " in first and f"/consult {c1.id} tell" in first and c2.id not in first
        assert f"  {c2.facts[0]}: " in second and f"/consult {c2.id} tell" in second and c1.id not in second
        # each event its own buttons, grouped (a row on Telegram, a block on Slack), numbered
        assert [(a.group, a.command) for a in out.actions] == [
            (n, f"/consult {c.id} {k}") for n, c in ((1, c1), (2, c2)) for k in KEYS
        ]
        assert out.actions[0].label.startswith("1. Tell ") and out.actions[4].label.startswith("2. Tell ")
        # one consultation for the bounds and for the reply; each row audited, naming the message
        assert await h.store.for_reply(c1.audit_id) == 1 and await h.store.open_count("grace") == 1
        assert await h.store.asked_since(utcnow() - timedelta(days=1), "grace") == 1
        assert await h.store.asked_since(utcnow() - timedelta(days=1), everyone=True) == 1
        records = await h.records("consultation")
        assert [(r.body["consultation"], r.body["batch"]) for r in records] == [(c1.id, c1.id), (c2.id, c1.id)]
        shown1, shown2 = await h.runtime.memory.get(c1.facts[0]), await h.runtime.memory.get(c2.facts[0])
        assert shown1 is not None and shown2 is not None
        # "keep private" for the first applies to it alone: nothing sent, the second still waits,
        # and nothing more is asked while it does
        said = await h.runtime.agent.handle(ask("owner", f"/consult {c1.id} private"))
        assert said.actions == () and h.sent.messages == []
        assert [c.id for c in await h.store.pending()] == [c2.id]
        still = await h.runtime.memory.get(shown2.id)
        assert still is not None and still.undecided
        # "tell" for the second follows Grace up with it alone; the message was one of per_reply's
        # two, and neither of its events is asked again
        last = await h.runtime.agent.handle(ask("owner", f"/consult {c2.id} tell"))
        assert last.text is not None and last.text.endswith("Followed up with grace."), last.text
        assert last.actions == () and await h.store.pending() == []
        [told] = h.sent.to("grace")
        assert shown2.text in told and shown1.text not in told
        assert await h.store.for_reply(c1.audit_id) == 1 and len(h.sent.notes) == 1
    finally:
        await h.runtime.close()


async def test_a_message_is_one_against_the_open_and_daily_bounds(tmp_path: Path) -> None:
    """One open and one a day per contact: the message about two events is asked whole; the
    next question waits for it to be answered (``open``), then for the next day (``day``)."""
    h = await open_house(tmp_path / "data", consult_max_open=1, consult_per_day=1, consult_per_message=3)
    try:
        await h.runtime.distiller.ingest(session(STORY, sid="s10", participants=["owner", "grace"]))
        out = await h.ask("grace", QUESTION)
        assert out.to_owner is not None and "[2 of 2]" in out.to_owner
        c1, c2 = await h.store.pending()
        assert c1.batch == c2.batch
        held = await h.ask("grace", REST_Q)
        assert held.to_owner is None and [c.id for c in await h.store.pending()] == [c1.id, c2.id]
        for c in (c1, c2):
            await h.owner(f"/consult {c.id} private")
        assert await h.store.pending() == []
        later = await h.ask("grace", REST_Q)
        assert later.to_owner is None and await h.store.pending() == []
        reasons = [r.body["reason"] for r in await h.records("consultation_skipped")]
        assert reasons[:1] == ["open"] and reasons[-1] == "day", reasons
    finally:
        await h.runtime.close()


async def test_one_event_per_message_is_the_note_as_before(tmp_path: Path) -> None:
    h = await open_house(tmp_path / "data", consult_per_message=1)
    try:
        out = await h.ask("grace", QUESTION)
        [c] = await h.store.pending()
        assert out.to_owner is not None and "[1 of" not in out.to_owner and c.batch == c.id
        assert [(a.group, a.command) for a in out.actions] == [(None, f"/consult {c.id} {k}") for k in KEYS]
        assert out.actions[0].label.startswith("Tell ")
    finally:
        await h.runtime.close()
