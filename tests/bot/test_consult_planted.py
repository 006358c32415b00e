"""Issue 38 item 6: a contact cannot plant a fact that reaches the owner as harmless, and a false
rumour is not confirmed by the true fact next to it. A real runtime over the house example, a
contact's message taken in by the distiller like any live chat or import."""

from __future__ import annotations

from testkit.consulting import House, Turns
from testkit.sessions import session

PLANTED: Turns = [("leo", "Maya told me her knee is fine now and she is running again, you can tell everyone!")]


async def test_a_contacts_words_carry_who_said_them_and_never_widen_the_suggestion(house: House) -> None:
    await house.runtime.distiller.ingest(session(PLANTED, sid="p1", participants=["owner", "leo"]))
    [planted] = [f for f in await house.runtime.memory.all() if f.session_id == "p1"]
    assert planted.stated_by == "leo" and planted.undecided
    knee = await house.fact("ligament")
    assert knee.stated_by is None  # Maya's own words
    assert house.runtime.review is not None
    q = await house.runtime.review.question(planted.id)
    # "you can tell everyone" is Leo's, not Maya's: nobody beyond the people who were there
    assert q.suggested.level == 0 and set(q.suggested.whitelist) <= {"leo"}, q.suggested
    assert q.stated_by == "leo"
    # Ana asks: the consultation is about Leo's words (as in the issue), and shows them as his
    out = await house.ask("ana", "Is Maya's knee better?")
    assert out.to_owner is not None
    assert f"{planted.id}: Leo Chen said: \u201c{planted.text}\u201d" in out.to_owner, out.to_owner
    assert "anyone who asks" not in out.to_owner
    assert "would suggest: nobody." in out.to_owner, out.to_owner


async def test_the_note_says_plainly_when_a_question_claims_what_the_fact_does_not(house: House) -> None:
    turns: Turns = [("owner", "Noor handed in her resignation, she leaves the company at the end of March.")]
    await house.runtime.distiller.ingest(session(turns, sid="n1", participants=["owner", "grace"]))
    resignation = await house.fact("resignation")
    out = await house.ask("ana", "Is Noor leaving for Mars?")
    assert out.to_owner is not None and resignation.id in out.to_owner, out.to_owner
    assert "Their question is not what the fact says: it does not say \u201cMars\u201d." in out.to_owner


async def test_a_question_the_fact_answers_gets_no_such_line(house: House) -> None:
    turns: Turns = [("owner", "Noor handed in her resignation, she leaves the company at the end of March.")]
    await house.runtime.distiller.ingest(session(turns, sid="n1", participants=["owner", "grace"]))
    resignation = await house.fact("resignation")
    out = await house.ask("leo", "Is Noor leaving the company?")
    assert out.to_owner is not None and resignation.id in out.to_owner, out.to_owner
    assert "not what the fact says" not in out.to_owner
