"""``/remember`` and ``/forget``: the owner adds to memory, or erases from it for good
(what a forgotten fact takes with it: bot/erasure.py)."""

from __future__ import annotations

import uuid

from bot.commands.parsing import split_target
from bot.commands.registry import CommandContext, CommandError, CommandSet, UsageError
from bot.erasure import forget_facts
from bot.services import OwnerServices

commands = CommandSet()


@commands.command(
    "remember",
    "TEXT",
    summary="add a note to memory (through the same rules as any chat)",
    details="cues are read, not stored: 'Do not tell anyone: ...' keeps the note private, "
    "'..., do not tell Tom' shuts Tom out, 'if anyone asks, say ...' is a cover story",
)
async def remember(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    if not rest.strip():
        raise UsageError()
    facts = await owner.distiller.remember(rest.strip(), uuid.uuid4().hex[:8])
    if not facts:
        return "Nothing to remember in that: no statement I could keep as a fact."
    await owner.record_change(
        {
            "action": "remember",
            "facts": [f.id for f in facts],
            "annotations": {
                f.id: {
                    "category": f.category,
                    "level": f.effective_level(),
                    "state": f.state,
                    "whitelist": f.whitelist,
                    "blacklist": f.blacklist,
                }
                for f in facts
            },
        }
    )
    lines = [
        f"Remembered as {f.id}: {f.text} ({f.category}, L{f.effective_level()}"
        f"{', not ' + ', '.join(f.blacklist) if f.blacklist else ''}"
        f"{', waiting for your review' if f.state == 'pending' else ''})."
        for f in facts
    ]
    return "\n".join(lines) + "\nChange with /allow or /deny."


@commands.command(
    "forget",
    "FACT|event:ID",
    summary="erase facts, their vectors and source messages",
    details="every copy of the chat messages they were distilled from goes too (the rest of "
    "the conversation is re-indexed without them), and held drafts and exceptions "
    "that name them; audit records that could carry their words lose their texts "
    "(the audit keeps the ids and still verifies)",
)
async def forget(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    token = rest.strip()
    if not token:
        raise UsageError()
    memory = owner.memory
    kind, value = split_target(token)
    event: str | None = None
    if kind == "event":
        event = value
        facts = await memory.by_event([value])
    else:
        fact = await memory.get(token)
        facts = [fact] if fact is not None else []
        if not facts:
            facts = await memory.by_event([token])
            event = token if facts else None
    if not facts:
        raise CommandError(f"no fact or event called {token!r}")
    done = await forget_facts(owner, facts, event, by=ctx.sender.identity)
    extra = f"; erased {done.turns} source turn{'s' * (done.turns != 1)}" if done.turns else ""
    extra += f"; revoked exceptions {done.revoked}" if done.revoked else ""
    extra += f"; withdrew held replies {done.withdrawn}" if done.withdrawn else ""
    extra += f"; erased undelivered {done.undelivered}" if done.undelivered else ""
    if done.audit.record is not None:
        n = len(done.audit.records)
        extra += f"; erased their words from {n} audit record{'s' * (n != 1)} (erasure {done.audit.record.id})"
    return (
        f"Erased {', '.join(done.facts)} and their vectors{extra}. The audit keeps the ids and that they were erased."
    )
