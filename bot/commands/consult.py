"""``/consult``: the owner answers the delegate's question about closed facts someone asked for.

A consultation (bot/consulting.py) is one event's closed facts that would answer a contact's
question. The buttons are plain commands, like every owner button: a tap from anyone but the
owner is just a message to the delegate (audited as an attempted command) and changes nothing.

    /consults                    the open consultations
    /consult ID tell             only the asker may know (the facts stay closed to everyone else)
    /consult ID like             the asker and everyone the suggestion names (level, domain)
    /consult ID who              who may know: the review picker of the fact
    /consult ID private          keep private: never asked again for this event
    /consult ID cover FACT       it is my cover story for FACT: told (to those the suggestion
                                 names) instead of FACT to whoever may not know FACT

With ``EPMEM_CONSULT_PER_REPLY`` above 1, the answer's reply carries the next consultation the
same question leads to (bot/consulting.py ``ask_next``), with its buttons.
"""

from __future__ import annotations

from epmem.ingest import ReviewError

from bot import consulting
from bot.commands.registry import CommandContext, CommandError, CommandSet, Reply, UsageError
from bot.commands.review import picker
from bot.consultations import Consultation, Consultations
from bot.quoting import quote
from bot.services import OwnerServices

commands = CommandSet()


def _store(owner: OwnerServices) -> Consultations:
    if owner.consultations is None or owner.review is None:
        raise CommandError("consultations are not available in this process")
    return owner.consultations


async def _open(owner: OwnerServices, cid: str) -> Consultation:
    c = await _store(owner).get(cid)
    if c is None:
        raise CommandError(f"no consultation {cid!r} (see /consults)")
    if c.state != "open":
        raise CommandError(f"consultation {cid} is already {c.state}")
    return c


@commands.command("consults", summary="the questions I am waiting on you for, about facts you have not opened")
async def consults(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    waiting = await _store(owner).pending()
    if not waiting:
        return "No consultations wait for you."
    return "\n".join(
        f"{c.id}: {c.contact} asked \u201c{quote(c.question, 120)}\u201d ({len(c.facts)} fact(s) of "
        f"{c.event_id}, expires {c.expires_at:%Y-%m-%d %H:%M} UTC): /consult {c.id} "
        f"tell | like | who | private"
        for c in waiting
    )


@commands.command(
    "consult",
    "ID tell|like|who|private|cover FACT",
    summary="answer a consultation: tell the asker, tell people like them, pick who, or keep private",
    details="the answer applies to every fact of the event and to later askers; when it lets the "
    "asker know, they get a follow-up in the same chat; 'cover FACT': the fact asked about is your "
    "cover story for FACT (said instead of it to whoever may not know it)",
)
async def consult(owner: OwnerServices, rest: str, ctx: CommandContext) -> str | Reply:
    words = rest.split()
    covering = len(words) == 3 and words[1] == consulting.COVER
    if not covering and (len(words) != 2 or words[1] not in consulting.KEYS):
        raise UsageError()
    c = await _open(owner, words[0])
    queue = owner.review
    assert queue is not None
    try:
        q = await queue.question(c.facts[0])
    except ReviewError as exc:
        raise CommandError(str(exc)) from None
    if words[1] == "who":
        fact = await owner.memory.get(q.fact_id)
        assert fact is not None
        return picker(owner, q, fact, 0)
    try:
        decision = consulting.cover_answer(q, words[2]) if covering else consulting.review_answer(owner, c, q, words[1])
        settled = await consulting.answer(
            owner, c, decision, words[1], by=ctx.sender.identity, platform=ctx.inbound.platform
        )
    except ReviewError as exc:
        raise CommandError(str(exc)) from None
    sent = f" Followed up with {c.contact}." if settled.followups else ""
    if settled.undelivered:
        sent += f" {c.platform} did not take the follow-up to {c.contact} now: they will hear it when they ask again."
    if settled.ask is not None:  # the next thing that would answer the same question
        return Reply(f"{settled.message}{sent}\n\n{settled.ask}", settled.actions)
    return f"{settled.message}{sent}"
