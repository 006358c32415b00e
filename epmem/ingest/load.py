"""Format detection and the one entry point: an export path in, sessions out (nothing written)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
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


def read_export(
    path: Path, policy: Policy | None, fmt: str | None = None, owner_identities: Sequence[str] = ()
) -> list[Session]:
    """Parse and validate the whole export before anything is written anywhere (in memory:
    for benchmarks and small exports; an import streams through :func:`open_export`)."""
    export = open_export(path, policy, fmt, owner_identities)
    export.validate()
    return list(export.sessions())


@dataclass(frozen=True, slots=True)
class ExportSummary:
    messages: int
    sessions: int
    turns: int
    #: accounts named like the owner that were not taken for the owner (identity -> name): a
    #: display name never makes anyone the owner, so the import says whom it left out.
    lookalikes: dict[str, str] = field(default_factory=dict)


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
    #: the owner's accounts on this export's platform, besides the policy's (``epmem ingest --owner``).
    owner_identities: tuple[str, ...] = ()

    def sessions(self, people: People | None = None) -> Iterator[Session]:
        people = people or People(self.policy, self.owner_identities)
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
        people = People(self.policy, self.owner_identities)
        for s in self.sessions(people):
            sessions += 1
            turns += len(s.turns)
            owner = owner or any(t.speaker == OWNER_ID for t in s.turns)
            for t in s.turns:
                if (s.chat_id, t.msg_id) not in seen:
                    messages += 1
                    if s.chat_kind == "group":  # a group message may sit in two sub-sessions
                        seen.add((s.chat_id, t.msg_id))
        if sessions and not owner:
            named = "".join(f"; {name!r} is {ident}" for ident, name in sorted(people.lookalikes.items()))
            raise IngestError(
                self.path,
                "",
                "no message is from the owner (a name never makes anyone the owner); "
                "add the owner's identity on this platform (e.g. telegram:123 or slack:T01/U02) to the "
                f"policy's owner.identities, or pass --owner IDENTITY{named}",
            )
        return ExportSummary(messages, sessions, turns, dict(people.lookalikes))

    def _telegram_file(self) -> Path:
        return self.path / "result.json" if self.path.is_dir() else self.path


def open_export(
    path: Path, policy: Policy | None, fmt: str | None = None, owner_identities: Sequence[str] = ()
) -> Export:
    chosen = cast(Format, fmt) if fmt else detect_format(path)
    if chosen not in FORMATS:
        raise IngestError(path, "", f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    if not path.exists():
        raise IngestError(path, "", "no such file or folder")
    for ident in owner_identities:
        if ":" not in ident.strip(":"):
            raise IngestError(
                path, "", f"--owner {ident!r} is not an identity (platform:id, e.g. telegram:123 or slack:T01/U02)"
            )
    return Export(path, chosen, policy, tuple(owner_identities))
