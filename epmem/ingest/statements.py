"""Chat messages -> the sentences that may carry a statement, before any rewriting.

People type the way they talk: a message is several short lines, an emoji ends a thought, a
number or a place comes as its own fragment ("I'm pregnant!!! 11 weeks"), a statement comes
with a question tacked on ("API v2 goes live on 15 May, can you write the notes?") or as a
reminder ("don't forget Haruto's sports day on Saturday"). Read sentence by sentence, such a
message loses what it says: the fragment is dropped or becomes a fact without a subject, the
statement is thrown out with its question. :func:`chat_sentences` cuts a message into the
statements it makes, each whole: a fragment that says nothing on its own joins the statement
before it, a tacked-on question is cut off, a reminder's lead is dropped. It only cuts and
joins the speaker's own words; who may know is decided later (epmem/ingest/failclosed.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from epmem.ingest.zh import asks_zh, has_cjk, worth_zh
from epmem.textnorm import STOPWORDS, split_sentences, words

_APOS = "['’]"
#: what a statement may start with that is not part of it ("ok so", "btw", "[voice message]").
LEAD = re.compile(
    r"^(?:\[[^\]\n]{1,40}\]\s*|(?:no(?=\s*[,.!;-])|yes|yeah|yep|yup|nope|ok|okay|oh|ah|aha|ha|haha|hah|wow|"
    r"well|so|sorry|thanks|thank you|"
    r"agreed|sure|great|hey|hi|hello|and|but|then|also|anyway|actually|honestly|basically|just|ugh|phew|"
    r"perfect|cool|nice|awesome|lovely|exactly|right|true|absolutely|of course|definitely|understood|"
    r"got it|noted|fair|good (?:morning|afternoon|evening|night)|good|fine|alright|hmm|yay|congrats|congratulations|omg|lol|btw|fyi|listen|look|"
    r"guess what|so yeah|um|uh|erm)"
    r"(?![\w'’])[\s,!.;-]*|(?:update|note to self|note|fyi|btw|ps|p\.s\.|reminder|confirmed|news|big news|"
    r"heads[- ]up|quick update|fwd|forwarded(?: message)?|voice note|transcript)\s*:\s*)+",
    re.IGNORECASE,
)
#: words a sentence may open with that are not a verb missing its subject ("after the reorg ...").
SUBJECTLESS_SKIP = frozenset(
    "the a an it its this that these those there here she he they we i you my our his her their "
    "us me him them what who when where why how if no after before during since until from in on at by "
    "with without about next last tomorrow today yesterday tonight finally still now soon once while "
    "because only maybe probably apparently".split()
)
#: an instruction to the listener ("Rotate it after...", "Please don't paste it") is not a fact.
IMPERATIVE = re.compile(
    rf"^(?:please\b|don{_APOS}?t\b|do not\b|never\b|let{_APOS}s\b|let us\b|"
    # "take what you need", "grab whatever's left", "take your time": an offer to the listener
    r"(?:take|grab|use|have|eat|get|bring|borrow|pick|choose|keep|call|ask|send|try)\s+(?:what(?:ever)?|"
    r"whichever|as much|as many|all (?:you|the)|your time|care|a look|a seat|a break|it easy)\b|"
    r"(?!(?:about|for|with|like|unlike|to|from|of|including|between|except|besides|as|than|"
    r"after|before|since|until|without|regarding|re|thanks|thank|once|when|whenever|if|unless|because|"
    r"while|although|though|so|and|but|or|now|then|yet|maybe|hopefully|apparently|i|we|he|she|they)\b)"
    r"[a-z]+\s+(?:it|me|us|them|him|this|that|these|those)\b(?!\s+(?:is|are|was|were|has|have|will|would)\b))",
    re.IGNORECASE,
)
#: politeness and reactions: kept out unless the sentence says much more than that.
CHITCHAT = re.compile(
    r"\b(?:thank you|thanks|congrats|congratulations|sorry|no worries|means a lot|can'?t wait|proud of you|"
    r"good luck|get well|sounds good|love you|miss you|see you|take care|haha|lol|fingers crossed|no problem|"
    r"enjoy|well done|go you|good for you|best of luck|all the best|sorry to hear|glad to hear|happy for you)\b",
    re.IGNORECASE,
)


#: a sentence that opens as a reaction to the other person's news ("Oh no, sorry to hear that Sam!").
REACTION_LEAD = re.compile(
    r"^\W*(?:(?:oh|ah|aw+|wow|omg)(?:\s+no)?[\s,!.]*)?(?:so\s+|really\s+)?(?:sorry|congrats|"
    r"congratulations|thanks|thank you|good luck|fingers crossed|well done|no worries)\b",
    re.IGNORECASE,
)


def worth(text: str, speaker_words: set[str] | frozenset[str]) -> bool:
    """A statement with some content: not a question, an instruction or small talk."""
    if text.rstrip().endswith("?"):
        return False
    if has_cjk(text):
        return worth_zh(text)
    body = LEAD.sub("", text.strip()).strip()
    if IMPERATIVE.match(body):
        return False
    tokens = words(body)
    content = [t for t in tokens if t not in STOPWORDS and t not in speaker_words and len(t) > 1]
    # a reaction's lead ("Oh no, sorry to hear that") is read too: without it, "to hear that Sam!" reads like news
    if (CHITCHAT.search(body) or REACTION_LEAD.match(text)) and len(content) < 4:
        return False
    return (
        len(tokens) >= 3
        and len(content) >= 1
        and (
            len(tokens) >= 4 or len(content) >= 1 and any(len(c) >= 6 or any(ch.isdigit() for ch in c) for c in content)
        )
    )


#: the emoji and symbol blocks a chat line's pictures come from (a character class's ranges).
EMOJI = "\U0001f000-\U0001faff\u2600-\u27bf"
#: what joins or varies an emoji (a variation selector, a zero-width joiner).
_EMOJI_JOINERS = "\ufe0f\u200d"
#: an emoji between two clauses may end a thought: "cost me 3.2k 😬 don't tell my mum" (see _pieces).
_EMOJI_BREAK = re.compile(rf"([{EMOJI}][{EMOJI}{_EMOJI_JOINERS}]*)[ \t]+(?=\S)")
#: "don't forget Mama's name day is Sunday": the reminder's lead is not part of what it says.
_REMINDER = re.compile(
    rf"^(?:(?:also|and|oh|btw)[\s,]+)?(?:don{_APOS}?t forget|do not forget|remember|"
    r"just so you know|fyi)[\s,:]+(?:that\s+|about\s+)?(?!to\b)",
    re.IGNORECASE,
)
#: "..., can you write the release notes?": a question tacked onto a statement.
_ASKS = (
    r"(?:can|could|would|will|do|does|did|has|have|are|is|was|were|any|should|shall|what|when|where|who|how|"
    r"why|right|ok|okay)"
)
_TACKED = re.compile(rf"^(?P<body>.+?)\s*[,;]\s*(?P<q>{_ASKS}\b[^,;]*\?+\W*)$", re.IGNORECASE)
#: a sentence that asks (it opens like a question) is not a statement, whatever it ends with.
_OPENS_ASKING = re.compile(rf"^(?:(?:so|and|but|also|ok|hey)[\s,]+)?{_ASKS}\b", re.IGNORECASE)
#: what a chat question may open with before it asks ("wait does your mum even know he existed lol").
_ASK_LEAD = re.compile(r"^(?:(?:wait|so|and|but|also|ok|okay|hey|lol|omg|hmm|um)\b[\s,.!]*)+", re.IGNORECASE)


def asks(text: str) -> bool:
    """A message that asks, with or without its question mark (chat questions often have none):
    it ends with one, or it opens with a question word or an auxiliary."""
    text = text.strip()
    if has_cjk(text):
        return asks_zh(text)
    return ends_asking(text) or bool(_OPENS_ASKING.match(_ASK_LEAD.sub("", text)))


#: what may follow a question mark at the end of a chat line: emoji and their joiners.
_TRAILING_EMOJI = re.compile(rf"[\s{EMOJI}{_EMOJI_JOINERS}]+$")


def ends_asking(text: str) -> bool:
    """Whether ``text`` ends with a question mark, emoji after it apart: "why didn't you come to
    the tianguis? 🥺" asks, and carries no news to tell back."""
    return _TRAILING_EMOJI.sub("", text).endswith("?")


#: words a sentence with its own subject starts with (a fragment starts with none of them).
_SUBJECT_START = frozenset(
    "i i'm i've i'll i'd we we're he she they it it's its this that there my our his her their you your me".split()
)


def _fragment(text: str, speaker_words: set[str]) -> bool:
    """A piece that says nothing whole on its own: "11 weeks", "for real this time",
    "performance improvement plan, 6 weeks", "Gearbox problem." It has content (a number or a
    word that is not a function word) but is too short to be a statement, or short and without
    a subject of its own."""
    body = LEAD.sub("", text.strip()).strip()
    if not body or body.endswith("?") or IMPERATIVE.match(body) or CHITCHAT.search(body):
        return False
    tokens = words(body)
    content = [t for t in tokens if (t not in STOPWORDS and len(t) > 1) or any(ch.isdigit() for ch in t)]
    if not content:
        return False
    if not worth(body, speaker_words):
        return True
    first = tokens[0] if tokens else ""
    return len(tokens) <= 5 and (body[0].islower() or body[0].isdigit()) and first not in _SUBJECT_START


def informative(fragment: str) -> bool:
    """Whether a joined fragment says something of its own (a number, a name, a longer word):
    "11 weeks", "in Lisboa", "sports betting apps"; "for real this time" and "Well done to you
    both" do not."""
    tokens = re.findall(r"[\w'’]+", LEAD.sub("", fragment.strip()))
    return any(
        any(ch.isdigit() for ch in t)
        or (i > 0 and t[0].isupper() and t != "I")
        or (t.casefold() not in STOPWORDS and len(t) >= 5)
        for i, t in enumerate(tokens)
    )


def _pieces(text: str, is_cue: Callable[[str], bool]) -> list[str]:
    """Sentences, an emoji ending one only where it sets a cue apart from the statement ("cost
    me 3.2k 😬 don't tell my mum"): elsewhere the words around it stay one sentence, so the
    statement keeps its context ("I'm pregnant 🙈 due in September so I'll need leave")."""
    out: list[str] = []
    for sentence in split_sentences(text):
        if has_cjk(sentence):
            out += _clauses_cjk(sentence, is_cue)
            continue
        parts = [p for p in _EMOJI_BREAK.sub(r"\1\n", sentence).split("\n") if p.strip()]
        cues = [is_cue(p) for p in parts]
        merged: list[str] = []
        for i, part in enumerate(parts):
            if merged and not cues[i] and not cues[i - 1]:
                merged[-1] = f"{merged[-1]} {part}"
            else:
                merged.append(part)
        out += merged
    return out


def _clauses_cjk(sentence: str, is_cue: Callable[[str], bool]) -> list[str]:
    """A Chinese sentence cut at its commas where a clause says who may know ("还没跟他说，千万别让
    李老师知道哈，我爸妈也不知道", "跟你说个事，这事你知我知"): the cue clauses stand alone, the
    clauses between them stay one statement ("六月拿个硕士学位就去工作，有家公司愿意要我")."""
    clauses = [c for c in re.split(r"(?<=,)", sentence) if c.strip(" ,")]
    out: list[str] = []
    cue_before = True
    for clause in clauses:
        cue = is_cue(clause.rstrip(" ,"))
        if out and not cue and not cue_before:
            out[-1] += clause
        else:
            out.append(clause)
        cue_before = cue
    return [c.strip().rstrip(",") for c in out if c.strip(" ,")]


def chat_statements(
    text: str, is_cue: Callable[[str], bool], speaker_words: set[str] | None = None
) -> list[tuple[str, list[str]]]:
    """The statements of one message, each whole where the message makes one, with the
    fragments joined into it (the caller judges each fragment too: a statement is only as
    settled as its least settled part). ``is_cue`` tells a sentence that says who may know
    (it is never joined to another)."""
    speaker_words = speaker_words or set()
    out: list[tuple[str, list[str]]] = []
    for raw in _pieces(text, is_cue):
        raw = _REMINDER.sub("", raw, count=1) or raw
        m = _TACKED.match(raw)
        if m and not _OPENS_ASKING.match(m.group("body")) and worth(m.group("body"), speaker_words):
            out += [(m.group("body"), []), (m.group("q"), [])]
            continue
        prev = out[-1][0] if out else None
        if (
            prev is not None
            and worth(prev, speaker_words)
            and not is_cue(prev)
            and not is_cue(raw)
            and _fragment(raw, speaker_words)
        ):
            out[-1] = (f"{prev} {raw}", [*out[-1][1], raw])
        else:
            out.append((raw, []))
    return out


def chat_sentences(text: str, is_cue: Callable[[str], bool], speaker_words: set[str] | None = None) -> list[str]:
    """:func:`chat_statements` without the fragments."""
    return [statement for statement, _ in chat_statements(text, is_cue, speaker_words)]
