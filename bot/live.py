"""Live chats into memory, the same way an import goes (docs/DESIGN.md sec. 1: "group chats the bot sits
in ... and the bot's conversations become Sessions").

What the owner's contacts tell the delegate is part of the owner's history too ("tell Maya the
car broke down, I'll be late"). Each message a *known contact* sends the bot is kept in an open
chunk per chat; a chunk becomes a session exactly as an export's chat does
(epmem.memory.sessions.SessionStream: at a long silence, or cut at a topic boundary when it grows
long) and goes through the import's stages (epmem.ingest.pipeline.ImportRun: sessions and turns,
then facts by the same extraction and fail-closed rules, the model's annotation queued in the
journal for the background annotator). So what a contact says is at least as private as the
chat it was said in, and waits for the owner's review when the rules are unsure.

Not kept: strangers (anyone could fill the owner's memory and review queue), the owner's own
messages to the bot (commands and questions about the memory, not conversation), non-text
events, and the delegate's replies (they come from memory already). Open chunks are flushed
when the service stops and by :meth:`LiveSessions.flush_idle` (the scheduler's tick); a crash
loses at most the open chunks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from itertools import count

import structlog

from connectors.base import Inbound
from epmem.ingest import ImportRun
from epmem.memory import Message, Session, SessionStream
from epmem.policy import STRANGER_ID, Resolved

from bot.commands import looks_like_command

log = structlog.get_logger(__name__)


class LiveSessions:
    def __init__(
        self, pipeline: ImportRun, stream: SessionStream | None = None, on_queued: Callable[[], None] = lambda: None
    ) -> None:
        self.pipeline = pipeline
        self.stream = stream or SessionStream()
        self.on_queued = on_queued
        self._last: dict[str, datetime] = {}
        self._ids = count(1)
        self._lock = asyncio.Lock()
        self._writing: set[asyncio.Task[list[Session]]] = set()

    def record(self, inbound: Inbound, sender: Resolved, readers: Sequence[Resolved] = ()) -> None:
        """Keep one message. A session it completes is stored in the background, so the reply
        never waits for embedding and extraction (:meth:`settle` waits for it). ``readers``:
        everyone the platform says read it (heard it from you: who heard it said)."""
        if (
            sender.is_owner
            or sender.contact_id == STRANGER_ID
            or inbound.non_text
            or not inbound.text.strip()
            or looks_like_command(inbound.text)
        ):
            return
        when = inbound.time if inbound.time.tzinfo else inbound.time.replace(tzinfo=timezone.utc)
        message = Message(
            platform=inbound.platform,
            chat_id=f"live:{inbound.chat_id}",
            chat_kind=inbound.chat_kind,
            msg_id=inbound.message_id or f"{when.timestamp():.6f}-{next(self._ids)}",
            speaker=sender.contact_id,
            speaker_name=sender.recipient.name,
            text=inbound.text.strip(),
            time=when,
            source=f"live:{inbound.platform}",
            readers=tuple(dict.fromkeys(r.contact_id for r in readers if r.contact_id != STRANGER_ID)),
        )
        self._last[message.chat_id] = when
        done = self.stream.feed(message)
        if done:
            task = asyncio.create_task(self._store(done), name="live-sessions")
            self._writing.add(task)
            task.add_done_callback(self._writing.discard)

    async def settle(self) -> None:
        """Wait for the sessions being stored in the background."""
        while self._writing:
            await asyncio.gather(*list(self._writing), return_exceptions=True)

    async def flush_idle(self, now: datetime | None = None) -> list[Session]:
        """Close the chats that have been silent for longer than a session gap."""
        now = now or datetime.now(timezone.utc)
        gap = self.stream.segmenting.gap
        idle = {chat for chat, last in self._last.items() if now - last > gap}
        if not idle:
            return []
        for chat in idle:
            del self._last[chat]
        return await self._store(self.stream.flush(lambda key: key[1] in idle))

    async def flush(self) -> list[Session]:
        """Close every open chat (the service is stopping)."""
        await self.settle()
        self._last.clear()
        return await self._store(self.stream.flush())

    async def discard(self) -> None:
        """Drop every open chat unstored (the owner's memory is being erased): what is being
        stored already finishes first, so the erasure that follows takes it too."""
        await self.settle()
        self._last.clear()
        self.stream.flush()

    async def _store(self, sessions: list[Session]) -> list[Session]:
        if not sessions:
            return []
        async with self._lock:
            report = await self.pipeline.run(sessions)
        log.info("live.sessions", sessions=len(sessions), facts=report.facts, queued=report.queued)
        if report.queued:
            self.on_queued()
        return sessions
