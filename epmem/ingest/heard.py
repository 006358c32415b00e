"""Who heard a fact said (heard it from you, docs/DESIGN.md sec. 3), read from the conversation
at ingest: the chat's other party, who the chat shows read a group message, every member an
export lists for a member's news to the whole group, the readers a live platform named; and
what is never news to tell back (a description of a story told or believed).

The finalizer (epmem/ingest/extract.py) records the result on each fact (``Fact.heard_by``);
the calculus opens an undecided fact to those people (epmem/policy/calculus.py ``HeardIt``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from epmem.embedding.bilingual import CJK, has_cjk
from epmem.embedding.sparse import cjk_terms
from epmem.ingest.annotate import ContactNames
from epmem.ingest.statements import EMOJI
from epmem.memory.sessions import Session
from epmem.policy.model import OWNER_ID
from epmem.textnorm import chinese_name_forms, content_words, split_sentences, words

#: the evidence a secrecy cue leaves on a fact (epmem.ingest.cues.Cue.evidence)
SECRECY_CUE = "cue:secret:"


def present(session: Session) -> list[str]:
    """Everyone but the owner who read the conversation: in a group sub-session, the whole
    group (they all saw the owner's messages), not only the counterpart."""
    people = session.members or session.participants
    return [p for p in dict.fromkeys(people) if p != OWNER_ID]


def listeners(session: Session, turns: Sequence[int] = (), *, to_everyone: bool = False) -> list[str]:
    """Who heard it said (heard it from you, docs/DESIGN.md sec. 3): the readers a live
    platform named when it was said (``Session.present``); else the conversation's other party:
    in a direct chat, the person it was with; in a group, the one the owner was talking with
    (the sub-session's counterpart: the message answered, the person named, else the one who
    spoke just before), and the members the chat shows read every message it came from
    (``Turn.seen_by``: who replied to it, or wrote both before and after it). Where the export
    names the group's members (``Session.roster``) and the caller found the message a member's
    news to everyone (``to_everyone``: answering nobody, naming nobody it speaks to, no secrecy
    cue), every member heard it. An export that names no members, and a silent member of a busy group,
    may not have read a remark meant for someone else: where unsure, fewer people heard it."""
    if session.present:
        people = list(session.present)
    else:
        people = list(session.participants)
        said = [session.turns[t] for t in turns if 0 <= t < len(session.turns)]
        if session.chat_kind == "group" and said:
            common = set(said[0].seen_by).intersection(*(t.seen_by for t in said[1:]))
            people += [p for p in said[0].seen_by if p in common]
            if to_everyone:
                people += session.roster
    return [p for p in dict.fromkeys(people) if p != OWNER_ID]


#: where a message speaks to someone by name: a sentence's first words before a comma ("Carlos,
#: yours is ...", "👍 Kenji, are we still good"), or its last ones after one ("..., Rincy?")
_SENTENCE_END = re.compile(rf"[.!?。！？\n]+|[{EMOJI}]+")
_COMMA = re.compile(r"[,，、]")


def speaks_to_someone(text: str, named: Callable[[str], bool]) -> bool:
    """Whether a group message is said to someone in particular, not to everyone: it mentions
    someone (``@``), or a sentence opens or closes on a name ``named`` knows, set off by a comma
    (at most three words, or eight characters of Chinese). A name in the middle of a sentence is
    talked about, not talked to ("Josh and Chloe have called off the wedding")."""
    if "@" in text:
        return True
    for sentence in _SENTENCE_END.split(text):
        parts = _COMMA.split(sentence.strip())
        if len(parts) < 2:
            continue
        for part in {parts[0].strip(), parts[-1].strip()}:
            short = len(part) <= 8 if has_cjk(part) else 0 < len(part.split()) <= 3
            if part and short and named(part):
                return True
    return False


#: the owner describing what they tell (or told) someone else: "I'll tell your sister the money
#: went on the transmission", "I told the firm I'm doing a course", "我跟他们说是装修".
_TELLING = re.compile(
    # whom it is told to is someone else: "can I tell you something?", "I'll tell you when I can"
    # speak to the reader, who hears it (a confidence, not a story for others)
    r"\b(?:I|we)(?:'ll| will|'m going to| am going to|'re going to| are going to| have| 've)?\s+(?:tell|told|say to|said to)\s(?!(?:you|u|ya)\b)"
    r"|\b(?:I'?m|we'?re|gonna)\s+(?:telling|tell)\s(?!(?:you|u|ya)\b)"
    # so is "我跟你说" (let me tell you); "我跟厂里说好了" (I agreed with the factory) is no telling
    r"|我(?:会|就|跟|和|对)(?![你您])[^。！？]{0,8}(?:说(?!好)|讲|告诉)|告诉(?:他们|她们|他|她|大家)"
    r"|(?:先|就|对外|打算|准备|会|只)说(?:是|成)?"
    # "说是" with no one before it, or the owner: a story ("说是装修"). After someone else it is
    # what they said ("医生说是早期", the doctor says it is early-stage): news, as in English
    r"|(?:^|(?<=[，,。！？!?：:；;\s]))说(?:是|成)|(?:我|咱)们?(?:都|也)?说(?:是|成)",
    re.IGNORECASE,
)
#: the owner describing what someone else believes: "work thinks it's a family emergency", "they
#: think I'm at a conference", "他们都以为我在出差". A story in place: whoever hears that knows
#: the truth behind it, and the words are not news to retell.
_BELIEVED = re.compile(
    r"\b(?!(?:we|you)\b)[a-z]{2,}\s+(?:still\s+)?"  # anyone but "we" and "you" ("I" is one letter)
    r"(?:thinks?|believes?|assumes?)\s+(?:that\s+)?(?:it'?s|it is|I'?m|I am|we'?re|we are|I'?ve|I have|I was|we were)\b"
    r"|(?:他们|她们|他|她|大家|公司|同事|家里|爸妈|爸|妈)[^。！？]{0,4}(?:都|还)?以为",
    re.IGNORECASE,
)
_ASKED_WHAT_TOLD = re.compile(
    r"\bwhat\s+(?:did|will|do)\s+you\s+(?:tell|say)|你(?:跟|和|对)[^？?]{0,8}(?:怎么说|说了什么)", re.I
)


#: a sentence that points at the one before it ("That's what I told Mum.") or after it ("Here's
#: what we tell the kids."): the telling is about that sentence too
_POINTS_BACK = re.compile(r"^\W*(?:that'?s|that is|so that'?s|this is)\b|^\W*(?:这就是|就这么|这么)", re.I)
_POINTS_ON = re.compile(r"\b(?:here'?s|this is) what\b|如下|这么说|这样说", re.I)


def _units(text: str) -> set[str]:
    """What two texts share when one retells the other: content words, and pairs of Chinese
    characters (Chinese sets no space between words)."""
    out = {*content_words(words(text)), *cjk_terms(text)}
    return {u for u in out if not re.fullmatch(f"[^{CJK}]", u)}


def sentences_saying(text: str, said: str | None) -> str:
    """The sentences of a message that ``said`` (a fact's words) came from, with a sentence that
    points at one of them ("That's what I told Mum."). The whole message when it has one
    sentence, when ``said`` is None, or when no sentence holds at least half of what it says:
    where unsure, the whole message is read (fail closed)."""
    parts = split_sentences(text)
    want = _units(said) if said else set()
    if len(parts) < 2 or not want:
        return text
    shares = [len(_units(p) & want) / len(want) for p in parts]
    best = max(shares)
    if best < 0.5:
        return text
    keep = {k for k, share in enumerate(shares) if share >= best / 2}
    for k in list(keep):
        if k + 1 < len(parts) and _POINTS_BACK.search(parts[k + 1]):
            keep.add(k + 1)
        if k > 0 and _POINTS_ON.search(parts[k - 1]):
            keep.add(k - 1)
    return " ".join(parts[k] for k in sorted(keep))


def describes_a_telling(session: Session, turns: Sequence[int], said: str | None = None) -> bool:
    """Whether the message says what the owner tells someone else or what someone else believes,
    or answers "what did you tell them?": whoever heard the owner describe a story knows the
    truth behind it, and the words are not news to retell (heard it from you stays shut).
    ``said``: the fact's words. In a contact's message the telling is then read in the
    sentences it came from (:func:`sentences_saying`): "Please don't let him know I told you"
    is about their telling, and "Sipho was arrested on Friday", said two sentences earlier, is
    their news. The owner's message is read whole: where the owner says whom they tell what
    ("NOT Sanna yet, not while her IVF is going badly. I'll tell her when the time is right"),
    every sentence of it is part of deciding who knows (measured: vignettes, Mikko)."""
    by_msg = {t.msg_id: t for t in session.turns}
    for i in turns:
        if not 0 <= i < len(session.turns):
            continue
        turn = session.turns[i]
        text = turn.text if turn.speaker == OWNER_ID else sentences_saying(turn.text, said)
        if _TELLING.search(text) or _BELIEVED.search(text):
            return True
        asked = by_msg.get(turn.reply_to or "")
        if asked is not None and _ASKED_WHAT_TOLD.search(asked.text):
            return True
    return False


def heard_label(session: Session) -> str:
    """Where it was heard, for the audit's reason: the kind of chat and the day, nothing said in it."""
    start = session.start
    day = f" of {start:%Y-%m-%d}" if start else ""
    return f"the {'group chat' if session.chat_kind == 'group' else 'chat'}{day}"


def said_to_everyone(
    session: Session, turns: Sequence[int], evidence: Sequence[str], names: ContactNames, owner_name: str
) -> bool:
    """Whether a group fact is a member's news to the whole group: every message it came from
    was written by a member, answers nobody (no reply link) and speaks to nobody by name
    (``speaks_to_someone``: a contact, a group or the owner), and no secrecy cue marks it
    ("大家先别外传": said to those present, not for telling back). Only then does a member the
    export names hear it without the chat showing they read it (``listeners``). Never the owner's
    own remark: a remark to a whole room is where the owner tells a cover story whose truth sits
    in another chat, and an import cannot tell that story from news (measured: the owner's "FYI
    I'm out Thursday mornings, arbitration course" to a channel with the client's counsel, whom
    the story is not for)."""
    if session.chat_kind != "group" or not session.roster or not turns:
        return False
    if any(e.startswith(SECRECY_CUE) for e in evidence):
        return False
    said = [session.turns[t] for t in turns if 0 <= t < len(session.turns)]

    def named(text: str) -> bool:
        return names_someone(text, names, owner_name)

    return bool(said) and not any(t.speaker == OWNER_ID or t.reply_to or speaks_to_someone(t.text, named) for t in said)


def names_someone(text: str, names: ContactNames, owner_name: str) -> bool:
    """A contact, a group or the owner named in ``text``."""
    if names.find(text):
        return True
    name = owner_name.strip()
    owner = {w for w in words(name) if len(w) >= 3 and not has_cjk(w)}
    if any(w in owner for w in words(text)):
        return True
    return any(form in text for form in chinese_name_forms(name))


def stated_by(session: Session, turns: Sequence[int]) -> str | None:
    """Who said the message a fact came from (its first source turn), when not the owner (None:
    the owner, or unknown)."""
    first = next((session.turns[t].speaker for t in turns if 0 <= t < len(session.turns)), OWNER_ID)
    return None if first == OWNER_ID else first
