"""The house example with two of Maya's chats with her sister taken in (each event closed until
Maya decides), and what the consultation tests ask it: a real runtime on the console, follow-ups
caught at the console's outbox route (tests/bot/test_consultations.py, test_story_command.py)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bot.consultations import ConsultationStore
from bot.runtime import Runtime
from connectors.base import Action, Outbound
from epmem.memory import Fact
from testkit.house import house_runtime
from testkit.runtime import ask
from testkit.sessions import session

KNEE_Q = "How is Maya's marathon training going?"
OPEN_ANSWER = "Here's what I can share: Maya is training for the Bath half marathon in June."
PROMOTION_Q = "Did Maya get a promotion?"
#: Maya's chats with her sister: two events, each told to nobody until Maya decides.
Turns = list[tuple[str, str] | tuple[str, str, int]]
KNEE: Turns = [
    ("grace", "How is the running going? Still on for Bath?"),
    ("owner", "I tore a ligament in my knee last week, the physio says no running until August."),
    ("grace", "Oh no, I'm so sorry!"),
]
PROMOTION: Turns = [
    ("owner", "I got a promotion to principal engineer, it starts in June."),
    ("grace", "Wow congrats!"),
]


#: the owner's chat on the console's outbox route (the owner's notes, sent after the reply).
OWNER_CHAT = "owner"


@dataclass
class Sent:
    """The console's outbox route: every follow-up, as (chat, text); the owner's notes apart."""

    messages: list[tuple[str, str]] = field(default_factory=list)
    #: what reached the owner's chat (consultation notes, sent after the reply), with buttons.
    notes: list[tuple[str, tuple[Action, ...]]] = field(default_factory=list)

    async def __call__(self, chat_id: str, text: str, actions: tuple[Action, ...] = ()) -> None:
        if chat_id == OWNER_CHAT:
            self.notes.append((text, actions))
        else:
            self.messages.append((chat_id, text))

    def to(self, who: str) -> list[str]:
        return [text for chat, text in self.messages if chat == f"chat-console:{who}"]


@dataclass
class House:
    runtime: Runtime
    sent: Sent

    @property
    def store(self) -> ConsultationStore:
        assert self.runtime.owner.consultations is not None
        return self.runtime.owner.consultations.store

    async def ask(self, who: str, text: str, *others: str) -> Outbound:
        """The reply, with the owner's notes of its consultation (sent after the reply, by the
        agent's background look: bot/consultations/after_reply.py) as if they had come with it."""
        before = len(self.sent.notes)
        out = await self.runtime.agent.handle(ask(who, text, *others))
        out.delivered()  # as a connector does once the reply is out
        await self.runtime.agent.later.drain()
        later = self.sent.notes[before:]
        if not later:
            return out
        notes = [n for n in (out.to_owner, *(t for t, _ in later)) if n]
        actions = (*out.actions, *(a for _, acts in later for a in acts))
        return replace(out, to_owner="\n\n".join(notes), actions=actions)

    async def owner(self, text: str) -> str:
        return (await self.runtime.agent.handle(ask("owner", text))).text or ""

    async def fact(self, word: str) -> Fact:
        [fact] = [f for f in await self.runtime.memory.all() if word in f.text]
        return fact

    async def records(self, kind: str) -> list[Any]:
        return await self.runtime.audit.records(kind=kind)


async def open_house(data: Path, **settings: Any) -> House:
    """The house with Grace's two chats taken in. Grace heard both said, so with heard it from
    you on she would be told them back and never consulted about them: the consultation tests
    turn it off unless they pass ``heard_it=True`` (tests/bot/test_heard_it.py does)."""
    settings.setdefault("heard_it", False)
    runtime = await house_runtime(data, **settings)
    await runtime.distiller.ingest(session(KNEE, sid="s8", participants=["owner", "grace"]))
    await runtime.distiller.ingest(session(PROMOTION, sid="s9", participants=["owner", "grace"]))
    sent = Sent()
    runtime.outbox.attach("console", sent, OWNER_CHAT)
    return House(runtime, sent)


def command(out: Outbound, key: str) -> str:
    [cmd] = [a.command for a in out.actions if a.command.endswith(f" {key}")]
    return cmd
