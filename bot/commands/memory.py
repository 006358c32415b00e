"""``/remember`` and ``/forget``: the owner adds to memory, or erases from it for good.

A forgotten fact goes with its vectors, the chat messages it was distilled from (every copy;
the rest of those conversations is re-indexed without them), the exceptions that name it and
held drafts that would tell it. The audit keeps the ids, not the text.
"""

from __future__ import annotations

import uuid

from epmem.ingest.annotate import classify
from epmem.memory.facts import Fact
from epmem.textnorm import third_person

from bot.commands.registry import CommandContext, CommandError, CommandSet
from bot.services import OwnerServices

commands = CommandSet()


@commands.command("remember", "TEXT", summary="add a note to memory (annotated by the policy's keywords)")
async def remember(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    if not rest:
        raise CommandError("usage: /remember TEXT")
    policy = owner.policy
    note = uuid.uuid4().hex[:8]
    text = third_person(rest, policy.owner.name.split()[0])
    ann = classify(text, policy)
    fact = Fact(id=f"n{note}", text=text, event_id=f"ev-{note}", category=ann.category, level=ann.level,
                domain=ann.domain, state="annotated")
    await owner.memory.add([fact])
    await owner.record_change({"action": "remember", "fact": fact.id, "category": ann.category, "level": ann.level})
    return f"Remembered as {fact.id}: {text} (category {ann.category}, L{ann.level}). Change with /allow or /deny."


@commands.command("forget", "FACT|event:ID", summary="erase facts, their vectors and source messages",
                  details="every copy of the chat messages they were distilled from goes too (the rest of "
                          "the conversation is re-indexed without them), and held drafts and exceptions "
                          "that name them; the audit keeps the ids, not the text")
async def forget(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    token = rest.strip()
    if not token:
        raise CommandError("usage: /forget FACT | /forget event:EVENT_ID")
    memory = owner.memory
    kind, _, value = token.partition(":")
    event: str | None = None
    if kind == "event" and value:
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
    ids = sorted(f.id for f in facts)
    await memory.forget(ids)
    sources = sorted({ref for f in facts for ref in f.source_turns})
    turns = await owner.conversations.erase_turns(sources)
    revoked = []
    for number, exc in await owner.overlay.exceptions():
        target_kind, target = exc.target()
        if (target_kind == "fact" and target in ids) or (target_kind == "event" and event and target == event):
            await owner.overlay.revoke(number)
            revoked.append(number)
    withdrawn = await owner.approvals.drop_disclosing(ids)
    undelivered = await owner.deliveries.erase_disclosing(ids)
    await owner.record_change({"action": "forget", "facts": ids, "event": event, "source_turns_erased": turns,
                               "exceptions_revoked": revoked, "approvals_withdrawn": withdrawn,
                               "undelivered_erased": undelivered, "by": ctx.sender.identity})
    extra = f"; erased {turns} source turn{'s' * (turns != 1)}" if turns else ""
    extra += f"; revoked exceptions {revoked}" if revoked else ""
    extra += f"; withdrew held replies {withdrawn}" if withdrawn else ""
    extra += f"; erased undelivered {undelivered}" if undelivered else ""
    return f"Erased {', '.join(ids)} and their vectors{extra}. The audit keeps that they were erased."
