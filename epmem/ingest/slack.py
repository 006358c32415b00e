"""A Slack workspace export, zipped or unpacked: ``users.json``, the channel lists
(``channels.json``, ``groups.json``, ``mpims.json``, ``dms.json``) and one folder per
conversation holding one ``YYYY-MM-DD.json`` message list per day.

Direct messages are two-party sessions; channels, private groups and multi-person DMs are group
chats, split later per counterpart. Thread replies link to their parent (``thread_ts``), and
``<@U123>`` mentions become both a mention and a readable ``@Name``. Join/leave notices, bot
posts, tombstones of deleted messages and edit/delete events are not conversation and are
skipped; an edited message carries its final text and an ``edited`` mark.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import re
import zipfile
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from epmem.ingest.errors import IngestError
from epmem.ingest.people import People
from epmem.memory.sessions import ChatKind, Message

PLATFORM = "slack"
_SKIP = {
    "channel_join",
    "channel_leave",
    "channel_topic",
    "channel_purpose",
    "channel_name",
    "bot_message",
    "tombstone",
    "message_deleted",
    "message_changed",
    "pinned_item",
    "group_join",
    "group_leave",
    "reminder_add",
    "bot_add",
    "bot_remove",
    "channel_archive",
}
#: the notices that say when someone joined a channel or a private group
_JOINS = {"channel_join", "group_join"}
_MENTION = re.compile(r"<@([UW][A-Z0-9]+)(?:\|([^>]*))?>")
_LINK = re.compile(r"<(https?://[^|>]+)(?:\|([^>]*))?>")
_LISTS: dict[str, ChatKind] = {
    "channels.json": "group",
    "groups.json": "group",
    "mpims.json": "group",
    "dms.json": "direct",
}


class _Export:
    """The export's files by relative name, from a folder or a zip (zips may nest one folder)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._zip: zipfile.ZipFile | None = None
        #: relative name -> a file path (folder) or a member name (zip)
        self.names: dict[str, str]
        if path.is_dir():
            self.names = {p.relative_to(path).as_posix(): str(p) for p in path.rglob("*.json")}
            self._prefix = ""
        else:
            try:
                self._zip = zipfile.ZipFile(path)
            except zipfile.BadZipFile:
                raise IngestError(path, "", "not a zip file") from None
            members = [n for n in self._zip.namelist() if n.endswith(".json")]
            users = [n for n in members if PurePosixPath(n).name == "users.json"]
            self._prefix = str(PurePosixPath(min(users, key=len)).parent) + "/" if users else ""
            if self._prefix == "./":
                self._prefix = ""
            self.names = {n[len(self._prefix) :]: n for n in members if n.startswith(self._prefix)}

    def where(self, name: str) -> str:
        return f"{self.path}!{name}" if self._zip else str(self.path / name)

    def has(self, name: str) -> bool:
        return name in self.names

    def read(self, name: str) -> Any:
        try:
            raw = self._zip.read(self.names[name]) if self._zip else Path(self.names[name]).read_bytes()
            return json.loads(raw.decode("utf-8"))
        except json.JSONDecodeError as exc:
            raise IngestError(
                self.where(name), f"line {exc.lineno}, column {exc.colno}", f"not valid JSON ({exc.msg})"
            ) from None
        except UnicodeDecodeError as exc:
            raise IngestError(self.where(name), f"byte {exc.start}", "not UTF-8 text") from None

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()


def looks_like(path: Path) -> bool:
    if path.is_dir():
        return (path / "users.json").is_file()
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            return any(PurePosixPath(n).name == "users.json" for n in z.namelist())
    return False


def _users(export: _Export, people: People) -> tuple[dict[str, tuple[str, str]], str]:
    """user id -> (person id, display name); and the team id."""
    data = export.read("users.json")
    if not isinstance(data, list):
        raise IngestError(export.where("users.json"), "top level", "users.json must be a list of users")
    out: dict[str, tuple[str, str]] = {}
    team = ""
    for i, u in enumerate(data):
        if not isinstance(u, dict) or not isinstance(u.get("id"), str):
            raise IngestError(export.where("users.json"), f"user {i}", "each user needs a string 'id'")
        team = team or str(u.get("team_id", ""))
        profile = u.get("profile") or {}
        real = u.get("real_name") or profile.get("real_name") or ""
        display = profile.get("display_name") or ""
        name = real or display or u.get("name") or u["id"]
        identity = f"{PLATFORM}:{u.get('team_id', team)}/{u['id']}"
        out[u["id"]] = (people.resolve(identity, real, display, u.get("name")), str(name))
    return out, team


def _text(raw: str, users: dict[str, tuple[str, str]]) -> tuple[str, tuple[str, ...]]:
    mentions: list[str] = []

    def mention(m: re.Match[str]) -> str:
        who = users.get(m.group(1))
        if who:
            mentions.append(who[0])
        return "@" + (who[1] if who else (m.group(2) or m.group(1)))

    text = _MENTION.sub(mention, raw)
    text = _LINK.sub(lambda m: m.group(2) or m.group(1), text)
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return text, tuple(mentions)


def _conversations(export: _Export) -> list[tuple[str, str, ChatKind, str | None, list[str]]]:
    """(folder, chat id, kind, title, members) for every conversation the lists name: a
    channel's or a group's member user ids as the export lists them (none for a direct chat)."""
    out: list[tuple[str, str, ChatKind, str | None, list[str]]] = []
    for list_name, kind in _LISTS.items():
        if not export.has(list_name):
            continue
        data = export.read(list_name)
        if not isinstance(data, list):
            raise IngestError(export.where(list_name), "top level", f"{list_name} must be a list")
        for i, c in enumerate(data):
            if not isinstance(c, dict) or "id" not in c:
                raise IngestError(export.where(list_name), f"entry {i}", "each conversation needs an 'id'")
            folder = str(c.get("name") or c["id"]) if kind == "group" else str(c["id"])
            members = c.get("members") if kind == "group" else None
            listed = [str(m) for m in members] if isinstance(members, list) else []
            out.append((folder, str(c["id"]), kind, c.get("name") if kind == "group" else None, listed))
    return out


def _messages(
    export: _Export,
    folder: str,
    chat_id: str,
    kind: ChatKind,
    title: str | None,
    users: dict[str, tuple[str, str]],
    members: Sequence[str] = (),
) -> list[Message]:
    """The conversation's messages. A channel's message carries its roster (``Message.roster``):
    the members the export lists who were in the channel when it was posted: every listed
    member but one whose join notice comes later. Who left is not listed, and so never counts."""
    out: list[Message] = []
    joined: dict[str, float] = {}  # user id -> the first join notice's time
    days = sorted(n for n in export.names if n.startswith(folder + "/"))
    for day in days:
        data = export.read(day)
        if not isinstance(data, list):
            raise IngestError(export.where(day), "top level", "a day file must be a list of messages")
        for i, m in enumerate(data):
            at = f"message {i}"
            if not isinstance(m, dict):
                raise IngestError(export.where(day), at, "a message must be an object")
            if m.get("subtype") in _JOINS and isinstance(m.get("user"), str):
                with contextlib.suppress(TypeError, ValueError):
                    joined.setdefault(m["user"], float(str(m.get("ts"))))
            if m.get("type", "message") != "message" or m.get("subtype") in _SKIP or m.get("bot_id"):
                continue
            ts = m.get("ts")
            try:
                when = datetime.fromtimestamp(float(ts), UTC)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                raise IngestError(export.where(day), at, f"'ts' {ts!r} is not a Slack timestamp") from None
            user = m.get("user")
            if not isinstance(user, str):
                raise IngestError(export.where(day), at, "a message needs a 'user'")
            speaker, name = users.get(user, (f"unknown:{PLATFORM}:{user}", m.get("user_name") or user))
            text, mentions = _text(str(m.get("text", "")), users)
            files = [
                f"[file: {f.get('name') or f.get('title') or 'file'}]"
                for f in m.get("files") or []
                if isinstance(f, dict)
            ]
            body = " ".join([*files, text]).strip()
            if not body:
                continue
            thread = m.get("thread_ts")
            out.append(
                Message(
                    platform=PLATFORM,
                    chat_id=chat_id,
                    chat_kind=kind,
                    msg_id=str(ts),
                    speaker=speaker,
                    speaker_name=name,
                    text=body,
                    time=when,
                    chat_title=title,
                    reply_to=str(thread) if thread and thread != ts else None,
                    mentions=mentions,
                    edited=bool(m.get("edited")),
                    source=str(export.path),
                )
            )
    if not members:
        return out
    listed = [users[u][0] for u in members if u in users]
    return _with_rosters(out, listed, {users[u][0]: t for u, t in joined.items() if u in users})


def _with_rosters(messages: list[Message], listed: list[str], joined: dict[str, float]) -> list[Message]:
    """Each message with the members who were in the channel when it was posted: every listed
    member but one whose join notice (person id -> time) comes later. Messages posted between
    the same joins share one roster (a channel of thousands stays one tuple per join, not one
    per message)."""
    members = set(listed)
    late = sorted((t, p) for p, t in joined.items() if p in members)
    times = [t for t, _ in late]
    after = {p for _, p in late}
    always = tuple(p for p in listed if p not in after)
    rosters: dict[int, tuple[str, ...]] = {}
    out = []
    for m in messages:
        k = bisect.bisect_right(times, m.time.timestamp()) if m.time else 0
        if k not in rosters:
            rosters[k] = always + tuple(p for _, p in late[:k])
        out.append(replace(m, roster=rosters[k]))
    return out


def parse_slack(path: Path, people: People) -> list[Message]:
    export = _Export(path)
    try:
        if not export.has("users.json"):
            raise IngestError(path, "", "not a Slack export (no users.json)")
        users, _team = _users(export, people)
        out: list[Message] = []
        for folder, chat_id, kind, title, members in _conversations(export):
            out.extend(_messages(export, folder, chat_id, kind, title, users, members))
        return out
    finally:
        export.close()
