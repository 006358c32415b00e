"""What the owner reads about a consultation: the note, its one-tap answers, the audiences in
words, in the owner's language (policy ``owner.language``: English or Chinese).

The words are the ``consult.*`` and ``audience.*`` keys of the one phrase catalogue of every
reply and note (epmem/language/phrases-<code>.yaml, said with ``say``); this module only puts
them together. The question and the facts are quoted as written (bot/quoting.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from connectors.base import Action
from epmem.ingest import ReviewQuestion as Question
from epmem.language import Language, say
from epmem.policy import Resolved
from epmem.reply import asks_yes_or_no, unsaid

from bot.consultations.audience import like, name, names, readers, whitelistable
from bot.consultations.callback import command
from bot.consultations.store import Consultation
from bot.quoting import quote
from bot.services import OwnerServices


def owner_language(owner: OwnerServices) -> Language:
    """What the delegate tells the owner is in the owner's language (policy ``owner.language``),
    whatever the language of the question it is about; English when unset."""
    return owner.policy.owner.language or "en"


def audience_words(owner: OwnerServices, level: int, domain: str | None, whitelist: Sequence[str] = ()) -> str:
    """An audience in words ("contacts at trust level 1 or closer in life"), not as a code."""
    lang = owner_language(owner)
    if level == 0:
        who = say("audience.nobody", lang)
    elif level == 4 and domain is None:
        who = say("audience.anyone", lang)
    else:
        who = say("audience.level", lang, level=str(level))
        if domain:
            circle = say(f"audience.domain.{domain}", lang) if domain in ("work", "life") else domain
            who += say("audience.in_domain", lang, domain=circle)
    extra = [name(owner, w) for w in whitelist]
    if extra:
        listed = say("audience.sep", lang).join(extra)
        who = listed if level == 0 else say("audience.also", lang, who=who, extra=listed)
    return who


def _suggested_words(owner: OwnerServices, q: Question) -> str:
    s = q.suggested
    return audience_words(owner, s.level, s.domain, s.whitelist)


def note(owner: OwnerServices, c: Consultation, q: Question, sender: Resolved) -> str:
    """What the owner reads: who asked what, the facts' words, the suggestion, how to answer
    (in the owner's language; the question and the facts quoted, bot/quoting.py)."""
    return notes(owner, [(c, q)], sender)


def notes(owner: OwnerServices, asked: Sequence[tuple[Consultation, Question]], sender: Resolved) -> str:
    """One note about one question's events (each consultation of one message, best first):
    who asked what once, then each event's section, numbered when there are several: its
    facts' words, the suggestion and how to answer it (its own ``/consult ID``)."""
    lang = owner_language(owner)

    def words(key: str, **values: str) -> str:
        return say(f"consult.{key}", lang, **values)

    c = asked[0][0]
    r = sender.recipient
    asker = r.name if not r.is_stranger else words("stranger", sender=c.sender)
    lines = [words("asked", asker=asker, platform=c.platform, question=quote(c.question))]
    if c.chat_kind != "direct":
        others = [o for o in readers(owner, c) if o.identity != c.sender]
        lines.append(words("group", others=names(others, words("others"), words("and"))))
    lines.append(words("without"))
    for n, (each, q) in enumerate(asked, 1):
        if len(asked) > 1:
            lines.append(words("section", n=str(n), count=str(len(asked))))
        lines += _section(owner, each, q, words)
    return "\n".join(lines)


def _section(owner: OwnerServices, c: Consultation, q: Question, words: Callable[..., str]) -> list[str]:
    """One event's lines in a note: its facts' words, the suggestion, how to answer."""
    lines = []
    texts = [q.text, *q.also_text]
    for fid, text, who in zip(c.facts, texts, [q.stated_by, *q.also_stated_by, *([None] * len(texts))]):
        said = words("said", fid=fid, who=name(owner, who), text=quote(text)) if who else None
        lines.append(said or words("fact", fid=fid, text=quote(text)))
    if q.covers_text:
        lines.append(words("cover", text=quote(q.covers_text)))
    claim = unsaid(c.question, texts, [owner.policy.owner.name]) if asks_yes_or_no(c.question) else []
    if claim:  # a false rumour is not confirmed by a true fact near it ("Is Noor leaving for Mars?")
        lines.append(words("unsaid", words=", ".join(f"\u201c{w}\u201d" for w in claim)))
    lines.append(words("suggest", category=q.suggested.category, who=_suggested_words(owner, q)))
    lines.append(words("how", id=str(c.id), fid=q.fact_id))
    return lines


def actions(
    owner: OwnerServices, c: Consultation, q: Question, sender: Resolved, learned: str | None = None
) -> tuple[Action, ...]:
    """The answers, one tap each; ``learned``: what the owner answered about the most similar
    fact before, offered first."""
    lang = owner_language(owner)

    def words(key: str, **values: str) -> str:
        return say(f"consult.label.{key}", lang, **values)

    people = readers(owner, c)
    them = names(people, words("them"), say("consult.and", lang))
    out = []
    if whitelistable(people):  # a stranger cannot be whitelisted: nobody knows who they are
        out.append(Action(words("tell", name=them), command(c.id, "tell")))
    level, domain = like(people)
    out.append(Action(words("like", who=audience_words(owner, level, domain), name=them), command(c.id, "like")))
    out.append(Action(words("who"), command(c.id, "who")))
    out.append(Action(words("private"), command(c.id, "private")))
    if learned is not None:
        first = next((a for a in out if a.command.endswith(f" {learned}")), None)
        if first is not None:
            out.remove(first)
            out.insert(0, Action(words("before", label=first.label), first.command))
    return tuple(out)


def grouped_actions(owner: OwnerServices, each: Sequence[tuple[Action, ...]]) -> tuple[Action, ...]:
    """The buttons of one note about several events: each event's own (``actions``), labelled
    with its section's number and kept together as one group (a row, a block); one event's
    buttons as they are."""
    if len(each) == 1:
        return tuple(each[0])
    lang = owner_language(owner)
    return tuple(
        Action(say("consult.label.event", lang, n=str(n), label=a.label), a.command, group=n)
        for n, buttons in enumerate(each, 1)
        for a in buttons
    )


def learned_note(
    owner: OwnerServices, asker: str, question: str, q: Question, level: int, domain: str | None, n: int
) -> str:
    """The note when the delegate opened a fact on its own, as the owner answered the last
    ``learn_after`` consultations about facts like it (bot/consultations/learning.py)."""
    return say(
        "consult.learned",
        owner_language(owner),
        asker=asker,
        question=quote(question, 120),
        fid=q.fact_id,
        text=quote(q.text, 120),
        who=audience_words(owner, level, domain),
        n=str(n),
    )


def joined_note(asker: str, c: Consultation, joined: Sequence[Resolved]) -> str:
    """The note when a group follow-up was not sent because people joined the chat since the
    question (English only, as it always was: the catalogue's Chinese has no such key)."""
    who = ", ".join(r.recipient.name if not r.recipient.is_stranger else "someone unknown" for r in joined)
    return say(
        "consult.joined",
        "en",
        asker=asker,
        question=quote(c.question, 120),
        platform=c.platform,
        who=who,
        contact=c.contact,
    )
