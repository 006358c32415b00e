"""A simple JSONL of messages, one object a line, for anything without a native importer.

    {"chat": "c1", "id": "m1", "sender": "telegram:42", "text": "hi", "time": "2026-03-01T10:00:00Z"}

Optional: ``sender_name``, ``chat_kind`` (direct|group), ``chat_title``, ``reply_to`` (a message
id), ``mentions`` (senders), ``platform`` (default console). ``sender`` is an identity, a
contact id or name, or ``owner``. Only ``owner`` or one of the owner's identities makes a line
the owner's: a name (the owner's own name included) never does (epmem/ingest/people.py).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from epmem.identity import LOCAL
from epmem.ingest.errors import IngestError
from epmem.ingest.people import People
from epmem.memory.sessions import Message


class _Line(BaseModel):
    model_config = ConfigDict(extra="forbid")

    chat: str = Field(min_length=1)
    id: str | int
    sender: str = Field(min_length=1)
    text: str
    time: datetime | None = None
    sender_name: str | None = None
    chat_kind: Literal["direct", "group"] = "direct"
    chat_title: str | None = None
    reply_to: str | int | None = None
    mentions: list[str] = Field(default_factory=list)
    platform: str = LOCAL.platform
    edited: bool = False


def parse_jsonl(path: Path, people: People) -> list[Message]:
    out: list[Message] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise IngestError(path, f"byte {exc.start}", "not UTF-8 text") from None
    for n, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            line = _Line.model_validate(json.loads(raw))
        except json.JSONDecodeError as exc:
            raise IngestError(path, f"line {n}", f"not valid JSON ({exc.msg} at column {exc.colno})") from None
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "line"
            raise IngestError(path, f"line {n}, field {field!r}", first["msg"]) from None
        if not line.text.strip():
            continue
        when = line.time.replace(tzinfo=UTC) if line.time and line.time.tzinfo is None else line.time
        out.append(
            Message(
                platform=line.platform,
                chat_id=line.chat,
                chat_kind=line.chat_kind,
                msg_id=str(line.id),
                speaker=people.sender(line.sender, line.sender_name),
                speaker_name=line.sender_name or line.sender,
                text=line.text.strip(),
                time=when,
                chat_title=line.chat_title,
                reply_to=None if line.reply_to is None else str(line.reply_to),
                mentions=tuple(people.resolve(m if ":" in m else None, m) for m in line.mentions),
                edited=line.edited,
                source=str(path),
            )
        )
    return out
