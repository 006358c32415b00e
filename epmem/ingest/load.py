"""Format detection and the one entry point: an export path in, sessions out (nothing written)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, cast

from epmem.ingest import slack, telegram
from epmem.ingest.errors import IngestError
from epmem.ingest.jsonl import parse_jsonl
from epmem.ingest.people import People
from epmem.ingest.scenario_file import parse_scenario
from epmem.policy.model import OWNER_ID, Policy
from epmem.memory.sessions import Message, Session, build_sessions

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
    """Parse and validate the whole export before anything is written anywhere."""
    chosen = cast(Format, fmt) if fmt else detect_format(path)
    if chosen not in FORMATS:
        raise IngestError(path, "", f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    session_ids: dict[str, str] | None = None
    people = People(policy)
    messages: list[Message]
    if chosen == "telegram":
        messages = telegram.parse_telegram(path / "result.json" if path.is_dir() else path, people)
    elif chosen == "slack":
        messages = slack.parse_slack(path, people)
    elif chosen == "jsonl":
        messages = parse_jsonl(path, people)
    else:
        messages, session_ids = parse_scenario(path)
    if messages and not any(m.speaker == OWNER_ID for m in messages):
        raise IngestError(path, "", "no message is from the owner; add the owner's identity on this platform "
                          "(e.g. telegram:123 or slack:T01/U02) to the policy's owner.identities")
    return build_sessions(messages, session_ids=session_ids)
