"""Telegram Desktop's JSON export (``result.json``): one chat, or all chats.

A single-chat export is the chat object itself; a full export wraps chats in
``chats.list`` and says whose account it is in ``personal_information``. Service messages
(joins, pins) are skipped; stickers, files and photos become a short bracketed turn so the
flow of the conversation (and adjacency for group splitting) is kept. Telegram exports only
the last version of an edited message and nothing of a deleted one; a message from a deleted
account (``from`` null) is kept as an unknown person.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from epmem.ingest.errors import IngestError
from epmem.ingest.people import People
from epmem.memory.sessions import ChatKind, Message

PLATFORM = "telegram"
_DIRECT = {"personal_chat", "bot_chat", "saved_messages"}
_GROUP = {"private_group", "private_supergroup", "public_supergroup"}
_CHANNEL = {"private_channel", "public_channel"}
_MEDIA = {"sticker": "sticker", "voice_message": "voice message", "video_message": "video message",
          "video_file": "video", "audio_file": "audio", "animation": "GIF"}


def load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise IngestError(path, f"line {exc.lineno}, column {exc.colno}", f"not valid JSON ({exc.msg})") from None
    except UnicodeDecodeError as exc:
        raise IngestError(path, f"byte {exc.start}", "not UTF-8 text") from None


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


def _chat(chat: Any, path: Path, where: str, people: People) -> list[Message]:
    if not isinstance(chat, dict) or not isinstance(chat.get("messages"), list):
        raise IngestError(path, where, "a chat needs a 'messages' list")
    kind_name = chat.get("type", "personal_chat")
    if kind_name in _CHANNEL:
        return []  # broadcasts, not conversations with the owner
    if kind_name not in _DIRECT | _GROUP:
        raise IngestError(path, where, f"unknown chat type {kind_name!r}")
    kind: ChatKind = "direct" if kind_name in _DIRECT else "group"
    chat_id = str(chat.get("id", chat.get("name", "chat")))
    title = chat.get("name") if kind == "group" else None
    if kind == "direct" and not any(i.startswith(f"{PLATFORM}:") for i in people.owner_identities):
        # in a personal chat the chat id is the peer's user id: the other sender is the owner
        peer = f"{PLATFORM}:{chat_id}"
        for msg in chat["messages"]:
            ident = _identity(msg.get("from_id")) if isinstance(msg, dict) else None
            if ident and ident != peer:
                people.claim_owner(ident)
                break
    out: list[Message] = []
    for i, msg in enumerate(chat["messages"]):
        at = f"{where}.messages[{i}]"
        if not isinstance(msg, dict) or "id" not in msg:
            raise IngestError(path, at, "a message must be an object with an 'id'")
        mtype = msg.get("type", "message")
        if mtype == "service":
            continue
        if mtype != "message":
            raise IngestError(path, at, f"unknown message type {mtype!r}")
        when = _time(msg, path, at)
        text = _body(msg)
        if not text:
            continue
        ident = _identity(msg.get("from_id"))
        name = msg.get("from") or "Deleted Account"
        speaker = people.resolve(ident, name) if ident or msg.get("from") else "unknown:telegram:deleted-account"
        reply = msg.get("reply_to_message_id")
        out.append(Message(
            platform=PLATFORM, chat_id=chat_id, chat_kind=kind, msg_id=str(msg["id"]), speaker=speaker,
            speaker_name=str(name), text=text, time=when, chat_title=title,
            reply_to=str(reply) if reply is not None else None, mentions=_mentions(msg, people),
            edited="edited" in msg or "edited_unixtime" in msg, source=str(path),
        ))
    return out


def parse_telegram(path: Path, people: People) -> list[Message]:
    data = load_json(path)
    if not looks_like(data):
        raise IngestError(path, "top level", "not a Telegram Desktop export (no 'messages' or 'chats')")
    info = data.get("personal_information")
    if isinstance(info, dict) and info.get("user_id") is not None:
        people.claim_owner(f"{PLATFORM}:{info['user_id']}")
    if "chats" in data:
        chats = (data.get("chats") or {}).get("list")
        if not isinstance(chats, list):
            raise IngestError(path, "chats", "a full export needs a 'chats.list' array")
        out: list[Message] = []
        for i, chat in enumerate(chats):
            out.extend(_chat(chat, path, f"chats.list[{i}]", people))
        return out
    return _chat(data, path, "chat", people)
