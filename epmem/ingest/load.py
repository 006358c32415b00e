"""Format detection and the one entry point: an export path in, sessions out (nothing written)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, cast

from epmem.ingest import slack, telegram
from epmem.ingest.errors import IngestError
from epmem.ingest.jsonl import parse_jsonl
from epmem.ingest.people import People
from epmem.ingest.scenario_file import parse_scenario
from epmem.policy.model import OWNER_ID, Policy
from epmem.memory.sessions import Message, Session, SessionStream, build_sessions

Format = Literal["telegram", "slack", "jsonl", "scenario"]
FORMATS: tuple[Format, ...] = ("telegram", "slack", "jsonl", "scenario")


def detect_format(path: Path) -> Format:
    """By shape, not only by name: a Telegram export is often renamed, a Slack one unzipped."""
    if not path.exists():
        raise IngestError(path, "", "no such file or folder")
    if path.is_dir():
        if (path / "result.json").is_file():
            return "telegram"
        if slack.looks_like(path):
            return "slack"
        raise IngestError(path, "", "a folder must hold a Slack export (users.json) or Telegram's result.json")
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        return "scenario"
    if suffix == ".jsonl":
        return "jsonl"
    if suffix == ".zip" or slack.looks_like(path):
        return "slack"
    if suffix == ".json":
        return "telegram"
    raise IngestError(path, "", "cannot tell the format; pass --format telegram|slack|jsonl|scenario")


def read_export(path: Path, policy: Policy | None, fmt: str | None = None) -> list[Session]:
    """Parse and validate the whole export before anything is written anywhere (in memory:
    for benchmarks and small exports; an import streams through :func:`open_export`)."""
    export = open_export(path, policy, fmt)
    export.validate()
    return list(export.sessions())


@dataclass(frozen=True, slots=True)
class ExportSummary:
    messages: int
    sessions: int
    turns: int


@dataclass(frozen=True, slots=True)
class Export:
    """An export on disk, read as a stream of sessions as many times as needed.

    A Telegram export is streamed (epmem.ingest.telegram.iter_telegram, then
    epmem.memory.sessions.SessionStream): memory stays flat whatever its size, and one pass
    (:meth:`validate`) checks all of it before a second pass writes anything.
    """

    path: Path
    format: Format
    policy: Policy | None

    def sessions(self) -> Iterator[Session]:
        people = People(self.policy)
        if self.format == "telegram":
            stream = SessionStream()
            for m in telegram.iter_telegram(self._telegram_file(), people):
                yield from stream.feed(m)
            yield from stream.flush()
            return
        session_ids: dict[str, str] | None = None
        messages: list[Message]
        if self.format == "slack":
            messages = slack.parse_slack(self.path, people)
        elif self.format == "jsonl":
            messages = parse_jsonl(self.path, people)
        else:
            messages, session_ids = parse_scenario(self.path)
        yield from build_sessions(messages, session_ids=session_ids)

    def validate(self) -> ExportSummary:
        """Read everything once, writing nothing; raises IngestError naming the file and place."""
        messages = sessions = turns = 0
        owner = False
        seen: set[tuple[str, str]] = set()
        for s in self.sessions():
            sessions += 1
            turns += len(s.turns)
            owner = owner or any(t.speaker == OWNER_ID for t in s.turns)
            for t in s.turns:
                if (s.chat_id, t.msg_id) not in seen:
                    messages += 1
                    if s.chat_kind == "group":  # a group message may sit in two sub-sessions
                        seen.add((s.chat_id, t.msg_id))
        if sessions and not owner:
            raise IngestError(self.path, "", "no message is from the owner; add the owner's identity on this "
                              "platform (e.g. telegram:123 or slack:T01/U02) to the policy's owner.identities")
        return ExportSummary(messages, sessions, turns)

    def _telegram_file(self) -> Path:
        return self.path / "result.json" if self.path.is_dir() else self.path


def open_export(path: Path, policy: Policy | None, fmt: str | None = None) -> Export:
    chosen = cast(Format, fmt) if fmt else detect_format(path)
    if chosen not in FORMATS:
        raise IngestError(path, "", f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    if not path.exists():
        raise IngestError(path, "", "no such file or folder")
    return Export(path, chosen, policy)
