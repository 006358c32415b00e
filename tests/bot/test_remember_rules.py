"""/remember goes through the same extraction and fail-closed rules as an imported chat.

Each case failed on the code before issue 9 (commit 702941f): the note was stored word for word
under a keyword category and told to whoever asked. Real runtime: Qdrant Edge, SQLite, MiniLM.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from epmem.policy.model import Policy

from bot.config import Settings
from bot.runtime import Runtime
from testkit.runtime import ask

POLICY = Policy.model_validate(
    {
        "owner": {"name": "Sam Reed"},
        "contacts": {
            "tom": {"name": "Tom Hart", "level": 1, "domain": "life", "relationship": "brother"},
            "kira": {"name": "Kira Lee", "level": 1, "domain": "life", "relationship": "partner"},
            "alex": {"name": "Alex Moor", "level": 2, "domain": "life", "relationship": "sailing friend"},
        },
        "categories": {
            "health": {"level": 1, "domain": "life", "keywords": ["doctor", "surgery"]},
            "career": {"level": 1, "domain": "life", "keywords": ["interview", "job"]},
            "hobbies": {"level": 4, "keywords": ["sailing", "boat", "sailboat", "hiking"]},
            "money": {"level": 0, "keywords": ["salary", "debt"]},
        },
        "default_category": "hobbies",
    }
)


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    rt = await Runtime.open(Settings(data_dir=tmp_path), policy=POLICY)
    try:
        yield rt
    finally:
        await rt.close()


async def owner(rt: Runtime, text: str) -> str:
    return (await rt.agent.handle(ask("owner", text))).text or ""


async def reply(rt: Runtime, who: str, question: str) -> str:
    return (await rt.agent.handle(ask(who, question))).text or ""


async def test_do_not_tell_anyone_is_an_instruction_and_keeps_the_note_private(runtime: Runtime) -> None:
    said = await owner(runtime, "/remember Do not tell anyone: I am seeing a therapist called Dr Okafor")
    assert "Remembered" in said
    facts = await runtime.memory.all()
    assert len(facts) == 1
    fact = facts[0]
    assert "tell" not in fact.text.casefold() and "Okafor" in fact.text
    assert fact.effective_level() == 0 and fact.whitelist == []
    for who in ("unknown-stranger", "kira", "tom"):
        answer = await reply(runtime, who, "Is Sam seeing a therapist? Who is Dr Okafor?")
        assert "Okafor" not in answer and "therapist" not in answer.casefold()
        assert "tell anyone" not in answer.casefold()


async def test_do_not_tell_tom_shuts_out_tom_only(runtime: Runtime) -> None:
    await owner(runtime, "/remember I have a job interview at Northwind next Tuesday, do not tell Tom")
    (fact,) = await runtime.memory.all()
    assert fact.blacklist == ["tom"] and "tell" not in fact.text.casefold()
    question = "Does Sam have a job interview coming up?"
    assert "Northwind" not in await reply(runtime, "tom", question)
    # closed until the owner says: Kira's question asks the owner, who opens it to people like her
    asked = await runtime.agent.handle(ask("kira", question))
    asked.delivered()  # as a connector does: the look for what to consult about starts now
    await runtime.agent.later.drain()
    assert "Northwind" not in (asked.text or "")
    assert runtime.owner.consultations is not None
    [consultation] = await runtime.owner.consultations.store.pending()
    assert "Northwind" in await owner(runtime, "/consults")
    await owner(runtime, f"/consult {consultation.id} like")
    # the same fact is told to someone the note did not shut out: the test can tell the difference
    assert "Northwind" in await reply(runtime, "kira", question)
    assert "Northwind" not in await reply(runtime, "tom", question)


async def test_a_cover_instruction_becomes_a_cover_never_a_public_truth(runtime: Runtime) -> None:
    await owner(
        runtime,
        "/remember Between us, I'm thinking of selling the sailboat. Don't tell Alex. "
        "If anyone asks, just say the boat needs repairs.",
    )
    facts = await runtime.memory.all()
    assert not any("asks" in f.text.casefold() or "just say" in f.text.casefold() for f in facts)
    truth = next(f for f in facts if f.version == "truth")
    cover = next(f for f in facts if f.version == "cover")
    assert "selling" in truth.text and truth.effective_level() == 0 and "alex" in truth.blacklist
    assert cover.covers == truth.id and cover.event_id == truth.event_id and "repairs" in cover.text
    for who in ("unknown-stranger", "alex", "kira"):
        answer = await reply(runtime, who, "What's going on with Sam's boat?")
        assert "asks" not in answer.casefold() and "just say" not in answer.casefold()
        assert "selling" not in answer.casefold()
