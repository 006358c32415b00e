"""``/story FACT WORDS``: the owner's own cover story for a closed fact, told instead of it to
whoever may not know it (bot/commands/annotations.py ``write_story``), on the console over the
house example of the consultation tests."""

from __future__ import annotations

from testkit.consulting import KNEE_Q, House, command

STORY = "Maya is taking a break from running for a few weeks."


async def test_a_story_is_told_to_whoever_may_not_know_the_truth_and_the_truth_to_who_may(house: House) -> None:
    knee = await house.fact("ligament")
    before = await house.ask("leo", KNEE_Q)  # the owner is consulted about the closed knee
    assert STORY not in (before.text or "") and "ligament" not in (before.text or "")
    assert before.to_owner is not None and f"/story {knee.id} THE STORY" in before.to_owner
    said = await house.owner(f"/story {knee.id} {STORY}")
    assert said.startswith(f"Story {knee.id}-story for {knee.id}"), said
    story = await house.runtime.memory.get(f"{knee.id}-story")
    assert story is not None
    assert (story.version, story.covers, story.event_id, story.closed) == ("cover", knee.id, knee.event_id, False)
    # the truth is still closed: Ana and a stranger hear the story, not the ligament
    for who in ("ana", "mallory"):
        out = await house.ask(who, KNEE_Q)
        assert STORY in (out.text or "") and "ligament" not in (out.text or ""), who
    # once the owner tells Leo the truth, he hears the truth, and not the story
    told = await house.owner(command(before, "tell"))
    assert told.endswith("Followed up with leo."), told
    [followup] = house.sent.to("leo")
    assert "ligament" in followup and STORY not in followup
    # asked again, he is not told the story: he may know the truth (told beside the marathon
    # fact, which anyone may know, the L0 truth is held back by the composite rule)
    again = await house.ask("leo", KNEE_Q)
    assert again.text is not None and STORY not in again.text and "marathon" in again.text
    # audited as the owner's change, without the story's words
    [change] = [r for r in await house.runtime.audit.records(kind="policy_change") if r.body["action"] == "story"]
    assert change.body["fact"] == story.id and change.body["covers"] == knee.id
    assert STORY not in str(change.body)


async def test_a_second_story_gets_its_own_id_and_bad_stories_are_refused_by_name(house: House) -> None:
    knee = await house.fact("ligament")
    await house.owner(f"/story {knee.id} {STORY}")
    second = await house.owner(f"/story {knee.id}   Maya   is resting a sore knee.")
    assert second.startswith(f"Story {knee.id}-story2 for {knee.id}"), second
    assert second.endswith(": Maya is resting a sore knee.")
    assert "cover story" in await house.owner(f"/story {knee.id}-story Another story.")
    assert "nosuch" in await house.owner("/story nosuch A story.")
    assert "at most 500 characters (501 given)" in await house.owner(f"/story {knee.id} {'x' * 501}")
    usage = await house.owner(f"/story {knee.id}")
    assert "/story FACT WORDS" in usage
    stories = [f.id for f in await house.runtime.memory.all() if f.covers == knee.id]
    assert stories == [f"{knee.id}-story", f"{knee.id}-story2"]
