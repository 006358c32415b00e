"""Synthetic Telegram Desktop exports (``result.json``), written as a stream, of any size.

The import benchmark (benchmarks/import_bench.py) and the import tests use them. The layout is
Telegram Desktop's own (a single-chat export, or a full export with ``personal_information``
and ``chats.list``; ``date`` and ``date_unixtime``, ``from_id`` as ``user<id>``, text either a
string or a list of entity parts with ``text_entities`` beside it, replies, edits, stickers and
photos). Topics drift every few dozen messages and the pace varies (seconds to hours), but in a
*busy* chat there is never a silence long enough to cut a session, which is the case that used
to make one session of a whole export.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

from benchmarks.memory_bench import DAYS, NAMES, TEMPLATES, TOPICS

OWNER_ID = 1000001
OWNER_NAME = "Sam Rivera"
#: a sentence an owner might tell a friend: the import must keep it pending, not guess it open.
CONFIDED = [
    "Between us, I'm thinking about leaving my job in the spring.",
    "Please keep this to yourself: the biopsy results come back on Friday.",
    "Don't tell anyone yet, but we're expecting a baby in June.",
]


@dataclass(frozen=True, slots=True)
class Peer:
    user_id: int
    name: str


def peers(n: int) -> list[Peer]:
    return [
        Peer(2000000 + i, f"{NAMES[i % len(NAMES)]} {['Park', 'Okafor', 'Silva', 'Berg'][i % 4]}") for i in range(n)
    ]


def _text(rng: random.Random, topic: str) -> str:
    return rng.choice(TEMPLATES).format(topic=topic, day=rng.choice(DAYS), name=rng.choice(NAMES))


def _message(
    i: int, when: datetime, who: Peer | None, text: str, rng: random.Random, reply_to: int | None
) -> dict[str, Any]:
    name, uid = (OWNER_NAME, OWNER_ID) if who is None else (who.name, who.user_id)
    msg: dict[str, Any] = {
        "id": i,
        "type": "message",
        "date": when.replace(tzinfo=None).isoformat(),
        "date_unixtime": str(int(when.timestamp())),
        "from": name,
        "from_id": f"user{uid}",
    }
    if reply_to is not None:
        msg["reply_to_message_id"] = reply_to
    roll = rng.random()
    if roll < 0.02:
        msg.update({"media_type": "sticker", "sticker_emoji": "👍", "text": ""})
    elif roll < 0.04:
        msg.update({"photo": "(File not included.)", "width": 1280, "height": 960, "text": text})
    elif roll < 0.15:
        head, _, tail = text.partition(" ")
        msg["text"] = [{"type": "bold", "text": head}, " " + tail]
    else:
        msg["text"] = text
    if rng.random() < 0.03:
        msg["edited"] = (when + timedelta(minutes=1)).replace(tzinfo=None).isoformat()
        msg["edited_unixtime"] = str(int(when.timestamp()) + 60)
    parts = msg["text"] if isinstance(msg["text"], list) else [msg["text"]]
    msg["text_entities"] = [p if isinstance(p, dict) else {"type": "plain", "text": p} for p in parts if p]
    return msg


def chat_messages(
    n: int, people: list[Peer], seed: int, start: datetime, busy: bool, confided_every: int = 0
) -> Iterator[dict[str, Any]]:
    """``busy``: gaps of seconds to a couple of hours, never six (one endless conversation).
    Otherwise a conversation every eight hours or so, of a few to a few dozen messages."""
    rng = random.Random(seed)
    when = start
    topic = rng.choice(TOPICS)
    left_in_topic = rng.randint(20, 80)
    left_in_session = rng.randint(4, 30)
    for i in range(1, n + 1):
        if busy:
            when += timedelta(seconds=rng.choice([5, 20, 45, 90, 300, 900, 1800, 3600, 7000]))
        elif left_in_session == 0:
            when += timedelta(hours=rng.uniform(7, 30))
            left_in_session = rng.randint(4, 30)
            topic = rng.choice(TOPICS)
        else:
            when += timedelta(seconds=rng.randint(10, 600))
        left_in_session -= 1
        left_in_topic -= 1
        if left_in_topic == 0:
            topic, left_in_topic = rng.choice(TOPICS), rng.randint(20, 80)
        who = None if rng.random() < 0.5 else rng.choice(people)
        text = _text(rng, topic)
        if confided_every and who is None and i % confided_every == 0:
            text = CONFIDED[(i // confided_every) % len(CONFIDED)]
        reply = i - rng.randint(1, 3) if i > 3 and rng.random() < 0.1 else None
        yield _message(i, when, who, text, rng, reply)


def _write_chat(
    f: IO[str], name: str, kind: str, chat_id: int, messages: Iterator[dict[str, Any]], indent: str
) -> None:
    f.write(
        f'{indent}{{\n{indent} "name": {json.dumps(name)},\n{indent} "type": "{kind}",\n'
        f'{indent} "id": {chat_id},\n{indent} "messages": [\n'
    )
    first = True
    for msg in messages:
        f.write(("" if first else ",\n") + indent + "  " + json.dumps(msg, ensure_ascii=False))
        first = False
    f.write(f"\n{indent} ]\n{indent}}}")


def write_single_chat(path: Path, messages: int, seed: int = 7, busy: bool = True, confided_every: int = 0) -> Path:
    """One personal chat of ``messages`` messages with one peer (Telegram's per-chat export)."""
    peer = peers(1)[0]
    start = datetime(2021, 1, 4, 8, tzinfo=UTC)
    with path.open("w", encoding="utf-8") as f:
        _write_chat(
            f,
            peer.name,
            "personal_chat",
            peer.user_id,
            chat_messages(messages, [peer], seed, start, busy, confided_every),
            "",
        )
        f.write("\n")
    return path


def write_full_export(path: Path, chats: int, messages_per_chat: int, seed: int = 7, confided_every: int = 0) -> Path:
    """A full export (``chats.list``): ``chats`` personal chats, a conversation every few hours."""
    with path.open("w", encoding="utf-8") as f:
        f.write(
            '{\n "about": "Here is the data you requested.",\n "personal_information": {\n'
            f'  "user_id": {OWNER_ID},\n  "first_name": "Sam",\n  "last_name": "Rivera"\n }},\n'
            ' "chats": {\n  "about": "This page lists all chats from this export.",\n  "list": [\n'
        )
        for c, peer in enumerate(peers(chats)):
            start = datetime(2022, 1, 1, tzinfo=UTC) + timedelta(hours=3 * c)
            msgs = chat_messages(messages_per_chat, [peer], seed + c, start, False, confided_every)
            _write_chat(f, peer.name, "personal_chat", peer.user_id, msgs, "   ")
            f.write(",\n" if c < chats - 1 else "\n")
        f.write("  ]\n }\n}\n")
    return path


def policy_yaml(contacts: int = 1) -> str:
    """A policy for these exports: the owner's Telegram id and the peers as life contacts."""
    lines = ["owner:", f"  name: {OWNER_NAME}", f"  identities: [console:owner, telegram:{OWNER_ID}]", "contacts:"]
    for i, p in enumerate(peers(contacts)):
        lines.append(
            f"  c{i}: {{name: {p.name}, relationship: friend, level: {1 + i % 3}, domain: life, "
            f"identities: ['telegram:{p.user_id}']}}"
        )
    lines += [
        "categories:",
        "  health: {level: 1, domain: life, keywords: [biopsy, surgery, doctor, dentist]}",
        "  career_plans: {level: 1, domain: life, keywords: [job, interview, quit]}",
        "  family: {level: 2, domain: life, keywords: [baby, wedding, birthday]}",
        "  finances: {level: 0, keywords: [salary, tax]}",
        "  daily_life: {level: 4, keywords: []}",
        "default_category: daily_life",
    ]
    return "\n".join(lines) + "\n"
