"""Live chats into memory the way an import goes (issue 9, item 6): what a contact tells the
bot becomes a session, then facts by the same fail-closed rules, recorded in the journal."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.runtime import Runtime
from connectors.base import Inbound
from testkit.house import house_runtime

T0 = datetime(2026, 5, 4, 18, 0, tzinfo=UTC)


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    rt = await house_runtime(tmp_path / "data")
    try:
        yield rt
    finally:
        await rt.close()


def said(who: str, text: str, minutes: float, chat: str | None = None) -> Inbound:
    return Inbound(
        platform="console",
        chat_id=chat or f"dm-{who}",
        chat_kind="direct",
        sender=f"console:{who}",
        text=text,
        audience=(f"console:{who}",),
        message_id=f"{who}-{minutes}",
        time=T0 + timedelta(minutes=minutes),
    )


async def test_what_a_contact_tells_the_bot_goes_through_the_import_stages(runtime: Runtime) -> None:
    live = runtime.live
    directory = runtime.owner.directory
    before = len(await runtime.memory.all())
    for inbound in (
        said("ana", "Hi! Is Maya around this week?", 0),
        said("ana", "Tell her my mother had a stroke and is in hospital, please keep it quiet.", 1),
        said("raj", "/allow f1 to raj", 2),  # a command: not conversation
        said("unknown-person", "Maya owes me money.", 3),  # a stranger: never kept
        said("owner", "Remind me what Leo said.", 4),
    ):  # the owner asking the bot
        live.record(inbound, directory.resolve(inbound.sender))
    await live.settle()
    assert len(await runtime.memory.all()) == before  # the chat is still open
    # a chat silent for longer than a session gap is closed into a session, then facts
    [session] = await live.flush_idle(T0 + timedelta(hours=7))
    assert [t.speaker for t in session.turns] == ["ana", "ana"]
    stages = await runtime.journal.stages([session.id])
    assert stages[session.id].facts_done and stages[session.id].turns == 2
    [stored] = await runtime.conversations.sessions([session.id])
    assert "stroke" in stored.turns[1].text
    facts = [f for f in await runtime.memory.all() if f.session_id == session.id]
    # what a contact said in a one-to-one chat is at most as open as that chat: nobody else hears it
    assert all(f.effective_level() == 0 and set(f.whitelist) <= {"ana"} for f in facts), facts
    assert not any("owes" in f.text for f in await runtime.memory.all())
