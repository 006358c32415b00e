"""``/consult``: the owner answers the delegate's question about closed facts someone asked for.

A consultation (bot/consultations/) is one event's closed facts that would answer a contact's
question. The buttons are plain commands, like every owner button: a tap from anyone but the
owner is just a message to the delegate (audited as an attempted command) and changes nothing.

    /consults                    the open consultations, with the facts' words
    /consult ID tell             only the asker may know (the facts stay closed to everyone else)
    /consult ID like             the asker and everyone the suggestion names (level, domain)
    /consult ID who              who may know: the review picker of the fact
    /consult ID private          keep private: never asked again for this event
    /consult ID cover FACT       it is my cover story for FACT: told (to those the suggestion
                                 names) instead of FACT to whoever may not know FACT

With ``EPMEM_CONSULT_PER_REPLY`` above 1, the answer's reply carries the next consultation the
same question leads to (bot/consultations/flow.py ``ask_next``), with its buttons. ID may be the first
6 characters /consults shows (any prefix of 4 or more that only one consultation has).
"""

from __future__ import annotations

from epmem.identity import LOCAL
from epmem.ingest import ReviewError

from bot import consultations
from bot.commands.registry import CommandContext, CommandError, CommandSet, Reply, UsageError
from bot.commands.review import picker
from bot.consultations import Consultation, Consultations
from bot.quoting import quote
from bot.services import OwnerServices

commands = CommandSet()


def _service(owner: OwnerServices) -> Consultations:
    if owner.consultations is None:
        raise CommandError("consultations are not available in this process")
    return owner.consultations


#: how many characters of a consultation's id are shown; any unambiguous prefix of 4 or more is taken.
SHORT = 6


def short(c: Consultation) -> str:
    """What the owner types for a consultation: its number in this data folder."""
    return str(c.number) if c.number else c.id[:SHORT]


async def _open(owner: OwnerServices, ref: str) -> Consultation:
    """The consultation a typed id names: its id, or a prefix only one consultation has."""
    found = await _service(owner).store.find(ref)
    if not found:
        raise CommandError(f"no consultation {ref!r} (see /consults)")
    if len(found) > 1:
        raise CommandError(f"{ref!r} is the start of {len(found)} consultations' ids: type more of it (see /consults)")
    c = found[0]
    if c.state != "open":
        raise CommandError(f"consultation {c.id} is already {c.state}")
    return c


async def what_waits(owner: OwnerServices) -> str | None:
    """One line for the start of the owner's session: what waits for them (None: nothing)."""
    parts = []
    if owner.consultations is not None:
        n = len(await owner.consultations.store.pending())
        if n:
            parts.append(f"{n} consultation{'s' * (n != 1)} wait{'s' * (n == 1)}: /consults")
    if owner.review is not None:
        n = await owner.review.waiting()
        if n:
            parts.append(f"{n} fact{'s' * (n != 1)} wait{'s' * (n == 1)} for review: /review")
    return "; ".join(parts) or None


async def _listed(owner: OwnerServices, c: Consultation) -> str:
    """One waiting consultation: who asked what, the facts' words, and the typed answers."""
    lines = [
        f"[{short(c)}] {c.contact} asked \u201c{quote(c.question, 120)}\u201d ({c.platform}, expires {c.expires_at:%Y-%m-%d %H:%M} UTC)"
    ]
    for fid in c.facts[:5]:
        fact = await owner.memory.get(fid)
        if fact is not None:
            lines.append(f"  {fid}: \u201c{quote(fact.text, 200)}\u201d")
    if len(c.facts) > 5:
        lines.append(f"  \u2026 and {len(c.facts) - 5} more of the same event")
    lines.append(f"  answer: /consult {short(c)} tell | like | who | private")
    return "\n".join(lines)


@commands.command("consults", summary="the questions I am waiting on you for, about facts you have not opened")
async def consults(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    waiting = await _service(owner).store.pending()
    if not waiting:
        return "No consultations wait for you."
    n = len(waiting)
    head = (
        f"{n} consultation{'s' * (n != 1)} wait{'s' * (n == 1)} (tell: only the asker may know; like: people "
        "like them too; who: pick who; private: nobody):"
    )
    return "\n".join([head, *[await _listed(owner, c) for c in waiting]])


@commands.command(
    "consult",
    "ID tell|like|who|private|cover FACT",
    summary="answer a consultation: tell the asker, tell people like them, pick who, or keep private",
    details="the answer applies to every fact of the event and to later askers; when it lets the "
    "asker know, they get a follow-up in the same chat; 'cover FACT': the fact asked about is your "
    "cover story for FACT (said instead of it to whoever may not know it)",
)
async def consult(owner: OwnerServices, rest: str, ctx: CommandContext) -> str | Reply:
    tap = consultations.parse(rest)
    if tap is None:
        raise UsageError()
    c = await _open(owner, tap.consultation)
    queue = _service(owner).review
    try:
        q = await queue.question(c.facts[0])
    except ReviewError as exc:
        raise CommandError(str(exc)) from None
    if tap.key == "who":
        fact = await owner.memory.get(q.fact_id)
        assert fact is not None
        return picker(owner, q, fact, 0)
    try:
        if tap.truth is not None:
            decision = consultations.cover_answer(q, tap.truth)
        else:
            decision = consultations.review_answer(owner, c, q, tap.key)
        settled = await consultations.answer(
            owner, c, decision, tap.key, by=ctx.sender.identity, platform=ctx.inbound.platform
        )
    except ReviewError as exc:
        raise CommandError(str(exc)) from None
    sent = f" Followed up with {c.contact}." if settled.followups else ""
    if settled.undelivered and c.platform == LOCAL.platform:
        sent += (
            f" {c.contact} gets the follow-up when they next open a console chat"
            f" (epmem chat --as {c.contact_id or 'stranger'})."
        )
    elif settled.undelivered:
        sent += f" {c.platform} did not take the follow-up to {c.contact} now: they will hear it when they ask again."
    if settled.ask is not None:  # the next thing that would answer the same question
        return Reply(f"{settled.message}{sent}\n\n{settled.ask}", settled.actions)
    return f"{settled.message}{sent}"
