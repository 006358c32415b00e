"""The consultation flow: ask the owner about closed facts when a question needs them, and
follow up once the owner has answered (the table is bot/consultations.py).

1. ``ask_owner``: after a contact's reply has been decided and audited (it never depends on
   what follows), the best undecided closed fact that would answer the question is put to the
   owner as a review question of its event: who asked, the question, the facts' words, and
   one-tap answers. ``/consult ID tell | like | who | private`` (bot/commands/consult.py).
2. ``answer``: the owner's answer applies to every fact of that event (the review queue does it,
   so it is audited and teaches the classifier like any review answer) and to later askers.
3. ``follow_up``: every asker still waiting on that event gets the question answered again,
   decided at send time (the policy may have changed; composites; in a group, whoever is in
   it then, ``Outbox.readers``), and the reply is sent in the same chat only if it now tells
   something of that event. Audited like any reply, with its ledger lines.
4. ``ask_next``: one reply may lead to up to ``ConsultConfig.per_reply`` consultations, one at a
   time: once the owner has answered, the next event that would answer the same question and is
   still closed is put to the owner in the answer's reply (a question often needs more than one
   event: "What's new with the family?"), never two at once. An answer that keeps a truth from
   the asker is followed at once by the question about its cover story, still closed: what they
   may hear instead is part of the same event (``_stories_instead``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import structlog

from connectors.base import Action, ChatKind, Delegation, Inbound
from connectors.courier import maybe_delivered
from epmem.identity import LOCAL
from epmem.audit import (
    ConsultationRecord,
    DeliveryFailedRecord,
    FollowupRecord,
    FollowupSkippedRecord,
    REFUSED,
    UNKNOWN,
)
from epmem.ingest import ReviewAnswer, ReviewError
from epmem.ingest import ReviewQuestion as Question
from epmem.language import Language
from epmem.memory import Fact
from epmem.policy import Recipient, Resolved, audience_allows
from epmem.reply import Answer, asks_yes_or_no, unsaid

from bot import consult_bounds
from bot.consultations import Consultation
from bot.quoting import quote
from bot.services import OwnerServices

log = structlog.get_logger(__name__)

#: the answers a consultation offers, each one tap (``/consult ID KEY``).
KEYS = ("tell", "like", "who", "private")
#: not a tap: ``/consult ID cover FACT`` names the truth the fact asked about stands in for.
COVER = "cover"


def _name(owner: OwnerServices, who: str) -> str:
    contact = owner.policy.contacts.get(who)
    return contact.name if contact is not None else who


async def ask_owner(
    owner: OwnerServices,
    inbound: Inbound,
    sender: Resolved,
    audience: Sequence[Resolved],
    question: str,
    answer: Answer,
    audit_id: str,
) -> tuple[str | None, tuple[Action, ...]]:
    """Open a consultation for the best closed fact that would answer; the owner's note and
    buttons when the owner is to be asked now (None when the bounds say no, or another asker's
    consultation of the same event already asked)."""
    store, queue = owner.consultations, owner.review
    if store is None or queue is None or not consultable(owner, inbound, sender, audience, answer):
        return None, ()
    try:
        q = await queue.question(answer.consult[0])
    except ReviewError:
        return None, ()
    fact = await owner.memory.get(q.fact_id)
    if fact is None or await store.waits(inbound.sender, fact.event_id):
        return None, ()
    reason = await consult_bounds.check(owner, store, fact, sender, audience)
    if reason is not None:  # written down for the digest (bot/consult_bounds.py)
        facts = [q.fact_id, *q.also]
        await consult_bounds.record_skip(owner, inbound, sender, fact, facts, q.suggested.category, reason, audit_id)
        return None, ()
    c = await store.open(
        event_id=fact.event_id,
        facts=[q.fact_id, *q.also],
        platform=inbound.platform,
        chat_id=inbound.chat_id,
        chat_kind=inbound.chat_kind,
        sender=inbound.sender,
        contact=sender.label,
        contact_id=None if sender.recipient.is_stranger else sender.contact_id,
        audience=[r.identity for r in audience],
        question=question,
        audit_id=audit_id,
    )
    if c is None:
        return None, ()
    await owner.audit.write(
        ConsultationRecord(
            consultation=c.id,
            platform=c.platform,
            chat=c.chat_id,
            contact=c.contact,
            question=question,
            event=c.event_id,
            facts=list(c.facts),
            reply_audit=audit_id,
            joined=c.lead,
        ),
        contact=c.contact,
    )
    log.info("consultation_opened", consultation=c.id, contact=c.contact, facts=len(c.facts), joined=c.lead)
    if not c.asked_owner:
        return None, ()
    earlier = await earlier_answers(owner, fact)
    first = earlier[0][0] if earlier else None
    return note(owner, c, q, sender), actions(owner, c, q, sender, first if first in KEYS else None)


def owner_language(owner: OwnerServices) -> Language:
    """What the delegate tells the owner is in the owner's language (policy ``owner.language``),
    whatever the language of the question it is about; English when unset."""
    return owner.policy.owner.language or "en"


def _audience_words(owner: OwnerServices, level: int, domain: str | None, whitelist: Sequence[str] = ()) -> str:
    """An audience in words ("contacts at trust level 1 or closer in life"), not as a code."""
    if owner_language(owner) == "zh":
        return _audience_words_zh(owner, level, domain, whitelist)
    if level == 0:
        who = "nobody"
    elif level == 4 and domain is None:
        who = "anyone who asks"
    else:
        who = f"contacts at trust level {level} or closer" + (f" in {domain}" if domain else "")
    extra = [_name(owner, w) for w in whitelist]
    if extra:
        who = ", ".join(extra) if level == 0 else f"{who}, and {', '.join(extra)}"
    return who


def _audience_words_zh(owner: OwnerServices, level: int, domain: str | None, whitelist: Sequence[str]) -> str:
    if level == 0:
        who = "谁都不告诉"
    elif level == 4 and domain is None:
        who = "任何问起的人"
    else:
        circle = {"work": "工作", "life": "生活"}.get(domain or "", domain or "")
        who = f"信任等级{level}及更亲近的联系人" + (f"（{circle}方面）" if domain else "")
    extra = [_name(owner, w) for w in whitelist]
    if extra:
        who = "、".join(extra) if level == 0 else f"{who}，以及{'、'.join(extra)}"
    return who


def may_consult(owner: OwnerServices, inbound: Inbound, sender: Resolved, audience: Sequence[Resolved]) -> bool:
    """Whether a reply here may consult the owner at all: not answered as the owner, read by
    contacts only (a stranger only when the owner turned that on); in a group only where the
    platform can say who reads the chat when the follow-up is sent (it is decided for everyone
    then in the chat, ``Outbox.readers``). Only then does the reply ask which closed facts
    would answer (``PrivacyEngine.answer(with_closed=True)``)."""
    store = owner.consultations
    if store is None or owner.review is None or inbound.delegation is not None or not audience:
        return False
    if inbound.chat_kind == "direct":
        if len(audience) != 1:
            return False
    elif not store.config.groups or not owner.outbox.knows_readers(inbound.platform):
        return False
    return store.config.strangers or not any(r.recipient.is_stranger for r in audience)


def consultable(
    owner: OwnerServices, inbound: Inbound, sender: Resolved, audience: Sequence[Resolved], answer: Answer
) -> bool:
    """Whether this reply consults the owner: it may, and closed facts would answer."""
    return bool(answer.consult) and may_consult(owner, inbound, sender, audience)


async def open_as_learned(
    owner: OwnerServices,
    inbound: Inbound,
    sender: Resolved,
    audience: Sequence[Resolved],
    question: str,
    answer: Answer,
) -> str | None:
    """The owner's opt-in (``EPMEM_CONSULT_LEARN_AFTER`` = N, off by default): when the owner
    answered the N nearest earlier consultations about similar facts with one and the same
    audience, the best closed fact's event is opened to it without asking, before the reply is
    written (the caller answers again). Returns the note for the owner, None when it did not."""
    store, queue = owner.consultations, owner.review
    if store is None or queue is None or store.config.learn_after <= 0:
        return None
    if not consultable(owner, inbound, sender, audience, answer):
        return None
    try:
        q = await queue.question(answer.consult[0])
    except ReviewError:
        return None
    fact = await owner.memory.get(q.fact_id)
    learned = consistent(await earlier_answers(owner, fact), store.config.learn_after) if fact else None
    if learned is None:
        return None
    level, domain = learned
    decision = ReviewAnswer.set(
        q.fact_id,
        q.suggested.category,
        level=level,
        domain=domain,  # type: ignore[arg-type]
        whitelist=[],
        blacklist=list(q.suggested.blacklist),
    )
    applied = await queue.apply(decision, tag=f"owner:consult:{LEARNED}")
    await owner.record_change(
        {**applied.audit, "answer": LEARNED, "by": "learned", "platform": inbound.platform, "asked_by": sender.label}
    )
    log.info("consultation_learned", fact=q.fact_id, facts=len(applied.facts))
    if owner_language(owner) == "zh":
        return (
            f"{sender.recipient.name}问：\u201c{quote(question, 120)}\u201d。我已把 {q.fact_id}"
            f"（\u201c{quote(q.text, 120)}\u201d）公开给：{_audience_words(owner, level, domain)}，因为你对最近 "
            f"{store.config.learn_after} 个类似的问题都是这样回答的。要改的话：/review {q.fact_id}"
        )
    return (
        f"{sender.recipient.name} asked \u201c{quote(question, 120)}\u201d: I opened "
        f"{q.fact_id} (\u201c{quote(q.text, 120)}\u201d) to {_audience_words(owner, level, domain)}, as you "
        f"answered the last {store.config.learn_after} questions about facts like it. "
        f"/review {q.fact_id} to change it."
    )


def _suggested_words(owner: OwnerServices, q: Question) -> str:
    s = q.suggested
    return _audience_words(owner, s.level, s.domain, s.whitelist)


def _like(readers: Sequence[Resolved]) -> tuple[int, str | None]:
    """ "Everyone like them": the readers' own circle, the widest trust level among them and
    their domain, or both domains when they are not in one (a stranger's is anyone who asks)."""
    people = [r.recipient for r in readers]
    if not people or any(r.is_stranger for r in people):
        return 4, None
    domains = {r.domain for r in people}
    return max(r.level for r in people), (next(iter(domains)) if len(domains) == 1 else None)


def _readers(owner: OwnerServices, c: Consultation) -> list[Resolved]:
    """Who read the reply the consultation is about (the owner left out)."""
    return owner.directory.readers(c.audience)


def _whitelistable(readers: Sequence[Resolved]) -> bool:
    """Everyone who read is a named contact: "tell them" can whitelist each of them."""
    return bool(readers) and not any(r.recipient.is_stranger for r in readers)


def _names(readers: Sequence[Resolved], them: str, joiner: str) -> str:
    return joiner.join(r.recipient.name for r in readers) if _whitelistable(readers) else them


#: the consultation note's lines, per language (the question and the facts quoted as written).
_NOTE: dict[str, dict[str, str]] = {
    "en": {
        "stranger": "someone unknown ({sender})",
        "asked": "{asker} asked ({platform}): \u201c{question}\u201d",
        "group": "(in a group chat, read also by {others}: a follow-up there is for all of them)",
        "others": "people you have not named",
        "and": " and ",
        "without": "I answered without these, which you have not opened to anyone yet:",
        "fact": "  {fid}: \u201c{text}\u201d",
        "said": "  {fid}: {who} said: \u201c{text}\u201d",
        "unsaid": "Their question is not what the fact says: it does not say {words}. Telling them "
        "answers with the fact, not with their question's claim.",
        "cover": "(a story told instead of: \u201c{text}\u201d)",
        "suggest": "Your policy for {category} would suggest: {who}.",
        "how": "Should I tell them? /consult {id} tell | like | who | private. Wrong words? "
        "/reword {fid} THE RIGHT WORDS first. Is it the story you tell instead of something? "
        "/consult {id} cover FACT. A story to tell instead of it? /story {fid} THE STORY.",
    },
    "zh": {
        "stranger": "陌生人（{sender}）",
        "asked": "{asker}（{platform}）问：\u201c{question}\u201d",
        "group": "（在群聊里问的，{others}也在群里：要补充回复的话，群里的人都会看到）",
        "others": "还有你没设置过的人",
        "and": "、",
        "without": "我回答时没有用下面这些内容，你还没有对任何人公开过：",
        "fact": "  {fid}：\u201c{text}\u201d",
        "said": "  {fid}：{who}说：\u201c{text}\u201d",
        "unsaid": "对方问的说法不是这条事实说的：事实里没有说{words}。告诉对方的是这条事实，不是对方问的说法。",
        "cover": "（这是代替下面这件事对外的说法：\u201c{text}\u201d）",
        "suggest": "按你对\u201c{category}\u201d的设置，建议告诉：{who}。",
        "how": "要告诉对方吗？/consult {id} tell | like | who | private。措辞不对？请先用 "
        "/reword {fid} 正确的说法 改过来。这是替别的事打掩护的说法？/consult {id} cover 事实编号。想让别人听到另一种说法？/story {fid} 说法。",
    },
}


def note(owner: OwnerServices, c: Consultation, q: Question, sender: Resolved) -> str:
    """What the owner reads: who asked what, the facts' words, the suggestion, how to answer
    (in the owner's language; the question and the facts quoted, bot/quoting.py)."""
    words = _NOTE[owner_language(owner)]
    r = sender.recipient
    asker = r.name if not r.is_stranger else words["stranger"].format(sender=c.sender)
    lines = [words["asked"].format(asker=asker, platform=c.platform, question=quote(c.question))]
    if c.chat_kind != "direct":
        others = [o for o in _readers(owner, c) if o.identity != c.sender]
        lines.append(words["group"].format(others=_names(others, words["others"], words["and"])))
    lines.append(words["without"])
    texts = [q.text, *q.also_text]
    for fid, text, who in zip(c.facts, texts, [q.stated_by, *q.also_stated_by, *([None] * len(texts))]):
        said = words["said"].format(fid=fid, who=_name(owner, who), text=quote(text)) if who else None
        lines.append(said or words["fact"].format(fid=fid, text=quote(text)))
    if q.covers_text:
        lines.append(words["cover"].format(text=quote(q.covers_text)))
    claim = unsaid(c.question, texts, [owner.policy.owner.name]) if asks_yes_or_no(c.question) else []
    if claim:  # a false rumour is not confirmed by a true fact near it ("Is Noor leaving for Mars?")
        lines.append(words["unsaid"].format(words=", ".join(f"\u201c{w}\u201d" for w in claim)))
    lines.append(words["suggest"].format(category=q.suggested.category, who=_suggested_words(owner, q)))
    lines.append(words["how"].format(id=c.id, fid=q.fact_id))
    return "\n".join(lines)


#: the one-tap answers' labels, per language: tell NAME, like: AUDIENCE and NAME, who, private,
#: as before, and what a stranger is called.
_LABELS: dict[str, dict[str, str]] = {
    "en": {
        "tell": "Tell {name}",
        "like": "Tell {who}, like {name}",
        "who": "\U0001f465 Who may know\u2026",
        "private": "\U0001f512 Keep private",
        "before": "\u21bb as before: {label}",
        "them": "them",
        "and": " and ",
    },
    "zh": {
        "tell": "告诉{name}",
        "like": "告诉{who}（和{name}一样）",
        "who": "\U0001f465 谁可以知道\u2026",
        "private": "\U0001f512 保密",
        "before": "\u21bb 和上次一样：{label}",
        "them": "对方",
        "and": "、",
    },
}


def actions(
    owner: OwnerServices, c: Consultation, q: Question, sender: Resolved, learned: str | None = None
) -> tuple[Action, ...]:
    """The answers, one tap each; ``learned``: what the owner answered about the most similar
    fact before, offered first."""
    words = _LABELS[owner_language(owner)]
    readers = _readers(owner, c)
    name = _names(readers, words["them"], words["and"])
    out = []
    if _whitelistable(readers):  # a stranger cannot be whitelisted: nobody knows who they are
        out.append(Action(words["tell"].format(name=name), f"/consult {c.id} tell"))
    level, domain = _like(readers)
    out.append(
        Action(words["like"].format(who=_audience_words(owner, level, domain), name=name), f"/consult {c.id} like")
    )
    out.append(Action(words["who"], f"/consult {c.id} who"))
    out.append(Action(words["private"], f"/consult {c.id} private"))
    if learned is not None:
        first = next((a for a in out if a.command.endswith(f" {learned}")), None)
        if first is not None:
            out.remove(first)
            out.insert(0, Action(words["before"].format(label=first.label), first.command))
    return tuple(out)


#: how close (cosine, the embedder's) an earlier consulted fact must be for its answer to count.
SIMILAR = 0.8
#: the key of a decision the delegate took on its own from the owner's earlier answers.
LEARNED = "learned"


async def earlier_answers(owner: OwnerServices, fact: Fact, limit: int = 8) -> list[tuple[str, Fact]]:
    """The owner's own answers to consultations about facts like this one (nearest first):
    each answer is a labelled example (docs/DESIGN.md sec. 6.7)."""
    rows = await owner.memory.similar([fact.text], limit=limit)
    out: list[tuple[str, Fact]] = []
    for f, score in sorted(rows[0] if rows else [], key=lambda hit: (-round(hit[1], 6), hit[0].id)):
        if f.id == fact.id or score < SIMILAR or f.state != "owner-set" or f.event_id == fact.event_id:
            continue
        key = next((e.split(":", 2)[2] for e in reversed(f.evidence) if e.startswith("owner:consult:")), None)
        if key is not None and key != LEARNED:
            out.append((key, f))
    return out


def consistent(earlier: Sequence[tuple[str, Fact]], n: int) -> tuple[int, str | None] | None:
    """The audience the owner chose for each of the ``n`` nearest earlier answers, if it was the
    same every time and names nobody in particular (a "tell this person" does not carry over
    to another asker); None otherwise, or when ``n`` is 0 (off, the default)."""
    if n <= 0 or len(earlier) < n:
        return None
    labels = {(f.level if f.level is not None else 0, f.domain) for _, f in earlier[:n]}
    if len(labels) != 1 or any(f.whitelist or key == "tell" for key, f in earlier[:n]):
        return None
    return next(iter(labels))


@dataclass(frozen=True, slots=True)
class Settled:
    message: str
    #: the audit ids of the follow-ups delivered, and of those the platform did not take.
    followups: tuple[str, ...] = ()
    undelivered: tuple[str, ...] = ()
    #: the next consultation the same question leads to (``ask_next``): its note and buttons.
    ask: str | None = None
    actions: tuple[Action, ...] = ()


def review_answer(owner: OwnerServices, c: Consultation, q: Question, key: str) -> ReviewAnswer:
    """The review answer a consultation key stands for (``who`` is the review picker, not here)."""
    s = q.suggested
    if key == "private":
        return ReviewAnswer.private(q.fact_id)
    readers = _readers(owner, c)
    told = {r.contact_id for r in readers}
    if key == "tell":
        if not _whitelistable(readers):
            raise ReviewError("a stranger cannot be told alone: use like, who or private")
        return ReviewAnswer.set(
            q.fact_id,
            s.category,
            level=0,
            domain=s.domain,
            whitelist=[*s.whitelist, *(r.contact_id for r in readers if r.contact_id not in s.whitelist)],
            blacklist=[b for b in s.blacklist if b not in told],
        )
    if key == "like":
        level, domain = _like(readers)
        return ReviewAnswer.set(
            q.fact_id,
            s.category,
            level=level,
            domain=domain,  # type: ignore[arg-type]
            whitelist=list(s.whitelist),
            blacklist=[b for b in s.blacklist if b not in told],
        )
    raise ReviewError(f"unknown answer {key!r}: use {', '.join(KEYS)}")


def cover_answer(q: Question, truth_id: str) -> ReviewAnswer:
    """ "It is my cover story for ``truth_id``": the fact is told as the suggestion says (a cover
    is for telling), in the truth's event, instead of the truth to whoever may not know it."""
    return ReviewAnswer.accept(q.fact_id).covering(truth_id)


async def answer(
    owner: OwnerServices, c: Consultation, decision: ReviewAnswer, key: str, *, by: str, platform: str
) -> Settled:
    """Apply the owner's decision to the consultation's event, then follow up everyone waiting."""
    if owner.review is None:
        raise ReviewError("the review queue is not available in this process")
    applied = await owner.review.apply(decision, tag=f"owner:consult:{key}")
    await owner.record_change({**applied.audit, "consultation": c.id, "answer": key, "by": by, "platform": platform})
    sent = await follow_up_events(owner, applied.facts, key, also_events=(c.event_id,))
    ask, buttons = await ask_next(owner, c)
    return Settled(
        applied.message, tuple(a for a, ok in sent if ok), tuple(a for a, ok in sent if not ok), ask, buttons
    )


async def ask_next(owner: OwnerServices, c: Consultation) -> tuple[str | None, tuple[Action, ...]]:
    """After the owner's answer to ``c``: what the reader may hear instead, when the answer kept
    the truth from them and its cover story is undecided (:func:`_stories_instead`); else the
    next closed event that would answer the same question for the same reader, while the reply
    has led to fewer than ``per_reply`` consultations. The question is answered again now (what
    the owner just opened is open, what they kept private is decided), so the next is the
    likeliest of what is still undecided."""
    store = owner.consultations
    if store is None:
        return None, ()
    readers = _readers(owner, c)
    sender = owner.directory.resolve(c.sender)
    inbound = Inbound(
        platform=c.platform,
        chat_id=c.chat_id,
        chat_kind=cast(ChatKind, c.chat_kind),
        sender=c.sender,
        text=c.question,
        audience=c.audience,
        delegation=cast("Delegation | None", c.delegation),
    )
    if not may_consult(owner, inbound, sender, readers):
        return None, ()
    audience = [r.recipient for r in readers]
    stories = await _stories_instead(owner, c, audience)
    if stories:
        again = await owner.engine.answer(c.question, audience, sender.recipient, with_closed=True)
        if again.consult and again.consult[0] in stories:
            return await ask_owner(owner, inbound, sender, readers, c.question, again, c.audit_id)
    if await store.for_reply(c.audit_id) >= store.config.per_reply:
        return None, ()
    # only an event the cross-encoder is sure answers: each further note costs the owner a tap
    again = await owner.engine.answer(c.question, audience, sender.recipient, with_closed=True, sure_only=True)
    return await ask_owner(owner, inbound, sender, readers, c.question, again, c.audit_id)


async def _stories_instead(owner: OwnerServices, c: Consultation, audience: Sequence[Recipient]) -> set[str]:
    """The undecided cover stories of the truths ``c`` asked about, once the owner's answer has
    kept every one of those truths from these readers. A truth and its story are two questions
    about one event (one answer cannot be both "not the truth" and "the story"): the story is
    asked right after, whatever ``per_reply`` says, and only when the question, answered again,
    would tell it first. The owner's answer stands for the story alone."""
    event = await owner.memory.by_event([c.event_id])
    asked = [f for f in event if f.id in c.facts and f.version == "truth"]
    rulebook = await owner.engine.rulebook()
    if not asked or any(audience_allows(rulebook.gate(f), audience) for f in asked):
        return set()
    truths = {f.id for f in asked}
    return {f.id for f in event if f.covers in truths and f.undecided}


async def follow_up_events(
    owner: OwnerServices, facts: Sequence[Fact], how: str, also_events: Sequence[str] = ()
) -> list[tuple[str, bool]]:
    """The owner has decided about these facts (a consultation, /review): every consultation
    waiting on their events is answered, and its asker followed up where the answer lets them
    know. Returns each follow-up's audit id and whether the platform took it. ``also_events``:
    events the facts were in before the answer (a cover story moves into its truth's event)."""
    store = owner.consultations
    if store is None:
        return []
    sent: list[tuple[str, bool]] = []
    for c in await store.waiting_on(sorted({f.event_id for f in facts} | set(also_events))):
        if not await store.settle(c.id, how):
            continue  # another tap settled it meanwhile
        audit_id = await follow_up(owner, c)
        if audit_id is not None:
            sent.append(audit_id)
    return sent


async def _readers_now(owner: OwnerServices, c: Consultation) -> list[Resolved]:
    """Who reads a follow-up in the consultation's chat: the asker of a direct chat; in a group,
    whoever the platform says is in it now (nobody, so no follow-up, when it cannot say)."""
    if c.chat_kind == "direct":
        return _readers(owner, c)
    try:
        now = await owner.outbox.readers(c.platform, c.chat_id, c.sender)
    except Exception as exc:  # fail closed: nobody known to read it, nothing sent
        log.warning("followup_readers_failed", consultation=c.id, error=type(exc).__name__)
        return []
    if now is None:
        log.info("followup_readers_unknown", consultation=c.id)
        return []
    return owner.directory.readers(now)


async def _skipped_for_joiners(
    owner: OwnerServices, c: Consultation, now: Sequence[Resolved], events: set[str]
) -> None:
    """A group follow-up not sent because people joined since the question (the readers who
    asked would have heard it): audited, and the owner told who, without the facts' words."""
    joined = [r for r in now if r.identity not in c.audience]
    if c.chat_kind == "direct" or not joined:
        return
    asker = owner.directory.resolve(c.sender).recipient
    then = await owner.engine.answer(c.question, [r.recipient for r in _readers(owner, c)], asker, only_events=events)
    if then.deflected or not any(d.fact.event_id in events for d in then.used):
        return  # the answer kept it from those who asked too: nobody's joining stopped it
    names = [r.label for r in joined]
    record = FollowupSkippedRecord(
        consultation=c.id,
        platform=c.platform,
        chat=c.chat_id,
        chat_kind=c.chat_kind,
        sender=c.sender,
        contact=c.contact,
        question=c.question,
        joined=names,
    )
    await owner.audit.write(record, contact=c.contact)
    who = ", ".join(r.recipient.name if not r.recipient.is_stranger else "someone unknown" for r in joined)
    await owner.outbox.tell_owner(
        f"I did not follow up in the group chat where {asker.name} asked \u201c{quote(c.question, 120)}\u201d "
        f"({c.platform}): {who} joined it since, and may not know. {c.contact} will hear it when they ask again."
    )


async def follow_up(owner: OwnerServices, c: Consultation) -> tuple[str, bool] | None:
    """Answer the question again, now, for everyone who will read it (in a group: who is in the
    chat now, not who was when they asked); send it only if it tells something of the event."""
    audience = await _readers_now(owner, c)
    if not audience:
        return None
    sender = owner.directory.resolve(c.sender)
    recipients = [r.recipient for r in audience]
    # the event the consultation was about, and where its facts are now (a cover story the
    # owner named moved into its truth's event)
    events = {c.event_id} | {f.event_id for fid in c.facts for f in [await owner.memory.get(fid)] if f is not None}
    result = await owner.engine.answer(c.question, recipients, sender.recipient)
    told = [d for d in result.used if d.fact.event_id in events]
    if not told:
        # the event's facts were held back by the composite rule: told together with the open
        # facts the asker already had, they would exceed what the owner allowed (a fact told to
        # the asker alone, L0, beside a fact anyone may know). The follow-up is about the event
        # the owner answered for, so it is answered from that event's facts alone.
        result = await owner.engine.answer(c.question, recipients, sender.recipient, only_events=events)
        told = [d for d in result.used if d.fact.event_id in events]
    if result.deflected or not told:
        log.info("followup_none", consultation=c.id)
        await _skipped_for_joiners(owner, c, audience, events)
        return None
    text = result.reply
    body: dict[str, Any] = {
        "platform": c.platform,
        "chat": c.chat_id,
        "chat_kind": c.chat_kind,
        "sender": c.sender,
        "contact": c.contact,
        "audience": [r.label for r in audience],
        "question": c.question,
        "consultation": c.id,
        "reply_audit": c.audit_id,
        **result.audit_body(),
    }
    record = await owner.audit.write(
        FollowupRecord.model_validate(body),
        contact=c.contact,
        disclosed=[(d.fact.id, d.fact.event_id) for d in result.used],
        recipients=[r.label for r in audience],
    )
    if owner.consultations is not None:
        await owner.consultations.followed_up(c.id, record.id)
    try:
        await owner.outbox.send(c.platform, c.chat_id, text, ())
    except Exception as exc:  # the ledger counts it as not told, or possibly told
        unknown = maybe_delivered(exc)
        await owner.audit.write(
            DeliveryFailedRecord(
                consultation=c.id, audit=record.id, error=type(exc).__name__, outcome=UNKNOWN if unknown else REFUSED
            ),
            contact=c.contact,
        )
        if c.platform == LOCAL.platform and isinstance(exc, LookupError):  # owed: bot/console_followups.py
            log.info("followup_owed", consultation=c.id)
        else:
            log.warning("followup_undelivered", consultation=c.id, error=type(exc).__name__)
        return record.id, False
    return record.id, True
