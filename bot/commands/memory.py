"""``/remember`` and ``/forget``: the owner adds to memory, or erases from it for good.

A forgotten fact goes with its vectors, the chat messages it was distilled from (every copy;
the rest of those conversations is re-indexed without them), the exceptions that name it and
held drafts that would tell it. Every audit record that could carry its words loses its texts
(epmem.audit.erase): the audit keeps the ids, verdicts and who was told, and still verifies.
"""

from __future__ import annotations

import uuid

from epmem.audit import erase_facts
from epmem.sqlite import scrub

from bot.commands.parsing import split_target
from bot.commands.registry import CommandContext, CommandError, CommandSet, UsageError
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
    if owner.consultations is not None:  # open questions about the facts go, with their words
        await owner.consultations.store.withdraw_naming(ids)
    sentences = [f.text for f in facts]
    undelivered = await owner.deliveries.erase_disclosing(ids, sentences)
    await owner.approvals.erase_texts(ids, sentences)
    await scrub(owner.overlay.db)  # held drafts, queued replies and the fact register share state.sqlite
    await owner.record_change(
        {
            "action": "forget",
            "facts": ids,
            "event": event,
            "source_turns_erased": turns,
            "exceptions_revoked": revoked,
            "approvals_withdrawn": withdrawn,
            "undelivered_erased": undelivered,
            "by": ctx.sender.identity,
        }
    )
    erased = await erase_facts(owner.audit, ids, sentences, by=ctx.sender.identity, details={"event": event})
    extra = f"; erased {turns} source turn{'s' * (turns != 1)}" if turns else ""
    extra += f"; revoked exceptions {revoked}" if revoked else ""
    extra += f"; withdrew held replies {withdrawn}" if withdrawn else ""
    extra += f"; erased undelivered {undelivered}" if undelivered else ""
    if erased.record is not None:
        n = len(erased.records)
        extra += f"; erased their words from {n} audit record{'s' * (n != 1)} (erasure {erased.record.id})"
    return f"Erased {', '.join(ids)} and their vectors{extra}. The audit keeps the ids and that they were erased."
