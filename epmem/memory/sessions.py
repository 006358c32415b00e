"""F0 turns and F3 sessions (with their F5 metadata), and how chat messages become them.

Importers only parse; they hand over flat :class:`Message` records. Everything that decides
what a session is lives here, once: a chat is cut into sessions at long silences, and a group
chat is split into two-party sub-sessions, the owner with each counterpart, because disclosure
and recall are about what passed between the owner and one person. Which counterpart an owner
message belongs to is read from its reply link, then its mentions, then adjacency (the person
the owner was just talking to). The group and all its members stay in the metadata.

Ids are derived from platform ids only (chat id, message id, counterpart), never from import
order or time of import, so importing the same export twice rewrites the same points.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from epmem.memory.segment import Segmenting, best_cut
from epmem.policy.model import OWNER_ID

ChatKind = Literal["direct", "group"]
#: a silence longer than this starts a new session of the same chat.
SESSION_GAP = timedelta(hours=6)
SUMMARY_TURNS = 3


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message as an importer read it, speaker already mapped to a person id."""

    platform: str
    chat_id: str
    chat_kind: ChatKind
    msg_id: str
    speaker: str  # "owner", a contact id, or "unknown:<identity>"
    speaker_name: str
    text: str
    time: datetime | None = None
    chat_title: str | None = None
    reply_to: str | None = None
    mentions: tuple[str, ...] = ()
    edited: bool = False
    source: str = ""
    #: who read it when it was sent, where the platform said so (a live group's roster, as
    #: person ids); an export names nobody, and then only the people who wrote count.
    readers: tuple[str, ...] = ()
    #: the group's members as the export names them (a scenario session's participants): who
    #: could read it, not who did; only a remark to everyone counts as heard by all of them
    #: (epmem.ingest.heard.listeners). Empty where the export names no members.
    roster: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Turn:
    """F0: one message inside one session (an owner message addressed to two people of a group
    appears in both sub-sessions, as two turns)."""

    id: str
    session_id: str
    index: int
    speaker: str
    speaker_name: str
    text: str
    time: datetime | None = None
    msg_id: str = ""
    reply_to: str | None = None
    edited: bool = False
    #: in a group chat, the members the chat shows read this message (heard it from you: an
    #: export names no readers): who replied to it, and who wrote in the same conversation both
    #: before and after it. Empty otherwise.
    seen_by: list[str] = field(default_factory=list)

    def payload(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "index": self.index,
            "speaker": self.speaker,
            "speaker_name": self.speaker_name,
            "text": self.text,
            "time": self.time.isoformat() if self.time else None,
            "msg_id": self.msg_id,
            "reply_to": self.reply_to,
            "edited": self.edited,
            "seen_by": self.seen_by,
        }


def source_ref(session_id: str, index: int) -> str:
    """How a fact names a turn it was distilled from (``Fact.source_turns``)."""
    return f"{session_id}:{index}"


def parse_source_ref(ref: str) -> tuple[str, int] | None:
    """``source_ref`` read back; None for anything else."""
    session_id, _, index = ref.rpartition(":")
    return (session_id, int(index)) if session_id and index.isdigit() else None


@dataclass(slots=True)
class Session:
    """F3 with its F5 metadata. ``participants`` are the two parties; ``members`` the whole chat."""

    id: str
    platform: str
    chat_id: str
    chat_kind: ChatKind
    participants: list[str]
    members: list[str]
    turns: list[Turn] = field(default_factory=list)
    #: who read it when it was said, as a live platform named them (a group's roster at the
    #: time; heard it from you, docs/DESIGN.md sec. 3). Empty for an export, which names no
    #: members: then only the conversation's other party counts (epmem.ingest.heard.listeners).
    present: list[str] = field(default_factory=list)
    #: the group's members as an export names them (``Message.roster``), the owner left out;
    #: empty where it names none. Who was in the chat, not who read each message.
    roster: list[str] = field(default_factory=list)
    chat_title: str | None = None
    #: the chat session a group sub-session was cut from (facts may name either).
    origin_id: str | None = None
    source: str = ""
    summary: str = ""

    @property
    def start(self) -> datetime | None:
        times = [t.time for t in self.turns if t.time]
        return min(times) if times else None

    @property
    def end(self) -> datetime | None:
        times = [t.time for t in self.turns if t.time]
        return max(times) if times else None

    def names(self) -> dict[str, str]:
        return {t.speaker: t.speaker_name for t in self.turns}

    def payload(self) -> dict[str, Any]:
        start, end = self.start, self.end
        return {
            "session_id": self.id,
            "platform": self.platform,
            "chat_id": self.chat_id,
            "chat_kind": self.chat_kind,
            "chat_title": self.chat_title,
            "participants": self.participants,
            "members": self.members,
            "present": self.present,
            "roster": self.roster,
            "origin_id": self.origin_id,
            "source": self.source,
            "start": start.isoformat() if start else None,
            "end": end.isoformat() if end else None,
            "turns": len(self.turns),
            "summary": self.summary,
        }


def stable_id(*parts: str) -> str:
    """Short, deterministic, and free of characters that need quoting anywhere."""
    return hashlib.sha1("\x1f".join(parts).encode()).hexdigest()[:16]


def _addressees(
    m: Message, by_id: dict[str, Message], previous: str | None, members: set[str], first_names: dict[str, str]
) -> list[str]:
    """Who an owner message in a group speaks to: reply link, then mentions (platform mentions,
    then a member's first name written out), then adjacency."""
    if m.reply_to and m.reply_to in by_id and by_id[m.reply_to].speaker != OWNER_ID:
        return [by_id[m.reply_to].speaker]
    mentioned = [p for p in dict.fromkeys(m.mentions) if p != OWNER_ID and p in members]
    if mentioned:
        return mentioned
    named = [first_names[w] for w in dict.fromkeys(_NAME_WORD.findall(m.text.casefold())) if w in first_names]
    if named:
        return named
    return [previous] if previous else []


def _group_threads(messages: Sequence[Message]) -> dict[str, list[Message]]:
    """counterpart -> the messages of the owner's two-party exchange with them."""
    by_id = {m.msg_id: m for m in messages}
    members = {m.speaker for m in messages} - {OWNER_ID}
    firsts: dict[str, set[str]] = {}
    for m in messages:
        if m.speaker != OWNER_ID and m.speaker_name.split():
            firsts.setdefault(m.speaker_name.split()[0].casefold(), set()).add(m.speaker)
    # a first name two members share names neither
    first_names = {n: next(iter(who)) for n, who in firsts.items() if len(who) == 1 and len(n) >= 3}
    threads: dict[str, list[Message]] = {}
    previous: str | None = None
    pending: list[Message] = []  # owner messages before anyone else spoke: adjacency looks ahead
    for m in messages:
        if m.speaker != OWNER_ID:
            if pending:
                threads.setdefault(m.speaker, []).extend(pending)
                pending = []
            threads.setdefault(m.speaker, []).append(m)
            previous = m.speaker
            continue
        targets = _addressees(m, by_id, previous, members, first_names)
        if not targets:
            pending.append(m)
        for t in targets:
            threads.setdefault(t, []).append(m)
    for thread in threads.values():
        thread.sort(key=_chrono)
    return threads


def _seen_by(chunk: Sequence[Message]) -> dict[str, list[str]]:
    """For each message of one group conversation (time order), the members other than the owner
    an export shows read it: who replied to it, and who wrote in the conversation both before and
    after it, in the order they first wrote. Writing only after may be a late arrival answering
    an earlier message, and writing only before, someone who has left: neither shows it."""
    first: dict[str, int] = {}  # each member's first and last message in the conversation
    last: dict[str, int] = {}
    replied: dict[str, set[str]] = {}
    for i, m in enumerate(chunk):
        if m.speaker == OWNER_ID:
            continue
        first.setdefault(m.speaker, i)
        last[m.speaker] = i
        if m.reply_to:
            replied.setdefault(m.reply_to, set()).add(m.speaker)
    return {
        m.msg_id: [p for p in first if p != m.speaker and (first[p] < i < last[p] or p in replied.get(m.msg_id, ()))]
        for i, m in enumerate(chunk)
    }


def _order(msg_id: str) -> tuple[int, str]:
    return (int(msg_id), "") if msg_id.isdigit() else (0, msg_id)


def _chrono(m: Message) -> tuple[bool, float, tuple[int, str]]:
    """Time order (undated messages first, by id), whether times carry a zone or not."""
    return (m.time is not None, m.time.timestamp() if m.time else 0.0, _order(m.msg_id))


def _session(
    sid: str,
    msgs: Sequence[Message],
    participants: list[str],
    members: list[str],
    origin: str | None,
    present: list[str],
    seen: dict[str, list[str]] | None = None,
    roster: list[str] | None = None,
) -> Session:
    first = msgs[0]
    s = Session(
        id=sid,
        platform=first.platform,
        chat_id=first.chat_id,
        chat_kind=first.chat_kind,
        participants=participants,
        members=members,
        present=present,
        roster=list(roster or []),
        chat_title=first.chat_title,
        origin_id=origin,
        source=first.source,
    )
    s.turns = [
        Turn(
            id=f"{sid}/{m.msg_id}",
            session_id=sid,
            index=i,
            speaker=m.speaker,
            speaker_name=m.speaker_name,
            text=m.text,
            time=m.time,
            msg_id=m.msg_id,
            reply_to=m.reply_to,
            edited=m.edited,
            seen_by=list((seen or {}).get(m.msg_id, [])),
        )
        for i, m in enumerate(msgs)
    ]
    s.summary = extractive_summary(s)
    return s


class SessionStream:
    """Messages in, finished sessions out, one chat chunk in memory at a time.

    Feed each chat's messages in time order (any number of chats, interleaved or not); a
    session comes out as soon as it is complete: at a silence longer than the gap, when its
    chunk reaches ``Segmenting.max_turns`` (cut at the best topic boundary, epmem.memory.segment),
    or at :meth:`flush`. Memory is bounded by one open chunk per chat, so a years-long export
    streams through. ``members`` of a session are the people seen in its chat so far.
    """

    def __init__(self, segmenting: Segmenting | None = None, session_ids: dict[str, str] | None = None) -> None:
        self.segmenting = segmenting or Segmenting()
        self.session_ids = session_ids or {}
        self._open: dict[tuple[str, str], list[Message]] = {}
        self._members: dict[tuple[str, str], set[str]] = {}

    def feed(self, m: Message) -> list[Session]:
        key = (m.platform, m.chat_id)
        chunk = self._open.setdefault(key, [])
        self._members.setdefault(key, {OWNER_ID}).add(m.speaker)
        out: list[Session] = []
        fixed = m.chat_id in self.session_ids  # a caller's own session id: one session per chat
        last = chunk[-1].time if chunk else None
        if chunk and not fixed and m.time and last and m.time - last > self.segmenting.gap:
            out += self._emit(key, chunk)
            chunk = self._open[key] = []
        chunk.append(m)
        if not fixed and len(chunk) >= self.segmenting.max_turns:
            cut = best_cut(chunk, self.segmenting)
            out += self._emit(key, chunk[:cut])
            self._open[key] = chunk[cut:]
        return out

    def flush(self, which: Callable[[tuple[str, str]], bool] | None = None) -> list[Session]:
        """Close the open chunks (of the chats ``which`` picks by ``(platform, chat_id)``)."""
        out: list[Session] = []
        for key, chunk in list(self._open.items()):
            if which is not None and not which(key):
                continue
            if chunk:
                out += self._emit(key, chunk)
            del self._open[key]
        return out

    def _emit(self, key: tuple[str, str], chunk: list[Message]) -> list[Session]:
        platform, chat_id = key
        chunk = sorted(chunk, key=_chrono)
        members = sorted(self._members[key])
        base = self.session_ids.get(chat_id) or stable_id(platform, chat_id, chunk[0].msg_id)
        # a live platform's roster per message: whoever read every message of the conversation
        rosters = [set(m.readers) for m in chunk if m.readers]
        present = sorted(set.intersection(*rosters) - {OWNER_ID}) if rosters else []
        if chunk[0].chat_kind == "direct":
            people = sorted({m.speaker for m in chunk} | {OWNER_ID}, key=lambda p: p != OWNER_ID)
            return [_session(base, chunk, people, members, None, present)]
        seen = _seen_by(chunk)
        # the members an export names, as for a live roster: who was there for the whole conversation
        listed = [set(r) for r in {id(m.roster): m.roster for m in chunk if m.roster}.values()]  # shared tuples once
        roster = sorted(set.intersection(*listed) - {OWNER_ID}) if listed else []
        return [
            _session(
                f"{base}~{stable_id(counterpart)[:8]}",
                thread,
                [OWNER_ID, counterpart],
                members,
                base,
                present,
                seen,
                roster,
            )
            for counterpart, thread in sorted(_group_threads(chunk).items())
        ]


def build_sessions(
    messages: Iterable[Message],
    gap: timedelta = SESSION_GAP,
    session_ids: dict[str, str] | None = None,
    segmenting: Segmenting | None = None,
) -> list[Session]:
    """Messages of any number of chats, in any order -> sessions, group chats split per counterpart.

    ``session_ids`` lets a caller keep ids it already has (a scenario's ``s1``): it maps a chat
    id to the session id of that chat's single session. (An importer streams through
    :class:`SessionStream` instead; this sorts everything in memory first.)
    """
    chats: dict[tuple[str, str], list[Message]] = {}
    for m in messages:
        chats.setdefault((m.platform, m.chat_id), []).append(m)
    stream = SessionStream(segmenting or Segmenting(gap=gap), session_ids)
    out: list[Session] = []
    for msgs in chats.values():
        msgs.sort(key=_chrono)
        for m in msgs:
            out += stream.feed(m)
        out += stream.flush()
    return out


_WORD = re.compile(r"[a-z0-9]{4,}")
_NAME_WORD = re.compile(r"\w+")


def extractive_summary(session: Session, k: int = SUMMARY_TURNS) -> str:
    """The rules backend's native summary: the k turns that share most words with the rest.

    Centrality is the classic extractive choice: a turn that repeats the session's recurring
    words is about what the session is about, where greetings and reactions share nothing.
    """
    bags = [set(_WORD.findall(t.text.lower())) for t in session.turns]
    df = Counter(w for bag in bags for w in bag)
    scored = [(sum(df[w] - 1 for w in bag) + 0.1 * len(bag), i) for i, bag in enumerate(bags)]
    chosen = sorted(i for _, i in sorted(scored, reverse=True)[:k])
    return " ".join(f"{session.turns[i].speaker_name}: {session.turns[i].text}" for i in chosen)
