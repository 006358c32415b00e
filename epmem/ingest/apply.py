"""Writing an import: all or nothing.

Parsing (read_export) has already validated the whole export before this runs, so a malformed
file never reaches the store. If writing fails half-way (disk full, a killed engine), the
sessions this import added are removed again; sessions that were already there before keep
their points, which the idempotent ids made identical anyway.
"""

from __future__ import annotations

from collections.abc import Sequence

from epmem.memory.conversations import Conversations, IngestStats, Progress
from epmem.memory.sessions import Session


async def write_sessions(
    conversations: Conversations, sessions: Sequence[Session], progress: Progress | None = None
) -> IngestStats:
    before = await conversations.existing([s.id for s in sessions])
    try:
        return await conversations.add(sessions, progress)
    except BaseException:
        await conversations.remove([s.id for s in sessions if s.id not in before])
        raise
