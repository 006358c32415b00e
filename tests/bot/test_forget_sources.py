"""/forget erases a fact's source turns too: the chat message it was distilled from is in no
file of the data folder afterwards, and the rest of its session is still recalled."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.runtime import Runtime
from epmem.ingest import read_export
from epmem.ingest.apply import write_sessions
from epmem.memory.facts import Fact
from epmem.policy.model import OWNER_ID
from epmem.memory.sessions import Message, build_sessions, parse_source_ref, source_ref
from testkit.house import house_runtime
from testkit.runtime import ask

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ingest"


def files_with(folder: Path, needle: bytes) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes()]


@pytest.fixture
async def imported(tmp_path: Path) -> AsyncIterator[Runtime]:
    """The Telegram fixture export imported and distilled, as `epmem ingest` does it."""
    runtime = await house_runtime(tmp_path / "data", load=False, policy_file=FIXTURES / "policy.yaml")
    try:
        assert runtime.conversations is not None and runtime.distiller is not None
        sessions = read_export(FIXTURES / "telegram", runtime.policy, None)
        await write_sessions(runtime.conversations, sessions)
        for session in sessions:
            await runtime.distiller.ingest(session, background=False)
        yield runtime
    finally:
        await runtime.close()


async def fact_about(runtime: Runtime, words: str) -> str:
    found = [f for f in await runtime.memory.all() if words in f.text]
    assert len(found) == 1 and found[0].source_turns, found
    return found[0].id


async def test_forget_erases_the_source_turn_and_keeps_the_rest_of_the_session(imported: Runtime) -> None:
    data = imported.settings.data_dir
    mri = await fact_about(imported, "MRI")
    letter = await fact_about(imported, "referral letter")
    assert files_with(data, b"MRI is booked")  # the grep can see the turn while it is there
    reply = (await imported.agent.handle(ask("owner", f"/forget {mri}"))).text or ""
    assert reply.startswith(f"Erased {mri} and their vectors; erased 1 source turn"), reply
    assert files_with(data, b"MRI is booked") == []
    assert imported.conversations is not None and imported.retriever is not None
    got = await imported.retriever.retrieve("did the clinic call back about the knee scan?")
    assert got.turns and got.turns[0].payload["msg_id"] == "101"  # the question turn is still there
    # the other fact of that session still points at its own turn (indices are kept)
    source = (await imported.memory.get(letter)).source_turns  # type: ignore[union-attr]
    parsed = parse_source_ref(source[0])
    assert parsed is not None
    session_id, index = parsed
    turns = await imported.store.scroll("turns", {"session_id": session_id})
    assert {int(t.payload["index"]): t.payload["text"] for t in turns}[index].endswith("Here's the referral letter.")
    assert len(turns) == 3


async def test_forget_erases_every_copy_of_a_group_message(imported: Runtime) -> None:
    """An owner message to two people of a group sits in both two-party sub-sessions."""
    data = imported.settings.data_dir
    at = datetime(2026, 3, 5, 18, 0, tzinfo=UTC)
    said = [
        ("alex", "Alex Rivera", "Anyone free on Friday?"),
        ("priya", "Priya Nair", "I might be."),
        (OWNER_ID, "Sam Rivera", "Alex, Priya: the surprise party for Noor moved to Friday."),
    ]
    sessions = build_sessions(
        Message(
            platform="telegram",
            chat_id="-42",
            chat_kind="group",
            msg_id=str(i),
            speaker=who,
            speaker_name=name,
            text=text,
            time=at + timedelta(minutes=i),
            chat_title="Climbing",
        )
        for i, (who, name, text) in enumerate(said, start=1)
    )
    assert imported.conversations is not None
    await write_sessions(imported.conversations, sessions)
    copies = [(s.id, t.index) for s in sessions for t in s.turns if "surprise party" in t.text]
    assert len(copies) == 2  # the premise: one message, two sub-sessions
    await imported.memory.add(
        [
            Fact(
                id="party",
                text="The surprise party for Noor moved to Friday.",
                event_id="e-party",
                session_id=copies[0][0],
                source_turns=[source_ref(*copies[0])],
            )
        ]
    )
    assert len(files_with(data, b"surprise party for Noor moved")) >= 1
    reply = (await imported.agent.handle(ask("owner", "/forget party"))).text or ""
    assert reply.startswith("Erased party and their vectors; erased 2 source turns"), reply
    assert files_with(data, b"surprise party") == []
    assert files_with(data, b"Anyone free on Friday")  # the rest of the chat is kept
