"""An answer is found by the question it answers (epmem.memory.facts.Fact.context).

In a chat, an answer rarely says what it is about: Grace asks "What's the new pay like?" and Maya
answers "Base goes from 92k to 118k." Read alone, that answer is about nothing a later question
names ("How much is Maya earning at the new job?"), so Grace, who heard it, was not told it back.
The question before an answer is kept with it, read by recall and never told."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from epmem.ingest.asked import asked_before
from testkit.consulting import House, Turns, open_house
from testkit.sessions import session

PAY: Turns = [
    ("grace", "So how did the Halvorsen offer end up? What's the new pay like?"),
    ("owner", "Base goes from 92k to 118k."),
    ("grace", "Amazing!!"),
]
EARNING_Q = "How much is Maya earning at the new job?"


@pytest.fixture
async def heard(tmp_path: Path) -> AsyncIterator[House]:
    h = await open_house(tmp_path / "data", heard_it=True)
    await h.runtime.distiller.ingest(session(PAY, sid="s20", participants=["owner", "grace"]))
    try:
        yield h
    finally:
        await h.runtime.close()


async def test_an_answer_is_found_by_the_question_it_answered(heard: House) -> None:
    pay = await heard.fact("118k")
    assert pay.context == PAY[0][1] and pay.heard_by == ["grace"]
    out = await heard.ask("grace", EARNING_Q)
    assert "118k" in (out.text or ""), out.text
    assert out.to_owner is None  # she heard it: nothing to ask the owner


async def test_the_question_is_read_never_told(heard: House) -> None:
    out = await heard.ask("grace", EARNING_Q)
    assert "Halvorsen" not in (out.text or "") and "pay like" not in (out.text or "")


async def test_who_was_not_there_is_not_told_it(heard: House) -> None:
    out = await heard.ask("ana", EARNING_Q)
    assert "118k" not in (out.text or "")


@pytest.mark.parametrize(
    ("turns", "expected"),
    [
        ([("grace", "Where is the lunch?"), ("owner", "At the Brass Monkey.")], "Where is the lunch?"),
        ([("grace", "Lunch is on Sunday."), ("owner", "At the Brass Monkey.")], None),  # not a question
        ([("owner", "Where shall we eat?"), ("owner", "At the Brass Monkey.")], None),  # their own words
        ([("grace", "Where is it?"), ("owner", "Howth."), ("owner", "The Brass Monkey.")], "Where is it?"),
        ([("grace", "Where?"), ("owner", "a"), ("owner", "b"), ("owner", "c"), ("owner", "d")], None),  # 4th in a row
        ([("owner", "At the Brass Monkey.")], None),  # opens the chat
        ([("grace", "家宴在哪儿？"), ("owner", "在老地方。")], "家宴在哪儿？"),
        ([("grace", "Where? " + "x" * 400), ("owner", "There.")], ("Where? " + "x" * 400)[:300]),
    ],
)
def test_the_question_before_an_answer(turns: list[tuple[str, str]], expected: str | None) -> None:
    s = session(list(turns), participants=["owner", "grace"])
    assert asked_before(s, [len(turns) - 1]) == expected
