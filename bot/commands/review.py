"""``/review``: the owner settles the facts the delegate was unsure of, one tap per fact.

The questions come from the library's review queue (epmem.ingest.review), one per event (the
facts of one message and the same news in other chats: the question lists them, and the answer
applies to all of them), most consequential first. One question is
shown at a time with its choices as buttons (an inline keyboard on Telegram, Block Kit buttons
on Slack, typed commands on the console), and answering one shows the next, up to a small
batch (``ReviewConfig.batch``); then the owner's answers are used to settle what they now make
clear, and ``/review`` starts the next batch.

Every button is a plain command (``/review FACT ok #2``), so a tap is exactly what the presser
would have typed, and like anything typed it changes something only when the owner sends it:
anyone else pressing a forwarded button, or forging its callback data, is just talking to the
delegate (audited as an attempted command). Each answer applies at once, is audited as a
policy change (who, where, from and to), and becomes a labelled example for the owner's later
facts. ``#N`` counts the answers given so far in this batch; it keeps the buttons stateless.

Grammar (FACT is a fact id, or its short form: bot/commands/factref.py)::

    /review                      the next question
    /review FACT                 that fact as a question (any fact, pending or not)
    /review FACT ok | c:CATEGORY | private | skip
    /review FACT who             who may know: a picker; each tap adds or removes one person
    /review FACT +WHO            (a picker tap) only these people may know (level 0)
    /review FACT who ANA,BEN     the same, typed at once
    /review FACT done            close the picker (nobody picked: keep it private)
    /review FACT ... confirm     the same, out of a never-share category (bot/commands/opening.py)
"""

from __future__ import annotations

import re
from collections.abc import Callable

from connectors.base import Action
from epmem.identity import LOCAL
from epmem.ingest import ReviewAnswer
from epmem.ingest import ReviewError, ReviewQueue
from epmem.ingest import ReviewQuestion as Question
from epmem.memory import Fact

from bot.commands.factref import resolve, short_ids
from bot.commands.opening import CONFIRM, needs_confirmation
from bot.commands.registry import CommandContext, CommandError, CommandSet, Reply
from bot.consultations import follow_up_events
from bot.services import OwnerServices

commands = CommandSet()

#: people offered on the "who may know" picker.
PICKER_PEOPLE = 10
_POSITION = re.compile(r"^#(\d{1,3})$")
#: the other facts an answer settles, listed under the question.
SHOWN_ALSO = 5
_CLIP = 300
_CLIP_ALSO = 100


def _clip(text: str, width: int = _CLIP) -> str:
    return text if len(text) <= width else text[: width - 1] + "\u2026"


def _queue(owner: OwnerServices) -> ReviewQueue:
    if owner.review is None:
        raise CommandError("the review queue is not available in this process")
    return owner.review


def _audience(q: Question, stranger_weight: int) -> str:
    if q.exposure >= stranger_weight:
        return "anyone who asks could be told"
    if q.exposure == 0:
        return "nobody but you would be told"
    return f"{q.exposure} of your contacts could be told"


def _name(owner: OwnerServices, who: str) -> str:
    contact = owner.policy.contacts.get(who)
    return contact.name if contact is not None else who


def render(
    owner: OwnerServices,
    queue: ReviewQueue,
    q: Question,
    answered: int,
    waiting: int,
    short: Callable[[str], str] | None = None,
) -> Reply:
    """One question and its buttons; ``short``: on the console, where the buttons are typed,
    the fact's short id (bot/commands/factref.py) and no "tap"."""
    fid = short(q.fact_id) if short is not None else q.fact_id
    batch = queue.config.batch
    total = min(batch, answered + max(waiting, 1))
    lines = [
        f"Review {answered + 1}/{total} ({waiting} waiting; the ones where a wrong guess costs most come first)"
        if q.state != "owner-set"
        else f"Review of {q.fact_id} ({q.state})",
        f"{fid}: \u201c{_clip(q.text)}\u201d",
    ]
    if q.covers_text:
        lines.append(f"(what is said instead of: \u201c{_clip(q.covers_text)}\u201d)")
    lines.append(f"Suggested: {q.suggested.describe()}: {_audience(q, queue.config.stranger_weight)}.")
    if q.reasons:
        lines.append("Why: " + ", ".join(q.reasons[:6]))
    if q.also:
        lines.append(
            f"Your answer applies to these {q.applies_to} facts (the same message, or the same news in other chats):"
        )
        lines += [
            f"  {fid}: \u201c{_clip(text, _CLIP_ALSO)}\u201d"
            for fid, text in zip(q.also[:SHOWN_ALSO], q.also_text[:SHOWN_ALSO])
        ]
        if len(q.also) > SHOWN_ALSO:
            lines.append(f"  \u2026 and {len(q.also) - SHOWN_ALSO} more")
    tap = ", or tap:" if short is None else ", or one of these:"
    lines.append(f"Type /review {fid} ok | c:CATEGORY | private | who | skip{tap}")
    tag = f" #{answered}"
    actions = [Action(f"\u2713 {q.suggested.describe()}", f"/review {fid} ok{tag}")]
    actions += [Action(c.describe(), f"/review {fid} c:{c.category}{tag}") for c in q.alternatives]
    actions.append(Action("\U0001f512 Keep private", f"/review {fid} private{tag}"))
    if not _never_shared(owner, q):  # nobody can be let in on a never-share category
        actions.append(Action("\U0001f465 Who may know\u2026", f"/review {fid} who{tag}"))
    actions.append(Action("Ask me later", f"/review {fid} skip{tag}"))
    return Reply("\n".join(lines), tuple(actions))


def _never_shared(owner: OwnerServices, q: Question) -> bool:
    cat = owner.policy.categories.get(q.suggested.category)
    return cat is not None and cat.never_share


def _only(fact: Fact) -> list[str]:
    """Who may know, as the picker set it (level 0 by the owner); empty before any tap."""
    return list(fact.whitelist) if fact.state == "owner-set" and fact.level == 0 else []


def picker(owner: OwnerServices, q: Question, fact: Fact, answered: int) -> Reply:
    chosen = _only(fact)
    now = ", ".join(_name(owner, w) for w in chosen) if chosen else "nobody but you"
    text = (
        f"Who may know {q.fact_id}: \u201c{_clip(q.text)}\u201d?\nTap people to add or remove them; only "
        f"they will know. Now: {now}."
    )
    tag = f" #{answered}"
    people = [p for p in dict.fromkeys([*chosen, *q.people])][:PICKER_PEOPLE]
    actions = [
        Action(("\u2713 " if p in chosen else "") + _name(owner, p), f"/review {q.fact_id} +{p}{tag}") for p in people
    ]
    actions.append(Action("Done", f"/review {q.fact_id} done{tag}"))
    return Reply(text, tuple(actions))


async def next_question(owner: OwnerServices, answered: int, done: list[str], console: bool = False) -> Reply:
    """What follows an answer: the next question, or the end of the batch."""
    queue = _queue(owner)
    waiting = await queue.waiting()
    if answered >= queue.config.batch or not waiting:
        settled = await queue.relearn()
        if settled:
            await owner.record_change({"action": "review_relearn", "facts": [f.id for f in settled]})
            done.append(
                f"What you told me settled {len(settled)} more: {', '.join(f.id for f in settled[:10])}"
                f"{' ...' if len(settled) > 10 else ''}."
            )
            waiting = await queue.waiting()
        done.append(
            f"That was the batch. {waiting} more wait: /review for the next."
            if waiting
            else "Nothing else waits for review."
        )
        return Reply("\n".join(done))
    batch = await queue.next_batch(1)
    if not batch:
        done.append("Nothing else waits for review.")
        return Reply("\n".join(done))
    nxt = render(owner, queue, batch[0], answered, waiting, await short_ids(owner) if console else None)
    return Reply("\n".join([*done, "", nxt.text]) if done else nxt.text, nxt.actions)


async def _apply(owner: OwnerServices, answer: ReviewAnswer, ctx: CommandContext) -> str:
    try:
        applied = await _queue(owner).apply(answer)
    except ReviewError as exc:
        raise CommandError(str(exc)) from None
    await owner.record_change({**applied.audit, "by": ctx.sender.identity, "platform": ctx.inbound.platform})
    if answer.kind != "skip":
        await follow_up_events(owner, applied.facts, "review")
    return applied.message


async def _leaving_never_share(
    owner: OwnerServices, q: Question, fact: Fact, key: str, more: list[str], answered: int
) -> Reply | None:
    """The confirmation an answer needs when it would move the fact, or a fact it also settles,
    out of a never-share category (bot/commands/opening.py); None when it needs none."""
    whitelist: list[str] = []
    if key == "ok":
        target = q.suggested.category
    elif key.startswith("c:") and len(key) > 2:
        target = key[2:]
    elif key == "who" and more:
        target, whitelist = q.suggested.category, [w.strip() for w in " ".join(more).split(",") if w.strip()]
    elif key.startswith("+"):
        target, whitelist = q.suggested.category, [*_only(fact), key[1:]]
    else:
        return None
    facts = [fact, *[f for f in [await owner.memory.get(x) for x in q.also] if f is not None]]
    command = " ".join(["/review", q.fact_id, key, *more])
    return needs_confirmation(owner, facts, target, command, whitelist, tag=f" #{answered}")


def _parse(rest: str) -> tuple[list[str], int]:
    words = rest.split()
    answered = 0
    if words and (m := _POSITION.match(words[-1])):
        answered = int(m.group(1))
        words = words[:-1]
    return words, answered


@commands.command(
    "review",
    "[FACT [ok | c:CATEGORY | private | who | skip]]",
    summary="settle the facts I was unsure of, most consequential first, one tap each",
    details="one question at a time in small batches, with buttons on Telegram and Slack; each "
    "answer applies at once, is audited, and teaches the classifier; `who` picks the only "
    "people who may know; moving a fact out of a never-share category asks you to confirm, naming "
    "who it opens to",
    example="review",
)
async def review(owner: OwnerServices, rest: str, ctx: CommandContext) -> str | Reply:
    queue = _queue(owner)
    words, answered = _parse(rest)
    console = ctx.inbound.platform == LOCAL.platform
    if not words:
        if not await queue.waiting():
            return "Nothing waits for review."
        return await next_question(owner, answered, [], console)
    fact_id, key, more = await resolve(owner, words[0]), (words[1] if len(words) > 1 else ""), words[2:]
    try:
        q = await queue.question(fact_id)
    except ReviewError as exc:
        raise CommandError(str(exc)) from None
    if not key:
        return render(owner, queue, q, answered, await queue.waiting(), await short_ids(owner) if console else None)
    fact = await owner.memory.get(fact_id)
    assert fact is not None
    confirmed = CONFIRM in more
    more = [w for w in more if w != CONFIRM]
    if not confirmed:
        held = await _leaving_never_share(owner, q, fact, key, more, answered)
        if held is not None:
            return held
    if (key == "who" or key.startswith("+")) and _never_shared(owner, q):
        raise CommandError(
            f"{q.suggested.category} is never shared, so nobody can be let in on {fact_id}; "
            f"if it is something else, choose its category first (/review {fact_id} c:NAME)"
        )
    if key == "who" and not more:
        return picker(owner, q, fact, answered)
    if key == "who" or key.startswith("+"):
        chosen = _only(fact)
        if key == "who":
            chosen = [w.strip() for w in " ".join(more).split(",") if w.strip()]
        else:
            who = key[1:]
            chosen = [w for w in chosen if w != who] if who in chosen else [*chosen, who]
        blacklist = [b for b in q.suggested.blacklist if b not in chosen]
        await _apply(
            owner,
            ReviewAnswer.set(
                fact_id, q.suggested.category, level=0, domain=q.suggested.domain, whitelist=chosen, blacklist=blacklist
            ),
            ctx,
        )
        updated = await owner.memory.get(fact_id)
        assert updated is not None
        if key == "who":
            done = [f"{fact_id}: only {', '.join(chosen) or 'you'} may know."]
            return await next_question(owner, answered + 1, done, console)
        return picker(owner, await queue.question(fact_id), updated, answered)
    if key == "done":
        if not _only(fact) and fact.state == "pending":
            message = await _apply(owner, ReviewAnswer.private(fact_id), ctx)
        else:
            who = ", ".join(_name(owner, w) for w in _only(fact)) or "you"
            message = f"{fact_id}: only {who} may know."
        return await next_question(owner, answered + 1, [message], console)
    try:
        answer = ReviewAnswer.from_key(fact_id, key)
    except ReviewError as exc:
        raise CommandError(f"{exc}; use ok, c:CATEGORY, private, who or skip") from None
    message = await _apply(owner, answer, ctx)
    return await next_question(owner, answered + (answer.kind != "skip"), [message], console)
