"""The sessions of a scenario file, as messages (ids kept: the gold facts name them)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from epmem.ingest.people import People
from epmem.policy.model import OWNER_ID
from epmem.scenario import Scenario, load_scenario
from epmem.memory.sessions import Message


def scenario_messages(scenario: Scenario, source: str) -> tuple[list[Message], dict[str, str]]:
    """Messages, and the session id each scenario session (= chat) keeps."""
    people = People(scenario.effective_policy())
    out: list[Message] = []
    names = {cid: c.name for cid, c in scenario.policy.contacts.items()} | {OWNER_ID: scenario.owner.name}
    for s in scenario.sessions:
        # a scenario names a group's members, as a Slack export names a channel's
        roster = tuple(people.sender(p) for p in s.participants) if s.chat.kind == "group" else ()
        for i, t in enumerate(s.turns):
            when = t.time or (s.time + timedelta(seconds=i) if s.time else None)
            speaker = people.sender(t.speaker)
            out.append(
                Message(
                    platform=s.platform,
                    chat_id=s.id,
                    chat_kind=s.chat.kind,
                    msg_id=str(i),
                    speaker=speaker,
                    speaker_name=names.get(t.speaker, t.speaker),
                    text=t.text,
                    time=when,
                    chat_title=s.chat.title,
                    reply_to=None if t.reply_to is None else str(t.reply_to),
                    source=source,
                    roster=roster,
                )
            )
    return out, {s.id: s.id for s in scenario.sessions}


def parse_scenario(path: Path) -> tuple[list[Message], dict[str, str]]:
    return scenario_messages(load_scenario(path), str(path))
