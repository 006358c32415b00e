"""What the owner reads about a consultation: the note, its one-tap answers, the audiences in
words, in the owner's language (policy ``owner.language``: English or Chinese).

The phrase tables are data (:data:`NOTE`, :data:`LABELS`, :data:`LEARNED_NOTE`,
:data:`JOINED_NOTE`), one entry per language, each a ``str.format`` template; the question and
the facts are quoted as written (bot/quoting.py). A later step moves them into the one phrase
catalogue of every reply and note.
"""

from __future__ import annotations

from collections.abc import Sequence

from connectors.base import Action
from epmem.ingest import ReviewQuestion as Question
from epmem.language import Language
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
    if owner_language(owner) == "zh":
        return _audience_words_zh(owner, level, domain, whitelist)
    if level == 0:
        who = "nobody"
    elif level == 4 and domain is None:
        who = "anyone who asks"
    else:
        who = f"contacts at trust level {level} or closer" + (f" in {domain}" if domain else "")
    extra = [name(owner, w) for w in whitelist]
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
    extra = [name(owner, w) for w in whitelist]
    if extra:
        who = "、".join(extra) if level == 0 else f"{who}，以及{'、'.join(extra)}"
    return who


def _suggested_words(owner: OwnerServices, q: Question) -> str:
    s = q.suggested
    return audience_words(owner, s.level, s.domain, s.whitelist)


#: the consultation note's lines, per language (the question and the facts quoted as written).
NOTE: dict[str, dict[str, str]] = {
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
    words = NOTE[owner_language(owner)]
    r = sender.recipient
    asker = r.name if not r.is_stranger else words["stranger"].format(sender=c.sender)
    lines = [words["asked"].format(asker=asker, platform=c.platform, question=quote(c.question))]
    if c.chat_kind != "direct":
        others = [o for o in readers(owner, c) if o.identity != c.sender]
        lines.append(words["group"].format(others=names(others, words["others"], words["and"])))
    lines.append(words["without"])
    texts = [q.text, *q.also_text]
    for fid, text, who in zip(c.facts, texts, [q.stated_by, *q.also_stated_by, *([None] * len(texts))]):
        said = words["said"].format(fid=fid, who=name(owner, who), text=quote(text)) if who else None
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
LABELS: dict[str, dict[str, str]] = {
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
    words = LABELS[owner_language(owner)]
    people = readers(owner, c)
    them = names(people, words["them"], words["and"])
    out = []
    if whitelistable(people):  # a stranger cannot be whitelisted: nobody knows who they are
        out.append(Action(words["tell"].format(name=them), command(c.id, "tell")))
    level, domain = like(people)
    out.append(Action(words["like"].format(who=audience_words(owner, level, domain), name=them), command(c.id, "like")))
    out.append(Action(words["who"], command(c.id, "who")))
    out.append(Action(words["private"], command(c.id, "private")))
    if learned is not None:
        first = next((a for a in out if a.command.endswith(f" {learned}")), None)
        if first is not None:
            out.remove(first)
            out.insert(0, Action(words["before"].format(label=first.label), first.command))
    return tuple(out)


#: the note when the delegate opened a fact on its own, as the owner answered the last
#: ``learn_after`` consultations about facts like it (bot/consultations/learning.py).
LEARNED_NOTE: dict[str, str] = {
    "en": "{asker} asked \u201c{question}\u201d: I opened {fid} (\u201c{text}\u201d) to {who}, as you "
    "answered the last {n} questions about facts like it. /review {fid} to change it.",
    "zh": "{asker}问：\u201c{question}\u201d。我已把 {fid}（\u201c{text}\u201d）公开给：{who}，因为你对最近 "
    "{n} 个类似的问题都是这样回答的。要改的话：/review {fid}",
}


def learned_note(
    owner: OwnerServices, asker: str, question: str, q: Question, level: int, domain: str | None, n: int
) -> str:
    words = LEARNED_NOTE[owner_language(owner)]
    return words.format(
        asker=asker,
        question=quote(question, 120),
        fid=q.fact_id,
        text=quote(q.text, 120),
        who=audience_words(owner, level, domain),
        n=n,
    )


#: the note when a group follow-up was not sent because people joined the chat since the
#: question (English only, as it always was).
JOINED_NOTE = (
    "I did not follow up in the group chat where {asker} asked \u201c{question}\u201d ({platform}): "
    "{who} joined it since, and may not know. {contact} will hear it when they ask again."
)


def joined_note(asker: str, c: Consultation, joined: Sequence[Resolved]) -> str:
    who = ", ".join(r.recipient.name if not r.recipient.is_stranger else "someone unknown" for r in joined)
    return JOINED_NOTE.format(
        asker=asker, question=quote(c.question, 120), platform=c.platform, who=who, contact=c.contact
    )
