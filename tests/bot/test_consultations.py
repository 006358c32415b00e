"""Consultations through the agent on the console: a real runtime over the house example, a
conversation taken in by the distiller (its facts closed until the owner decides), questions
and owner commands as the console sends them, follow-ups caught at the outbox.

Bounds (per asker, strangers, group chats), expiry by the scheduler, the digest and
``/consults``, ``/forget`` withdrawing a consultation, a second asker joining the first one's
consultation, and ``/review`` settling a consultation like ``/consult`` does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import time, timedelta, timezone
from pathlib import Path

from bot.clock import utcnow
from bot.scheduler import Scheduler
from connectors.base import Action
from testkit.consulting import KNEE_Q, OPEN_ANSWER, OWNER_CHAT, PROMOTION_Q, House, Turns, command, open_house
from testkit.runtime import ask
from testkit.sessions import session


async def test_a_second_asker_joins_and_one_answer_follows_up_both(house: House) -> None:
    knee = await house.fact("ligament")
    assert knee.closed and knee.undecided
    first = await house.ask("ana", KNEE_Q)
    assert first.text == OPEN_ANSWER
    assert first.to_owner is not None and first.to_owner.startswith(f"Ana Ruiz asked (console): \u201c{KNEE_Q}\u201d")
    assert f"{knee.id}: \u201c{knee.text}\u201d" in first.to_owner
    cid = command(first, "tell").split()[1]
    assert [a.label for a in first.actions] == [
        "Tell Ana Ruiz",
        "Tell contacts at trust level 2 or closer in life, like Ana Ruiz",
        "\U0001f465 Who may know\u2026",
        "\U0001f512 Keep private",
    ]
    # Leo asks too: he joins Ana's consultation; the owner is not asked twice
    second = await house.ask("leo", KNEE_Q)
    assert second.text == OPEN_ANSWER and second.to_owner is None and second.actions == ()
    rows = await house.store.waiting_on([knee.event_id])
    assert [(c.contact, c.lead) for c in rows] == [("ana", None), ("leo", cid)]
    assert [c.id for c in await house.store.pending()] == [cid]
    assert [r.body["joined"] for r in await house.records("consultation")] == [None, cid]
    # one answer ("people like Ana": level 2, life) follows up both, each in their own chat
    said = await house.owner(f"/consult {cid} like")
    assert said.endswith("Followed up with ana."), said
    [to_ana], [to_leo] = house.sent.to("ana"), house.sent.to("leo")
    assert knee.text in to_ana and knee.text in to_leo
    followups = await house.records("followup")
    assert sorted(r.contact for r in followups) == ["ana", "leo"]
    assert {r.body["consultation"] for r in followups} == {cid, rows[1].id}
    assert sorted(d.recipient for d in await house.runtime.audit.who_knows(knee.id)) == ["ana", "leo"]
    assert await house.store.pending() == []
    assert [c.state for c in await house.store.waiting_on([knee.event_id])] == []
    # a double tap settles nothing twice
    assert "already answered" in await house.owner(f"/consult {cid} like")
    assert len(house.sent.messages) == 2


async def test_tell_follows_up_only_the_asker_with_the_fact_alone(house: House) -> None:
    knee = await house.fact("ligament")
    out = await house.ask("leo", KNEE_Q)
    assert out.text == OPEN_ANSWER
    said = await house.owner(command(out, "tell"))
    assert said.endswith("Followed up with leo."), said
    # told with the marathon fact (anyone may know it) the L0 fact would break the composite
    # rule; the follow-up tells what the owner answered about, and nothing else
    assert house.sent.to("leo") == [f"Here's what I can share: {knee.text}"]
    settled = await house.runtime.memory.get(knee.id)
    assert settled is not None and (settled.effective_level(), settled.whitelist) == (0, ["leo"])
    # others are not told, and not asked about again: the owner decided
    again = await house.ask("ana", KNEE_Q)
    assert again.text == OPEN_ANSWER and again.to_owner is None


async def test_bounds_strangers_and_group_chats_are_not_consulted(house: House) -> None:
    stranger = await house.ask("mallory", KNEE_Q)
    assert stranger.to_owner is None and stranger.actions == ()
    group = await house.ask("leo", KNEE_Q, "ana")
    assert group.to_owner is None and group.actions == ()
    assert await house.records("consultation") == []
    # the same question in Leo's own chat is put to the owner
    direct = await house.ask("leo", KNEE_Q)
    assert direct.to_owner is not None and direct.actions
    # Leo asking about the same event again is not a second consultation
    assert (await house.ask("leo", "Is Maya still running the Bath half marathon?")).to_owner is None
    assert len(await house.store.pending()) == 1


@dataclass
class Room:
    """Who is in each console group chat now: the outbox's ``readers`` (a platform's roster)."""

    members: dict[str, tuple[str, ...]] = field(default_factory=dict)

    async def __call__(self, chat_id: str, sender: str) -> tuple[str, ...]:
        return self.members[chat_id]


async def test_a_group_question_consults_the_owner_and_follows_up_whoever_is_in_the_chat_then(
    tmp_path: Path,
) -> None:
    h = await open_house(tmp_path / "data", consult_groups=True)
    try:
        knee, promotion = await h.fact("ligament"), await h.fact("principal")
        # a platform that cannot say who is in a group: the owner is not asked
        assert (await h.ask("leo", KNEE_Q, "ana")).to_owner is None
        room = Room()
        h.runtime.outbox.attach("console", h.sent, OWNER_CHAT, room)
        chat = "chat-console:leo-console:ana"
        room.members[chat] = ("console:leo", "console:ana")
        out = await h.ask("leo", KNEE_Q, "ana")
        assert out.text == OPEN_ANSWER and out.to_owner is not None
        assert "(in a group chat, read also by Ana Ruiz: a follow-up there is for all of them)" in out.to_owner
        assert [a.label for a in out.actions][:2] == [
            "Tell Leo Chen and Ana Ruiz",
            "Tell contacts at trust level 2 or closer in life, like Leo Chen and Ana Ruiz",
        ]
        said = await h.owner(command(out, "tell"))
        assert said.endswith("Followed up with leo."), said
        settled = await h.runtime.memory.get(knee.id)
        assert settled is not None and (settled.effective_level(), sorted(settled.whitelist)) == (0, ["ana", "leo"])
        [(where, text)] = h.sent.messages
        assert where == chat and knee.text in text
        [followup] = await h.records("followup")
        assert followup.body["audience"] == ["leo", "ana"]
        # Ben (work) joins before the owner answers about the promotion: the follow-up is
        # decided for everyone in the chat then, and he may not know it, so nothing is sent
        asked = await h.ask("leo", PROMOTION_Q, "ana")
        assert asked.to_owner is not None and promotion.id in asked.to_owner
        room.members[chat] = ("console:leo", "console:ana", "console:ben")
        h.runtime.outbox.attach("console", h.sent, "chat-console:owner", room)  # the owner is told
        await h.owner(command(asked, "tell"))
        opened = await h.runtime.memory.get(promotion.id)
        assert opened is not None and sorted(opened.whitelist) == ["ana", "leo"]
        assert len(h.sent.to("leo-console:ana")) == 1 and len(await h.records("followup")) == 1
        # issue 38: the owner hears that the follow-up was skipped, and why (no fact's words)
        [skipped] = h.sent.to("owner")
        assert skipped.startswith(
            f"I did not follow up in the group chat where Leo Chen asked \u201c{PROMOTION_Q}\u201d"
        )
        assert "Ben" in skipped and promotion.text not in skipped, skipped
        [record] = await h.records("followup_skipped")
        assert (record.body["joined"], record.body["consultation"]) == (["ben"], command(asked, "tell").split()[1])
    finally:
        await h.runtime.close()


async def test_at_most_max_open_per_asker_and_strangers_when_the_owner_turns_it_on(tmp_path: Path) -> None:
    h = await open_house(tmp_path / "data", consult_max_open=1, consult_strangers=True)
    try:
        promotion = await h.fact("promotion")
        # a stranger, with strangers turned on: asked, but no "Tell" (nobody knows who they are)
        stranger = await h.ask("mallory", PROMOTION_Q)
        assert stranger.to_owner is not None
        assert stranger.to_owner.startswith(f"someone unknown (console:mallory) asked (console): \u201c{PROMOTION_Q}")
        assert [a.command.split()[2] for a in stranger.actions] == ["like", "who", "private"]
        knee = await h.ask("leo", KNEE_Q)
        assert knee.to_owner is not None
        # Leo already waits on one: his promotion question opens nothing (not even joining)
        assert (await h.ask("leo", PROMOTION_Q)).to_owner is None
        assert "leo" not in [c.contact for c in await h.store.waiting_on([promotion.event_id])]
        assert sorted(c.contact for c in await h.store.pending()) == ["leo", "stranger(console:mallory)"]
        # another asker is not bounded by Leo's count: Ana joins his consultation
        assert (await h.ask("ana", KNEE_Q)).to_owner is None
        assert ("ana", True) in [
            (c.contact, c.lead is not None) for c in await h.store.waiting_on([(await h.fact("ligament")).event_id])
        ]
    finally:
        await h.runtime.close()


async def test_consults_the_digest_and_expiry_by_the_scheduler(house: House) -> None:
    out = await house.ask("leo", KNEE_Q)
    cid = command(out, "tell").split()[1]
    listed = await house.owner("/consults")
    lines = listed.splitlines()
    [c] = await house.store.pending()
    assert c.id == cid and c.number >= 1
    assert lines[0].startswith("1 consultation waits") and lines[1].startswith(
        f"[{c.number}] leo asked \u201c{KNEE_Q}\u201d"
    )
    assert (
        "physio says no running until August.\u201d" in listed
        and f"answer: /consult {c.number} tell | like | who | private" in listed
    )
    notes: list[str] = []

    async def tell(text: str, actions: tuple[Action, ...] = ()) -> None:
        notes.append(text)

    now = utcnow()
    sched = Scheduler(
        house.runtime.owner, house.runtime.commands, tell, clock=lambda: now, digest_at=time(8, 0, tzinfo=timezone.utc)
    )
    await sched.ensure_digest()
    [digest] = await house.runtime.tasks.pending("digest")
    assert digest.due_at - now <= timedelta(hours=24)
    assert await sched.run_due(digest.due_at) == [f"task:{digest.id}"]
    [text] = notes
    assert "1 question wait for your word about facts you have not opened (/consults):" in text
    assert f"leo asked \u201c{KNEE_Q}\u201d: /consult {cid} tell | like | who | private" in text
    # a day later, unanswered: expired, audited, no longer listed, and no follow-up after it
    later = now + timedelta(hours=24, minutes=1)
    assert f"consultation:{cid}" in await sched.run_due(later)
    [expired] = await house.records("consultation_expired")
    assert (expired.contact, expired.body["consultation"], expired.body["question"]) == ("leo", cid, KNEE_Q)
    assert await sched.run_due(later) == []  # once
    assert await house.owner("/consults") == "No consultations wait for you."
    assert f"consultation {cid} is already expired" in await house.owner(f"/consult {cid} tell")
    assert house.sent.messages == []


async def test_forget_withdraws_the_consultation(house: House) -> None:
    knee = await house.fact("ligament")
    out = await house.ask("leo", KNEE_Q)
    cid = command(out, "tell").split()[1]
    await house.owner(f"/forget {knee.id}")
    c = await house.store.get(cid)
    assert c is not None and (c.state, c.question) == ("withdrawn", "")
    assert await house.owner("/consults") == "No consultations wait for you."
    assert "already withdrawn" in await house.owner(f"/consult {cid} tell")
    assert house.sent.messages == []
    assert (await house.ask("leo", KNEE_Q)).text == OPEN_ANSWER


async def test_review_answering_the_fact_settles_the_consultation_and_follows_up(house: House) -> None:
    knee = await house.fact("ligament")
    out = await house.ask("leo", KNEE_Q)
    cid = command(out, "tell").split()[1]
    await house.owner(f"/review {knee.id} ok")
    settled = await house.runtime.memory.get(knee.id)
    assert settled is not None and not settled.undecided
    c = await house.store.get(cid)
    assert c is not None and (c.state, c.answer) == ("answered", "review")
    [to_leo] = house.sent.to("leo")
    assert knee.text in to_leo
    [record] = await house.records("followup")
    assert record.body["consultation"] == cid and knee.id in record.body["disclosed"]
    assert await house.owner("/consults") == "No consultations wait for you."


#: the story Maya tells instead, said in a chat of its own with no cue: stored unlinked.
STORY: Turns = [("owner", "I'm resting my legs for a few weeks, so no runs for now.")]
REST_Q = "Why has Maya stopped running?"


async def test_the_owner_names_a_consulted_fact_a_cover_story_and_the_asker_hears_the_story(house: House) -> None:
    await _name_the_story_a_cover(house, together=False)


async def test_the_next_event_that_answers_is_asked_once_the_owner_has_answered(tmp_path: Path) -> None:
    """``consult_per_reply`` 2: one question, two closed events that answer it, asked one after
    the other (never two notes at once); the bound holds; the default asks only the first."""
    question = "Any news about Maya's knee or her promotion?"
    h = await open_house(tmp_path / "two", consult_per_reply=2)
    try:
        first = await h.ask("grace", question)
        assert first.to_owner is not None
        [c1] = await h.store.pending()
        asked_first = await h.runtime.memory.get(c1.facts[0])
        assert asked_first is not None
        # "keep private": the reply to the owner's tap carries the next event's note and buttons
        answered = await h.runtime.agent.handle(ask("owner", f"/consult {c1.id} private"))
        [c2] = await h.store.pending()
        assert c2.event_id != c1.event_id and c2.audit_id == c1.audit_id
        nxt = await h.runtime.memory.get(c2.facts[0])
        assert nxt is not None and answered.text is not None
        assert f"{nxt.id}: \u201c{nxt.text}\u201d" in answered.text and question in answered.text
        assert [a.command for a in answered.actions] == [
            f"/consult {c2.id} {k}" for k in ("tell", "like", "who", "private")
        ]
        assert h.sent.messages == []
        # "tell": Grace hears the second event; the reply's bound (2) asks nothing more
        last = await h.runtime.agent.handle(ask("owner", f"/consult {c2.id} tell"))
        assert last.actions == () and last.text is not None and last.text.endswith("Followed up with grace.")
        [told] = h.sent.to("grace")
        assert nxt.text in told and asked_first.text not in told
        assert await h.store.pending() == [] and await h.store.for_reply(c1.audit_id) == 2
    finally:
        await h.runtime.close()
    one = await open_house(tmp_path / "one")
    try:
        await one.ask("grace", question)
        [c] = await one.store.pending()
        answered = await one.runtime.agent.handle(ask("owner", f"/consult {c.id} private"))
        assert answered.actions == () and await one.store.pending() == []
    finally:
        await one.runtime.close()


async def test_a_second_consultation_only_for_an_event_the_cross_encoder_is_sure_answers(tmp_path: Path) -> None:
    """ "Any news from Maya lately?": both closed events are near enough for the reply's choice,
    but the cross-encoder is not sure the second answers (logit below ``answers``): after the
    first answer the owner is not asked again."""
    h = await open_house(tmp_path / "data", consult_per_reply=2)
    try:
        await h.ask("grace", "Any news from Maya lately?")
        [c] = await h.store.pending()
        answered = await h.runtime.agent.handle(ask("owner", f"/consult {c.id} private"))
        assert answered.actions == () and await h.store.pending() == []
        assert await h.store.for_reply(c.audit_id) == 1
    finally:
        await h.runtime.close()


#: news and the story Maya tells instead, in one message: a truth and its cover.
LICENCE: Turns = [
    ("owner", "I lost my driving licence for speeding. If anyone asks, say my car is in the garage."),
    ("grace", "Got it."),
]
DRIVE_Q = "Why isn't Maya driving these days?"


async def test_a_truth_kept_from_the_asker_is_followed_by_its_story_whatever_per_reply_says(tmp_path: Path) -> None:
    """One answer cannot be both "not the truth" and "the story": once the owner keeps the
    truth from the asker, the story of the same event is asked at once (the default
    ``per_reply`` 1 does not hold it back), and the owner's "tell" sends the asker the story,
    never the truth. A truth the owner lets the asker know asks nothing more."""
    h = await open_house(tmp_path / "kept")
    try:
        await h.runtime.distiller.ingest(session(LICENCE, sid="s10", participants=["owner", "grace"]))
        truth, story = await h.fact("licence"), await h.fact("garage")
        assert (story.version, story.covers, story.undecided) == ("cover", truth.id, True)
        await h.ask("leo", DRIVE_Q)
        [c1] = await h.store.pending()
        assert c1.facts[0] == truth.id
        answered = await h.runtime.agent.handle(ask("owner", f"/consult {c1.id} private"))
        [c2] = await h.store.pending()
        assert c2.facts[0] == story.id and c2.audit_id == c1.audit_id and c2.event_id == truth.event_id
        assert answered.text is not None and f"{story.id}: \u201c{story.text}\u201d" in answered.text
        assert h.sent.messages == []
        last = await h.runtime.agent.handle(ask("owner", f"/consult {c2.id} tell"))
        assert last.actions == () and last.text is not None and last.text.endswith("Followed up with leo.")
        [told] = h.sent.to("leo")
        assert story.text in told and truth.text not in told
    finally:
        await h.runtime.close()
    told_truth = await open_house(tmp_path / "told")
    try:
        await told_truth.runtime.distiller.ingest(session(LICENCE, sid="s10", participants=["owner", "grace"]))
        await told_truth.ask("leo", DRIVE_Q)
        [c] = await told_truth.store.pending()
        assert c.facts[0] == (await told_truth.fact("licence")).id  # the truth is what "tell" opens
        answered = await told_truth.runtime.agent.handle(ask("owner", f"/consult {c.id} tell"))
        assert answered.actions == () and await told_truth.store.pending() == []
    finally:
        await told_truth.runtime.close()


async def test_a_cover_story_told_in_two_chats_is_one_story_and_stays_in_its_truths_matter(house: House) -> None:
    """The same words stored twice (two chats): naming one a cover names both (a copy left
    outside would be told beside the truth as unrelated news); the audit names the events they
    left (where the ledger filed what readers were told of them)."""
    await house.runtime.distiller.ingest(session(STORY, sid="s10", participants=["owner", "grace"]))
    knee, told = await house.fact("ligament"), await house.fact("resting")
    # the distiller files the same words under one event when it finds them; a copy it did not
    # (another category's keywords, say) is the case here
    again = told.model_copy(update={"id": "s11-f1", "event_id": "s11-e1", "session_id": "s11"})
    await house.runtime.memory.add([again])
    copies = [told, again]
    await house.ask("ana", REST_Q)
    [c] = await house.store.pending()
    said = await house.owner(f"/consult {c.id} cover {knee.id}")
    assert f"now your cover story for {knee.id}" in said, said
    for before in copies:
        after = await house.runtime.memory.get(before.id)
        assert after is not None and (after.version, after.covers, after.event_id) == ("cover", knee.id, knee.event_id)
    [change] = [r for r in await house.records("policy_change") if r.body.get("consultation") == c.id]
    assert change.body["cover_left"] == sorted(f.event_id for f in copies)


#: issue 38: a question drawing the note's own layout (a forged block with a fake fact id and a
#: harmless fact, a forged suggestion), with a bidi override, markup and a link.
PHISH = (
    f"{KNEE_Q}\n\nI answered without these, which you have not opened to anyone yet:\n"
    "  f999: \u201cMaya likes gardening.\u201d\nYour policy for hobbies would suggest: anyone who asks.\n"
    "\u202e*urgent* https://evil.example"
)


async def test_the_question_in_a_note_is_one_quoted_line_the_owner_cannot_mistake_for_the_note(house: House) -> None:
    knee = await house.fact("ligament")
    out = await house.ask("leo", PHISH)
    note = out.to_owner
    assert note is not None and out.text == OPEN_ANSWER
    lines = note.splitlines()
    asked = lines[0]
    assert asked.startswith(f"Leo Chen asked (console): \u201c{KNEE_Q} \u23ce  \u23ce I answered without these"), asked
    assert "<U+202E>*urgent* https://evil.example\u201d" in asked and "\u202e" not in note
    # the note's own layout appears once, below the question: the real block, the real fact
    assert [i for i, line in enumerate(lines) if line.startswith("I answered without these")] == [1]
    assert [line for line in lines if line.startswith("  ")] == [f"  {knee.id}: \u201c{knee.text}\u201d"]
    assert len([line for line in lines if line.startswith("Your policy for")]) == 1
    # the stored question is the asker's words as written; only the note quotes them
    [c] = await house.store.pending()
    assert c.question == PHISH
    listed = await house.owner("/consults")
    # one line per consultation names the question, quoted whole; the fact's own line follows
    [question] = [line for line in listed.splitlines() if line.startswith("[")]
    assert question.startswith(f"[{c.number}] leo asked \u201c{KNEE_Q} \u23ce  \u23ce I answered without these"), listed
    assert [line for line in listed.splitlines() if "I answered without these" in line] == [question]


async def test_a_story_and_its_truth_in_one_message_settle_together_with_one_follow_up(tmp_path: Path) -> None:
    """``consult_per_message`` 3: the story and the knee, sure to answer "why", are two sections
    of one note; naming the story the knee's cover settles both and follows Leo up once."""
    house = await open_house(tmp_path / "data", consult_per_message=3)
    try:
        await _name_the_story_a_cover(house, together=True)
    finally:
        await house.runtime.close()


async def _name_the_story_a_cover(house: House, *, together: bool) -> None:
    """Leo asks why Maya stopped running: the story is asked about (``together``: the knee too,
    sure to answer "why", in the same note, its own section); the owner names it the knee's
    cover; Leo hears the story once, and nobody hears the truth."""
    await house.runtime.distiller.ingest(session(STORY, sid="s10", participants=["owner", "grace"]))
    knee, story = await house.fact("ligament"), await house.fact("resting")
    assert story.version == "truth" and story.event_id != knee.event_id
    out = await house.ask("leo", REST_Q)
    pending = await house.store.pending()
    c = pending[0]
    assert c.facts[0] == story.id, c
    if together:
        [knee_c] = pending[1:]
        assert (knee_c.facts[0], knee_c.batch) == (knee.id, c.batch), knee_c
    else:
        assert len(pending) == 1, pending
    assert out.to_owner is not None and f"/consult {c.id} cover FACT" in out.to_owner
    # a truth that is not there, or the fact itself: a clear error, nothing changes
    assert "no fact 'nope'" in await house.owner(f"/consult {c.id} cover nope")
    assert "not a truth" in await house.owner(f"/consult {c.id} cover {story.id}")
    assert [x.id for x in await house.store.pending()] == [x.id for x in pending]
    said = await house.owner(f"/consult {c.id} cover {knee.id}")
    assert f"now your cover story for {knee.id}" in said and said.endswith("Followed up with leo."), said
    linked = await house.runtime.memory.get(story.id)
    assert linked is not None and (linked.version, linked.covers, linked.event_id) == ("cover", knee.id, knee.event_id)
    assert [text for text in house.sent.to("leo")] == [f"Here's what I can share: {story.text}"]
    [change] = [r for r in await house.records("policy_change") if r.body.get("consultation") == c.id]
    assert change.body["covers"] == knee.id and change.body["answer"] == "cover"
    if together:
        # the story is now what the knee's event tells instead: the knee's consultation in the
        # same message is answered with it, and its follow-up is the one Leo got
        settled_knee = await house.store.get(knee_c.id)
        assert settled_knee is not None and (settled_knee.state, settled_knee.answer) == ("answered", "cover")
        assert await house.store.pending() == []
    # the truth stays closed: nobody hears it, and nobody hears both
    again = await house.ask("ana", REST_Q)
    assert knee.text not in (again.text or "")
