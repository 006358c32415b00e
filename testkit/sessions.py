"""Building real :class:`epmem.memory.sessions.Session` objects for tests, turn by turn."""

from __future__ import annotations

from epmem.memory.sessions import Session, Turn
from epmem.policy.model import OWNER_ID


def session(
    turns: list[tuple[str, str] | tuple[str, str, int]],
    *,
    sid: str = "s1",
    participants: list[str] | None = None,
    members: list[str] | None = None,
    kind: str = "direct",
    present: list[str] | None = None,
) -> Session:
    """``turns``: (speaker, text) or (speaker, text, reply_to index); ``present``: who heard
    it said (by default everyone in the chat)."""
    speakers = list(dict.fromkeys([OWNER_ID, *(t[0] for t in turns)]))
    built = [
        Turn(
            id=f"{sid}/{i}",
            session_id=sid,
            index=i,
            speaker=t[0],
            speaker_name=t[0],
            text=t[1],
            msg_id=str(i),
            reply_to=str(t[2]) if len(t) > 2 else None,
        )  # type: ignore[misc]
        for i, t in enumerate(turns)
    ]
    return Session(
        id=sid,
        platform="console",
        chat_id=sid,
        chat_kind=kind,  # type: ignore[arg-type]
        participants=participants or speakers,
        members=members or participants or speakers,
        turns=built,
        present=present if present is not None else (members or participants or speakers),
    )
