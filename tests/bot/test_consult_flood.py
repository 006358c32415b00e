"""Issue 38: the consultation under attack, on a real runtime over the house example.

* The reply is handed back before anything looks at closed facts (no timing side channel):
  the consultation opens in the agent's background look (bot/consultations/after_reply.py).
* The owner cannot be flooded: the bounds per contact (all of its identities), per day, for
  strangers together; expired questions are not simply asked again; "keep private" covers the
  same news stored twice; strangers' heads-up notes are batched; the digest lists what was
  not asked (bot/consultations/bounds.py, bot/headsup.py, bot/digest.py).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from bot.digest import build_digest
from connectors.base import Outbound
from testkit.consulting import KNEE_Q, OPEN_ANSWER, House, Turns, open_house
from testkit.house import TEAM, TG
from testkit.runtime import ask
from testkit.sessions import session

#: ten closed news, each told by Maya to her sister, and a question each answers.
TOPICS: list[tuple[str, str]] = [
    ("I'm pregnant with our second child, due in October.", "Is Maya pregnant?"),
    ("We are selling the flat in Bristol next spring.", "Is Maya selling her flat?"),
    ("I have a job offer from a bank in Zurich.", "Does Maya have a job offer?"),
    ("My divorce papers were signed on Friday.", "Is Maya getting divorced?"),
    ("I owe the tax office eleven thousand pounds.", "Does Maya owe money to the tax office?"),
    ("I'm seeing a therapist for anxiety every Tuesday.", "Is Maya seeing a therapist?"),
    ("We adopted a rescue greyhound called Pip.", "Did Maya adopt a dog?"),
    ("I failed my driving test again yesterday.", "Did Maya pass her driving test?"),
    ("My father was diagnosed with diabetes.", "Is Maya's father ill?"),
    ("I'm learning Japanese for a move to Osaka.", "Is Maya learning Japanese?"),
]
LEO = ("console:leo", f"telegram:{TG['leo']}", f"slack:{TEAM}/ULEO")


async def flooded_house(data: Path, **settings: object) -> House:
    h = await open_house(data, consult_strangers=True, **settings)
    for i, (news, _) in enumerate(TOPICS):
        turns: Turns = [("owner", news), ("grace", "Oh wow, thanks for telling me.")]
        await h.runtime.distiller.ingest(session(turns, sid=f"t{i}", participants=["owner", "grace"]))
    return h


async def ask_as(h: House, identity: str, text: str) -> Outbound:
    platform = identity.split(":", 1)[0]
    out = await h.runtime.agent.handle(ask(identity, text, platform=platform))
    out.delivered()  # as a connector does once the reply is out
    if out.to_owner:  # what the connector would send the owner with the reply (heads-ups)
        h.sent.notes.append((out.to_owner, out.actions))
    await h.runtime.agent.later.drain()
    return out


def notes(h: House, since: int = 0) -> list[str]:
    return [text for text, _ in h.sent.notes[since:] if "/consult " in text]


async def test_the_reply_is_handed_back_before_closed_facts_are_looked_at(house: House) -> None:
    """Before: the second relevance pass ran inside ``handle``, so the consultation was open
    by the time the reply came back (and the reply waited for it)."""
    knee = await house.fact("ligament")
    agent = house.runtime.agent
    out = await agent.handle(ask("ana", KNEE_Q))
    assert out.text == OPEN_ANSWER and out.to_owner is None and out.actions == ()
    # the reply is back; nothing has looked at the closed facts yet
    assert await house.store.pending() == [] and house.sent.notes == []
    [reply] = await house.records("reply")
    assert "closed_would_answer" not in reply.body
    assert agent.later.running == 0
    out.delivered()  # the connector has handed the reply to the platform: only now the look
    assert agent.later.running == 1
    await agent.later.drain()
    [c] = await house.store.pending()
    assert c.event_id == knee.event_id and c.audit_id == out.audit_id
    [(note, actions)] = house.sent.notes
    assert note.startswith("Ana Ruiz asked (console)") and f"/consult {c.id} tell" in [a.command for a in actions]


async def test_ten_topics_from_one_contact_on_three_identities_and_fifty_from_strangers_stay_bounded(
    tmp_path: Path,
) -> None:
    h = await flooded_house(tmp_path / "data")
    try:
        since = datetime.now(timezone.utc) - timedelta(minutes=1)
        store = h.store
        # Leo asks about all ten, from his console, Telegram and Slack accounts in turn
        for i, (_, q) in enumerate(TOPICS):
            await ask_as(h, LEO[i % 3], q)
        first = notes(h)
        asked = [c for c in await store.pending() if c.contact == "leo"]
        assert len(first) == len(asked) == 3  # at most 3 open per contact, all identities together
        skipped = await h.records("consultation_skipped")
        assert len(skipped) == 7 and {r.body["reason"] for r in skipped} == {"open"}
        assert {r.body["asker"] for r in skipped} == {"leo"}
        # the owner keeps all three private; the same ten questions again: the day's bound (5)
        for c in asked:
            await h.owner(f"/consult {c.id} private")
        for i, (_, q) in enumerate(TOPICS):
            await ask_as(h, LEO[(i + 1) % 3], q)
        second = notes(h, len(h.sent.notes) - (len(notes(h)) - len(first)))
        assert len(notes(h)) - len(first) == 2, second
        skipped = await h.records("consultation_skipped")
        reasons = [r.body["reason"] for r in skipped]
        assert reasons.count("day") >= 5 and set(reasons) <= {"open", "day"}, reasons  # 7+ undecided, 2 asked
        leo_skipped = len(skipped)
        # ten strangers, five questions each (each a different topic the owner has not decided)
        kept = {c.question for c in asked}
        undecided = [q for _, q in TOPICS if q not in kept]
        before = len(notes(h))
        for s in range(10):
            for k in range(5):
                await ask_as(h, f"telegram:{9000 + s}", undecided[(s + k) % len(undecided)])
        stranger_rows = [c for c in await store.pending() if c.contact_id is None]
        stranger_notes = len(notes(h)) - before
        assert stranger_notes <= 2 and len([c for c in stranger_rows if c.asked_owner]) == stranger_notes
        # one heads-up note about strangers at most, however many drew deflections
        headsups = [t for t, _ in h.sent.notes if t.startswith("Heads-up") and "telegram:90" in t]
        assert len(headsups) == 1 and "1 unknown account kept drawing deflections" in headsups[0], headsups
        # the digest accounts for every question closed facts would have answered and not asked
        opened = await h.records("consultation")
        skipped = await h.records("consultation_skipped")
        strangers_skipped = [r for r in skipped if r.body.get("stranger")]
        assert len([r for r in opened if r.contact != "leo"]) + len(strangers_skipped) == 50
        waiting = h.runtime.owner.headsup.take() if h.runtime.owner.headsup is not None else []
        digest = await build_digest(
            h.runtime.audit, since, datetime.now(timezone.utc), headsups=[w.identity for w in waiting]
        )
        assert digest.not_asked == len(skipped) == leo_skipped + len(strangers_skipped)
        assert f"Not asked: {len(skipped)} questions" in digest.text
        assert f"  leo: {leo_skipped} (" in digest.text, digest.text
        assert len(waiting) == 9 and digest.headsups == 9  # the other nine strangers: in the digest
        for news, _ in TOPICS:  # no words of the facts
            assert news not in digest.text
    finally:
        await h.runtime.close()


class Now:
    """The runtime's clock, moved by the test."""

    def __init__(self) -> None:
        self.at = datetime.now(timezone.utc)

    def __call__(self) -> datetime:
        return self.at


async def test_an_expired_question_is_not_simply_asked_again(tmp_path: Path) -> None:
    """Before: after the 24 h lifetime the same question asked the owner again at once."""
    now = Now()
    h = await open_house(tmp_path / "data", clock=now)
    try:
        first = await h.ask("ana", KNEE_Q)
        assert first.to_owner is not None
        [c] = await h.store.pending()
        now.at += timedelta(hours=25)
        assert [e.id for e in await h.store.expire_due(now.at)] == [c.id]
        again = await h.ask("ana", KNEE_Q)
        assert again.text == OPEN_ANSWER and again.to_owner is None
        [skip] = await h.records("consultation_skipped")
        assert (skip.body["reason"], skip.body["event"]) == ("expired", c.event_id)
        # a week after it expired, a new question may ask again (within the bounds)
        now.at += timedelta(days=7, hours=1)
        assert (await h.ask("ana", KNEE_Q)).to_owner is not None
    finally:
        await h.runtime.close()


async def test_keep_private_covers_the_same_news_stored_in_other_events(house: House) -> None:
    """Before: the same news from three chats was asked three times, "private" each time."""
    news = "I got the offer from Bergen, I start there in September."
    turns: Turns = [("owner", news), ("grace", "Congratulations!")]
    await house.runtime.distiller.ingest(session(turns, sid="b0", participants=["owner", "grace"]))
    [told] = [f for f in await house.runtime.memory.all() if "Bergen" in f.text]
    # the same news told in two more chats in other words (cosine 0.86 and 0.87: the same news,
    # twins.SAME_NEWS, but not the review's near-copies, 0.9), stored as events of their own
    words = (
        "Maya accepted the Bergen offer, starting September.",
        "Maya got the Bergen offer, she starts in September!",
    )
    twins = [
        told.model_copy(
            update={
                "id": f"b{i}-f1",
                "event_id": f"b{i}-e1",
                "session_id": f"b{i}",
                "source_turns": [f"b{i}:0"],
                "text": text,
            }
        )
        for i, text in enumerate(words, start=1)
    ]
    await house.runtime.memory.add(twins)
    question = "Is Maya moving to Bergen?"
    asked = await house.ask("leo", question)
    assert asked.to_owner is not None
    [c] = await house.store.pending()
    await house.owner(f"/consult {c.id} private")
    again = await house.ask("leo", question)
    assert again.to_owner is None and await house.store.pending() == []
    [skip] = await house.records("consultation_skipped")
    assert skip.body["reason"].startswith("kept-private:") and skip.body["event"] != c.event_id


def test_strangers_heads_ups_are_batched_one_note_per_window() -> None:
    from bot.headsup import StrangerHeadsUp

    t = [0.0]
    batch = StrangerHeadsUp(window_s=3600, clock=lambda: t[0])
    long = "Is Maya pregnant? " * 20 + "\u202e"
    notes = [batch.add(f"telegram:{9000 + i}", "telegram", 5, long) for i in range(10)]
    assert notes[0] is not None and notes[1:] == [None] * 9
    assert notes[0].count("\n") == 1 and "\u202e" not in notes[0]
    quoted = notes[0].split("\u201c", 1)[1].rsplit("\u201d", 1)[0]
    assert len(quoted) <= 60
    t[0] = 3601.0
    later = batch.add("telegram:9100", "telegram", 5, "hello")
    assert later is not None and "10 unknown accounts" in later and later.count("\n") == 10
    assert batch.take() == []
