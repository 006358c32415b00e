"""Telegram Desktop's JSON export (``result.json``): one chat, or all chats.

A single-chat export is the chat object itself; a full export wraps chats in
``chats.list`` and says whose account it is in ``personal_information``. Service messages
(joins, pins) are skipped; stickers, files and photos become a short bracketed turn so the
flow of the conversation (and adjacency for group splitting) is kept. Telegram exports only
the last version of an edited message and nothing of a deleted one; a message from a deleted
account (``from`` null) is kept as an unknown person.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import ijson

from epmem.ingest.errors import IngestError
from epmem.ingest.people import People
from epmem.memory.sessions import ChatKind, Message

PLATFORM = "telegram"
_DIRECT = {"personal_chat", "bot_chat", "saved_messages"}
_GROUP = {"private_group", "private_supergroup", "public_supergroup"}
_CHANNEL = {"private_channel", "public_channel"}
_MEDIA = {
    "sticker": "sticker",
    "voice_message": "voice message",
    "video_message": "video message",
    "video_file": "video",
    "audio_file": "audio",
    "animation": "GIF",
}


def looks_like(data: Any) -> bool:
    return isinstance(data, dict) and ("messages" in data or "chats" in data)


def _flatten(text: Any) -> str:
    if isinstance(text, str):
        return text
    if isinstance(text, list):
        return "".join(p if isinstance(p, str) else str(p.get("text", "")) for p in text if isinstance(p, (str, dict)))
    return ""


def _identity(from_id: Any) -> str | None:
    if isinstance(from_id, str) and from_id.startswith("user") and from_id[4:].isdigit():
        return f"{PLATFORM}:{from_id[4:]}"
    return None


def _time(msg: dict[str, Any], path: Path, where: str) -> datetime:
    unix = msg.get("date_unixtime")
    if unix is not None:
        try:
            return datetime.fromtimestamp(int(unix), UTC)
        except (TypeError, ValueError):
            raise IngestError(path, where, f"date_unixtime {unix!r} is not a number") from None
    date = msg.get("date")
    if not isinstance(date, str):
        raise IngestError(path, where, "message has no date")
    try:
        parsed = datetime.fromisoformat(date)
    except ValueError:
        raise IngestError(path, where, f"date {date!r} is not an ISO date") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _body(msg: dict[str, Any]) -> str:
    text = _flatten(msg.get("text", "")).strip()
    media = msg.get("media_type")
    extra = ""
    if media == "sticker":
        extra = f"[sticker {msg.get('sticker_emoji', '')}]".replace(" ]", "]")
    elif media in _MEDIA:
        extra = f"[{_MEDIA[media]}]"
    elif "photo" in msg:
        extra = "[photo]"
    elif "file" in msg or "file_name" in msg:
        extra = f"[file: {msg.get('file_name') or Path(str(msg.get('file'))).name}]"
    elif "poll" in msg:
        extra = f"[poll: {(msg.get('poll') or {}).get('question', '')}]"
    elif "location_information" in msg:
        extra = "[location]"
    return f"{extra} {text}".strip() if extra else text


def _mentions(msg: dict[str, Any], people: People) -> tuple[str, ...]:
    out: list[str] = []
    for ent in msg.get("text_entities") or []:
        if not isinstance(ent, dict):
            continue
        if ent.get("type") == "mention_name" and ent.get("user_id") is not None:
            out.append(people.resolve(f"{PLATFORM}:{ent['user_id']}", ent.get("text")))
        elif ent.get("type") == "mention":
            who = people.resolve(None, str(ent.get("text", "")))
            if not who.startswith("unknown:"):
                out.append(who)
    return tuple(out)


def _claim_owner_in_direct(chat_id: str, msg: Any, people: People) -> None:
    """In a personal chat the chat id is the peer's user id: the other sender is the owner
    (used when neither the policy nor the export says who the owner is on Telegram)."""
    ident = _identity(msg.get("from_id")) if isinstance(msg, dict) else None
    if ident and ident != f"{PLATFORM}:{chat_id}":
        people.claim_owner(ident)


def _message(msg: Any, chat: _Chat, index: int, path: Path, people: People) -> Message | None:
    at = f"{chat.where}.messages[{index}]"
    if not isinstance(msg, dict) or "id" not in msg:
        raise IngestError(path, at, "a message must be an object with an 'id'")
    mtype = msg.get("type", "message")
    if mtype == "service":
        return None
    if mtype != "message":
        raise IngestError(path, at, f"unknown message type {mtype!r}")
    when = _time(msg, path, at)
    text = _body(msg)
    if not text:
        return None
    if chat.kind == "direct" and not any(i.startswith(f"{PLATFORM}:") for i in people.owner_identities):
        _claim_owner_in_direct(chat.id, msg, people)
    ident = _identity(msg.get("from_id"))
    name = msg.get("from") or "Deleted Account"
    speaker = people.resolve(ident, name) if ident or msg.get("from") else "unknown:telegram:deleted-account"
    reply = msg.get("reply_to_message_id")
    return Message(
        platform=PLATFORM,
        chat_id=chat.id,
        chat_kind=chat.kind,
        msg_id=str(msg["id"]),
        speaker=speaker,
        speaker_name=str(name),
        text=text,
        time=when,
        chat_title=chat.title,
        reply_to=str(reply) if reply is not None else None,
        mentions=_mentions(msg, people),
        edited="edited" in msg or "edited_unixtime" in msg,
        source=str(path),
    )


class _Chat:
    """One chat's header, read before its messages (Telegram Desktop writes it first)."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.meta: dict[str, Any] = {}
        self.pending: list[Any] = []  # messages seen before the chat's type (odd files only)
        self.count = 0
        self.has_messages = False

    @property
    def type(self) -> Any:
        return self.meta.get("type", "personal_chat")

    @property
    def id(self) -> str:
        return str(self.meta.get("id", self.meta.get("name", "chat")))

    @property
    def kind(self) -> ChatKind:
        return "direct" if self.type in _DIRECT else "group"

    @property
    def title(self) -> str | None:
        name = self.meta.get("name")
        return str(name) if self.kind == "group" and name is not None else None

    def check(self, path: Path) -> bool:
        """False for a channel (broadcasts, not conversations with the owner)."""
        if self.type in _CHANNEL:
            return False
        if self.type not in _DIRECT | _GROUP:
            raise IngestError(path, self.where, f"unknown chat type {self.type!r}")
        return True


_CHAT_PREFIXES = {"": "chat", "chats.list.item": "chats.list"}


def iter_telegram(path: Path, people: People, buffer: int = 1 << 16) -> Iterator[Message]:
    """Stream an export's messages without loading it: memory stays flat however large it is.

    Raises :class:`IngestError` naming the file and where in it (a JSON syntax error by line and
    column); a caller that must not write half an import runs through it once to validate.
    """
    with path.open("rb") as f:
        try:
            yield from _walk(ijson.parse(f, buf_size=buffer, use_float=True), path, people)
        except ijson.IncompleteJSONError as exc:
            raise IngestError(
                path, locate_json_error(path, f.tell(), str(exc)), f"not valid JSON ({_first_line(str(exc))})"
            ) from None
        except UnicodeDecodeError as exc:
            raise IngestError(path, f"byte {exc.start}", "not UTF-8 text") from None


_SIZE = {"start_map": 1, "start_array": 1, "end_map": -1, "end_array": -1}


def _walk(events: Iterator[tuple[str, str, Any]], path: Path, people: People) -> Iterator[Message]:
    """Telegram's layout, event by event: a chat's header, then its messages one object at a
    time (built by ijson, handed on, dropped)."""
    chat: _Chat | None = None
    chats_seen = 0
    builder: ijson.ObjectBuilder | None = None
    depth = 0
    top_keys: set[str] = set()
    for prefix, event, value in events:
        if builder is not None:
            builder.event(event, value)
            depth += _SIZE.get(event, 0)
            if depth == 0:
                assert chat is not None
                chat.pending.append(builder.value)
                builder = None
                if "type" in chat.meta:
                    yield from _flush(chat, path, people)
            continue
        parent, _, key = prefix.rpartition(".")
        if prefix == "":
            if event == "map_key":
                top_keys.add(value)
            elif event not in ("start_map", "end_map"):
                break
        if prefix in _CHAT_PREFIXES and event == "start_map":
            chat = _Chat(_CHAT_PREFIXES[prefix] + (f"[{chats_seen}]" if prefix else ""))
            chats_seen += bool(prefix)
        elif prefix in _CHAT_PREFIXES and event == "end_map" and chat is not None:
            if prefix and not chat.has_messages:
                raise IngestError(path, chat.where, "a chat needs a 'messages' list")
            if chat.has_messages:
                yield from _flush(chat, path, people)
            chat = None
        elif (
            chat is not None
            and parent in _CHAT_PREFIXES
            and key in ("name", "type", "id")
            and event in ("string", "number")
        ):
            chat.meta[key] = value
        elif chat is not None and prefix in ("messages", "chats.list.item.messages"):
            if event == "start_array":
                chat.has_messages = True
            elif event != "end_array":
                raise IngestError(path, chat.where, "a chat needs a 'messages' list")
        elif chat is not None and prefix in ("messages.item", "chats.list.item.messages.item"):
            if event != "start_map":
                raise IngestError(
                    path,
                    f"{chat.where}.messages[{chat.count + len(chat.pending)}]",
                    "a message must be an object with an 'id'",
                )
            builder, depth = ijson.ObjectBuilder(), 1
            builder.event(event, value)
        elif prefix == "personal_information.user_id" and event in ("string", "number"):
            people.claim_owner(f"{PLATFORM}:{value}")
        elif prefix == "chats.list" and event not in ("start_array", "end_array"):
            raise IngestError(path, "chats", "a full export needs a 'chats.list' array")
        elif prefix == "chats" and event not in ("start_map", "end_map", "map_key"):
            raise IngestError(path, "chats", "a full export needs a 'chats.list' array")
    if not top_keys & {"messages", "chats"}:
        raise IngestError(path, "top level", "not a Telegram Desktop export (no 'messages' or 'chats')")


def _flush(chat: _Chat, path: Path, people: People) -> Iterator[Message]:
    keep = chat.check(path)
    for msg in chat.pending:
        m = _message(msg, chat, chat.count, path, people) if keep else None
        chat.count += 1
        if m is not None:
            yield m
    chat.pending.clear()


def _first_line(message: str) -> str:
    line = message.strip().splitlines()[0] if message.strip() else "parse error"
    return line.removeprefix("parse error: ").strip() or "parse error"


def locate_json_error(path: Path, read_upto: int, message: str, window: int = 1 << 17) -> str:
    """``line L, column C`` of a syntax error yajl reported with a snippet, found by searching the
    snippet just before where the parser had read to; ``near byte N`` if it cannot be found."""
    lines = message.splitlines()
    arrow = next((i for i, line in enumerate(lines) if "(right here)" in line), None)
    if arrow is None or arrow == 0:
        return f"near byte {read_upto}"
    snippet_line, pointer = lines[arrow - 1], lines[arrow].index("^")
    indent = len(snippet_line) - len(snippet_line.lstrip(" "))
    snippet = snippet_line[indent:]
    offset_in_snippet = max(0, min(pointer - indent, len(snippet)))
    # yajl points inside the token it could not take: report where that token starts
    while offset_in_snippet > 0 and snippet[offset_in_snippet - 1] not in " ,:{}[]":
        offset_in_snippet -= 1
    start = max(0, read_upto - window)
    with path.open("rb") as f:
        f.seek(start)
        chunk = f.read(read_upto - start + 1024)
    pattern = re.compile(rb"\s".join(re.escape(part.encode()) for part in snippet.split(" ")))
    found = [m for m in pattern.finditer(chunk)]
    if not found:
        return f"near byte {read_upto}"
    hit = found[-1]
    # the pointer counts characters of the snippet, where yajl shows any whitespace as one space
    byte = start + hit.start() + len(snippet[:offset_in_snippet].encode())
    return _line_column(path, byte)


def _line_column(path: Path, byte: int) -> str:
    line, last_newline, done = 1, -1, 0
    with path.open("rb") as f:
        while done < byte:
            block = f.read(min(1 << 20, byte - done))
            if not block:
                break
            n = block.count(b"\n")
            if n:
                line += n
                last_newline = done + block.rindex(b"\n")
            done += len(block)
    return f"line {line}, column {byte - last_newline}"


def parse_telegram(path: Path, people: People) -> list[Message]:
    return list(iter_telegram(path, people))
