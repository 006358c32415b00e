"""/forget erases a fact's source turns too: the chat message it was distilled from is in no
file of the data folder afterwards, and the rest of its session is still recalled."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.runtime import Runtime
from epmem.ingest import read_export
from epmem.ingest.apply import write_sessions
from tests.auxil.house import house_runtime
from tests.auxil.runtime import ask

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
    session_id, _, index = source[0].rpartition(":")
    turns = await imported.store.scroll("turns", {"session_id": session_id})
    assert {int(t.payload["index"]): t.payload["text"] for t in turns}[int(index)].endswith("Here's the referral letter.")
    assert len(turns) == 3


async def test_forget_erases_every_copy_of_a_group_message(imported: Runtime) -> None:
    data = imported.settings.data_dir
    knee = await fact_about(imported, "knee needs a rest")
    assert files_with(data, b"my knee needs a rest")
    reply = (await imported.agent.handle(ask("owner", f"/forget {knee}"))).text or ""
    assert "source turn" in reply, reply
    assert files_with(data, b"my knee needs a rest") == []
    assert files_with(data, b"bouldering gym")  # the question before it is kept
