"""The owner's view of annotation: list what the engine decided, fix it, or ask for another try.

``/annotations [pending | WORDS]`` lists facts with their annotation (pending ones are level 0
for everyone until fixed), ``/category FACT NAME`` and ``/confirm FACT`` make an annotation
``owner-set``, ``/reannotate [SESSION...]`` retries the model for sessions still pending.
``/level FACT N`` and ``/domain FACT ...`` (bot/commands/contacts.py) fix the rest. ``/story FACT
WORDS`` writes the owner's own cover story for a fact. Every change is audited as a policy change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from epmem.memory import Fact
from epmem.policy import Domain, InfoLevel

from bot.commands.contacts import get_fact
from bot.commands.matters import matter_lines
from bot.commands.opening import CONFIRM, needs_confirmation
from bot.commands.registry import CommandContext, CommandError, CommandSet, Reply, UsageError
from bot.services import OwnerServices

commands = CommandSet()

MAX_LINES = 50


def describe(f: Fact) -> str:
    lists = ""
    if f.whitelist:
        lists += f" +{','.join(f.whitelist)}"
    if f.blacklist:
        lists += f" -{','.join(f.blacklist)}"
    covers = f" covers {f.covers}" if f.covers else ""
    suggested = (f.state == "pending" or f.closed) and f.level is not None
    level = f"L{f.effective_level()}" + (f" (proposed L{f.level})" if suggested else "")
    if f.closed:
        level += " closed"
    return (
        f"{f.id} [{f.event_id}] {f.version}{covers} {f.category} {level}"
        f"{' ' + f.domain if f.domain else ''}{lists} {f.state}: {f.text}"
    )


async def _save(owner: OwnerServices, fact: Fact, action: dict[str, Any]) -> None:
    await owner.memory.update([fact])
    await owner.record_change({**action, "fact": fact.id})


@commands.command(
    "annotations",
    "[pending | WORDS]",
    summary="facts with their annotation; pending ones, and sessions waiting for the model",
)
async def list_annotations(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    facts = await owner.memory.all()
    words = rest.casefold().split()
    if words[:1] == ["pending"]:
        shown = [f for f in facts if f.state == "pending"]
        words = words[1:]
    else:
        shown = facts
    shown = [f for f in shown if all(w in f.text.casefold() for w in words)]
    lines = [describe(f) for f in shown[:MAX_LINES]]
    if len(shown) > MAX_LINES:
        lines.append(f"... and {len(shown) - MAX_LINES} more; add words to narrow it down")
    lines += await matter_lines(owner)
    distiller = owner.distiller
    if distiller.pending():
        sessions = distiller.pending()
        errors = {sid: distiller.outcomes[sid].errors for sid in sessions if sid in distiller.outcomes}
        lines.append(
            "Sessions waiting for the model: "
            + ", ".join(f"{sid} ({'/'.join(errors.get(sid, [])) or 'queued'})" for sid in sessions)
        )
        lines.append("/reannotate to try again; /category, /level, /domain or /confirm to set by hand.")
    if owner.annotator is not None and owner.annotator.enabled:
        counts = await owner.annotator.journal.model_counts()
        if counts.get("queued") or counts.get("failed") or owner.annotator.progress.queued:
            lines.append(
                f"{owner.annotator.progress.line()}; in the journal: {counts.get('queued', 0)} queued, "
                f"{counts.get('done', 0)} done, {counts.get('failed', 0)} failed"
                + (" (/reannotate to try again)" if counts.get("failed") else "")
            )
    # the same count as /review, the import summary and the digest (the review queue's): the
    # facts in events worth asking about. Other pending facts stay at level 0, unasked.
    waiting = await owner.review.waiting() if owner.review is not None else 0
    pending = sum(1 for f in facts if f.state == "pending")
    if waiting:
        lines.append(f"{waiting} facts wait for your review: /review asks about them, most consequential first.")
    if pending > waiting:
        lines.append(
            f"{pending - waiting} other pending facts have nothing worth asking about: they stay private "
            f"(level 0) unless you settle one by name (/review FACT)."
        )
    return "\n".join(lines) or "No facts."


@commands.command(
    "category",
    "FACT NAME",
    summary="set a fact's category (and so its level and domain)",
    details="moving a fact out of a never-share category asks you to confirm, naming who it opens to",
)
async def category(owner: OwnerServices, rest: str, ctx: CommandContext) -> str | Reply:
    words = rest.split()
    confirmed = len(words) == 3 and words[2] == CONFIRM
    if len(words) != 2 and not confirmed:
        raise UsageError()
    fact = await get_fact(owner, words[0])
    policy = owner.policy
    cat = policy.categories.get(words[1])
    if cat is None:
        raise CommandError(f"no category {words[1]!r}; categories: {', '.join(policy.categories)}")
    if not confirmed:
        held = needs_confirmation(owner, [fact], words[1], f"/category {fact.id} {words[1]}")
        if held is not None:
            return held
    updated = fact.model_copy(
        update={"category": words[1], "level": cat.level, "domain": cat.domain, "state": "owner-set", "closed": False}
    )
    await _save(owner, updated, {"action": "category", "from": fact.category, "to": words[1]})
    return f"Fact {fact.id} is now {words[1]} (L{cat.level}{' ' + cat.domain if cat.domain else ''}), set by you."


@commands.command(
    "reword",
    "FACT NEW WORDS",
    summary="correct a fact's words before anyone is told them",
    details="the annotation and who may know stay as they are; the audit records that the words changed, not the words",
)
async def reword(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    fact_id, _, text = rest.strip().partition(" ")
    text = " ".join(text.split())
    if not fact_id or not text:
        raise UsageError()
    fact = await get_fact(owner, fact_id)
    updated = fact.model_copy(update={"text": text, "evidence": [*fact.evidence, "owner:reworded"]})
    await _save(owner, updated, {"action": "reword"})
    return f"Fact {fact.id} now reads: {text}"


#: the longest story the owner may write (a cover is a sentence or two, not a letter).
MAX_STORY = 500


async def write_story(
    owner: OwnerServices,
    truth_id: str,
    text: str,
    *,
    level: InfoLevel = 4,
    domain: Domain | None = None,
    whitelist: Sequence[str] = (),
    blacklist: Sequence[str] = (),
) -> Fact:
    """Store the owner's cover story for ``truth_id``, in its event: told instead of the truth to
    whoever may not know it. A story says nothing a conversation said, so the extractor cannot
    make one (a truth with no story is deflected for everyone shut out of it); the owner's own
    words are as written, not closed, by default to anyone (level 4: whoever may know the truth
    hears the truth instead, the projection sees to that)."""
    text = " ".join(text.split())
    if not text:
        raise CommandError("a story needs words")
    if len(text) > MAX_STORY:
        raise CommandError(f"a story is at most {MAX_STORY} characters ({len(text)} given)")
    truth = await get_fact(owner, truth_id)
    if truth.version != "truth":
        raise CommandError(f"fact {truth.id} is itself a cover story (for {truth.covers}): name the truth")
    n = 1
    while await owner.memory.get(story_id := f"{truth.id}-story{n if n > 1 else ''}") is not None:
        n += 1
    story = Fact(
        id=story_id,
        text=text,
        event_id=truth.event_id,
        version="cover",
        covers=truth.id,
        category=truth.category,
        level=level,
        domain=domain,
        whitelist=list(whitelist),
        blacklist=list(blacklist),
        state="owner-set",
        evidence=["owner:story"],
    )
    await owner.memory.add([story])
    await owner.record_change({"action": "story", "fact": story.id, "covers": truth.id, "level": level})
    return story


@commands.command(
    "story",
    "FACT WORDS",
    summary="your cover story for a fact: told instead of it to whoever may not know it",
    details="the story is yours as written: anyone who may not know FACT may hear it (narrow it with /level or "
    "/domain); whoever may know FACT hears FACT; the audit records that a story was written, not its words",
)
async def story(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    fact_id, _, text = rest.strip().partition(" ")
    if not fact_id or not text.strip():
        raise UsageError()
    written = await write_story(owner, fact_id, text)
    return (
        f"Story {written.id} for {fact_id}, told instead of it to whoever may not know it (anyone; "
        f"/level {written.id} N to narrow it): {written.text}"
    )


@commands.command("confirm", "FACT", summary="accept a fact's proposed annotation as is")
async def confirm(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    """Accept a fact's proposed annotation as is (for a pending fact: the rules' proposal)."""
    if not rest.strip():
        raise UsageError()
    fact = await get_fact(owner, rest.strip())
    if fact.category is None or fact.level is None:
        raise CommandError(f"fact {fact.id} has no proposed annotation: use /category first")
    updated = fact.model_copy(update={"state": "owner-set", "closed": False})
    await _save(owner, updated, {"action": "confirm", "level": fact.level, "category": fact.category})
    return f"Confirmed: {describe(updated)}"


@commands.command("reannotate", "[SESSION...]", summary="ask the model again for sessions still pending")
async def reannotate(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    distiller = owner.distiller
    if distiller.model is None:
        return "Nothing to retry: the rules backend annotates as it ingests."
    chosen = distiller.reannotate(rest.split() or None)
    if owner.annotator is not None:
        chosen += [s for s in await owner.annotator.requeue(rest.split() or None) if s not in chosen]
    if not chosen:
        return "No pending session matches." if rest.strip() else "No session is waiting for the model."
    return f"Annotating again in the background: {', '.join(chosen)}."
