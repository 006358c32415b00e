"""Turning the projected facts into words, and the one deflection for everything else.

Whatever composes the reply (the rules composer here, or an LLM) receives only a
:class:`ReplyContext`, which by construction holds nothing but facts the audience may know.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True, slots=True)
class ReplyContext:
    owner_name: str
    persona: str
    recipient_name: str
    relationship: str
    question: str
    facts: tuple[str, ...]
    recent_turns: tuple[str, ...] = field(default=())


class Responder(Protocol):
    name: str

    async def reply(self, ctx: ReplyContext) -> str: ...


def deflection(owner_name: str) -> str:
    """The same words for a secret and for something that never happened: the asker must not
    be able to tell the two apart, so nothing about the question or the memory goes in."""
    return f"Sorry, I can't help with that. I'll let {owner_name} know you asked."


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."


class RulesResponder:
    """Offline composer: the permitted facts as plain sentences. Weak prose, same safety."""

    name = "rules"

    def __init__(self, max_facts: int = 4) -> None:
        self.max_facts = max_facts

    async def reply(self, ctx: ReplyContext) -> str:
        if not ctx.facts:
            return deflection(ctx.owner_name)
        body = " ".join(_sentence(f) for f in ctx.facts[: self.max_facts])
        return f"Here's what I can share: {body}"
