"""A rumour put as a question ("Is it true Marcus is having heart surgery? Someone said he has
been seeing a cardiologist."): answered only by what speaks to the claim.

The cross-encoder scores "Marcus is having a minor keyhole knee operation" as an answer to the
heart-surgery rumour: it is about Marcus, surgery-like and soon. So the rules used to answer a
false rumour with the nearest true event, which tells the asker an unrelated fact they did not
ask for (and, read as "no, it's his knee", corrects the rumour with a real one). A person who
hears a rumour they cannot confirm says nothing about it. Here a fact answers a rumour only
if it shares a word of the claim itself: its common words (names are left out, since every
fact about Marcus names Marcus), not the words that report it ("someone said", "heard") or
date it ("this spring", "that weekend"). A true rumour keeps its answer: "Is it true you're
putting solar panels on the north 80?" shares "solar" and "north" with the lease that says so.

A question that also asks something else ("Is it true Cel is leaving? What's the plan?") is
not held to the claim: the other question may be answered by anything. Only English is read;
a question in another language is left as it is. The rule only ever removes facts from a
reply, and reads only the facts the relevance step was given (those the asker may know, and a
cover's truth, as the cross-encoder does), so a deflection reads the same whether a secret
exists or not.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from epmem.textnorm import STOPWORDS

_TRIGGER = re.compile(r"\b(?:is|was|are|were|isn't|wasn't)\s+(?:it|that|this)\s+true\b|\btrue\s+that\b", re.I)
_SENTENCE = re.compile(r"(?<=[.?!])\s+")
_WORD = re.compile(r"[A-Za-z\u00c0-\u024f][A-Za-z\u00c0-\u024f'\u2019-]*|\d+")

#: words that report or frame a rumour, not what it claims.
_FRAME = frozenset(
    """true someone somebody anyone everyone everybody people person said says say saying heard hear
    hears told tells telling tell mentioned mentions mention think thinks thought reckon reckons
    apparently rumour rumours rumor rumors word around going gone getting having doing made make
    saw seen see sees secret secretly quietly really actually right wrong guess gossip news""".split()
)
#: words that date a claim: a true fact about another event shares them ("birthday weekend").
_TIME = frozenset(
    """today tonight tomorrow yesterday morning afternoon evening night day days week weeks weekend
    weekends month months year years spring summer autumn fall winter season term soon later ago
    next last this that before after early late lately recently now then time
    monday tuesday wednesday thursday friday saturday sunday january february march april may june
    july august september october november december""".split()
)
_IGNORED = STOPWORDS | _FRAME | _TIME
_SUFFIXES = ("ments", "ment", "ings", "ing", "edly", "ed", "ies", "es", "s", "ly")


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def is_rumour(question: str, yes_no: Callable[[str], bool]) -> bool:
    """ "Is it true ...", "Is that true?", "... true that ...": a claim put up for confirmation,
    and no other question beside it (a sentence ending in "?" that is neither the claim nor a
    yes/no question by ``yes_no``, the relevance step's reading of question kinds)."""
    sentences = [s for s in _SENTENCE.split(question.strip()) if s]
    if not any(_TRIGGER.search(s) for s in sentences):
        return False
    return not any(s.rstrip().endswith("?") and not (_TRIGGER.search(s) or yes_no(s)) for s in sentences)


def _tokens(text: str) -> list[tuple[str, bool]]:
    """Each word, case-folded and cut at its apostrophe ("Marcus's", "you're"), and whether it
    was written with a capital."""
    out = []
    for m in _WORD.finditer(text):
        raw = re.split(r"['\u2019]", m.group(0).strip("'\u2019-"))[0]
        if raw:
            out.append((raw.casefold(), raw[:1].isupper()))
    return out


def claim_words(question: str) -> frozenset[str]:
    """The stems of the claim's common words: no names (any capitalised word: "Tom heard" opens
    its sentence with one), no function, framing or dating words, nothing shorter than three
    letters (numbers are kept whole: "the north 80")."""
    out: set[str] = set()
    for word, capital in _tokens(question):
        if word.isdigit():
            out.add(word)
        elif not capital and len(word) >= 3 and word not in _IGNORED:
            out.add(_stem(word))
    return frozenset(out)


def speaks_to(claim: Iterable[str], texts: Iterable[str]) -> bool:
    """Whether one of ``texts`` shares a word of the claim: the same stem, one stem of at least
    four letters opening the other ("engagement" and "engaged", "leaving" and "leave"), or seven
    letters in common at the start ("pregnant" and "pregnancy")."""
    stems = {w if w.isdigit() else _stem(w) for text in texts for w, _ in _tokens(text)}
    return any(_same_word(c, s) for c in claim for s in stems)


def _same_word(a: str, b: str) -> bool:
    if a == b:
        return True
    if a.isdigit() or b.isdigit():
        return False
    if min(len(a), len(b)) >= 4 and (a.startswith(b) or b.startswith(a)):
        return True
    return len(a) >= 7 and len(b) >= 7 and a[:7] == b[:7]


def unsaid(question: str, texts: Iterable[str], names: Iterable[str] = ()) -> list[str]:
    """The words of a claim put as a yes/no question ("Is Noor leaving for Mars?") that none of
    ``texts`` says, as the question wrote them: its common words and its capitalised ones alike
    (a place, a thing), not the words in ``names`` (the owner's: every fact is about the owner),
    nor function, framing or dating words. A fact that says none of "Mars" does not confirm the
    claim, whatever else it shares with it. The caller decides the question is a yes/no one."""
    known = {w.casefold() for name in names for w in _WORD.findall(name)}
    stems = {w if w.isdigit() else _stem(w) for text in texts for w, _ in _tokens(text)}
    out: list[str] = []
    for m in _WORD.finditer(question):
        raw = re.split(r"['\u2019]", m.group(0).strip("'\u2019-"))[0]
        word = raw.casefold()
        if not raw or word in known or word in _IGNORED or (len(word) < 3 and not word.isdigit()):
            continue
        claim = word if word.isdigit() else _stem(word)
        if not any(_same_word(claim, s) for s in stems):
            out.append(raw)
    return list(dict.fromkeys(out))
