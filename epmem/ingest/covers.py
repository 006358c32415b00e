"""Cover stories in English sentences: "if anyone asks, say ...", "tell them ...", "the story is
...", the words that mark the truth a cover stands in for ("really I'm at the clinic"), and the
negated tellings that are a cue over the truth, never a story ("don't tell Tom that ...").

The rules extractor (epmem/ingest/extract_rules.py) turns what :func:`find_cover` finds into a
cover fact tied to its truth; Chinese covers are read by epmem/ingest/zh.py.
"""

from __future__ import annotations

import re

from epmem.ingest.annotate import ContactNames
from epmem.ingest.statements import worth

_APOS = "['’]"
_PATTERNS = [
    # "I'll tell them I'm taking a sabbatical", "tell Mamma we're on holiday", "just say I'm on leave"
    re.compile(
        r"\b(?:tell|telling|told)\s+(?P<who>them|him|her|everyone|everybody|people|others|the\s+\w+(?:\s+\w+)?|"
        # a name, not a word of the sentence ("I'll tell after the visa", "tell anyone", "told you")
        r"(?!(?:after|afterwards|later|once|when|before|until|till|about|if|so|and|but|or|you|me|us|it|this|that|"
        r"anyone|anybody|nobody|no|yet|again|everything|anything|nothing|the truth|off)\b)"
        r"[A-ZÀ-Þ][\w'’-]*(?:\s+and\s+[A-ZÀ-Þ][\w'’-]*)?)(?:\s+(?:at|in|on|from)\s+(?:the\s+)?\w+)?"
        r"\s+(?:that\s+)?(?P<clause>.+)",
        re.IGNORECASE,
    ),
    re.compile(
        rf"\b(?:just|let{_APOS}s|let us|please|can|could|we{_APOS}ll|I{_APOS}ll|we will|I will|should|"
        rf"to)\s+(?:just\s+)?say\s+(?:that\s+)?(?P<clause>.+)",
        re.IGNORECASE,
    ),
    re.compile(r"^(?:please\s+)?(?:just\s+)?say\s+(?:that\s+)?(?P<clause>.+)", re.IGNORECASE),
    re.compile(
        r"\b(?:the|our|my)\s+(?:official\s+|cover\s+)?(?:story|line|version|excuse)\s+is\s+(?:that\s+)?"
        r"(?P<clause>.+)",
        re.IGNORECASE,
    ),
    re.compile(
        r"\bif\s+(?:anyone|anybody|someone|people|they|he|she|[A-ZÀ-Þ][\w'’-]+)\b[^,]{0,40}?\basks?\b"
        r"[^,]{0,30}?\s*[,:]?\s*(?P<clause>.+)",
        re.IGNORECASE,
    ),
    re.compile(
        rf"\bas far as (?P<who>[\w'’ ]{{1,30}}?) (?:knows?|{_APOS}s concerned|is concerned|are concerned)\s*,?\s*"
        r"(?P<clause>.+)",
        re.IGNORECASE,
    ),
    re.compile(r"\bofficially\s*,\s*(?P<clause>.+)", re.IGNORECASE),
    re.compile(
        r"\bfor (?:anyone|anybody|people|others|the team|everyone(?: else)?)(?: who)? ask(?:s|ing)?\s*[:,]\s*"
        r"(?P<clause>.+)",
        re.IGNORECASE,
    ),
    re.compile(
        r"^for (?P<who>him|her|them|[A-ZÀ-Þ][\w'’-]+|the team|everyone(?: else)?)\s*,?\s*(?P<clause>.+)", re.IGNORECASE
    ),
]
#: what a cover clause may start with before the story itself ("just say", "we'll say").
_COVER_LEAD = re.compile(
    rf"^(?:(?:then|just|simply|please|we{_APOS}ll|I{_APOS}ll|you can|you could|"
    r"we can|I can)\s+)*(?:say|tell (?:them|him|her|people|everyone))\s+(?:that\s+)?",
    re.IGNORECASE,
)
_CALL_IT = re.compile(r"\bcall it (?P<np>(?:a|an|the)\s+[^,.;!?]+)", re.IGNORECASE)
#: a cover clause must read as a statement: it starts with a subject.
_CLAUSE_START = re.compile(
    rf"^(?:I|I{_APOS}m|I{_APOS}ve|I{_APOS}ll|I{_APOS}d|we|we{_APOS}re|we{_APOS}ve|we{_APOS}ll|he|she|they|it|"
    rf"it{_APOS}s|there|there{_APOS}s|he{_APOS}s|she{_APOS}s|they{_APOS}re|(?:the|my|our|his|her|their)\s+\w+|"
    rf"[A-ZÀ-Þ][\w'’-]+\s+(?:is|are|was|has|will|had|needs|got))\b",
    re.IGNORECASE,
)


#: "Really I'm going to the clinic": the truth a cover in the same message stands in for.
TRUTH_MARK = re.compile(
    r"^(?:(?:but|and|so)\s+)?(?:really|actually|in reality|in fact|in truth|"
    r"(?:the\s+)?truth\s+is|the real (?:reason|story|thing) is|what{_APOS}s really happening is|"
    r"between us)\b(?:\s+that\b)?[\s,:]*".replace("{_APOS}", _APOS),
    re.IGNORECASE,
)
#: "It's actually the visa appointment": a truth marker a little way in (marks, strips nothing).
TRUTH_WORD = re.compile(r"^\W*(?:[\w'’]+\s+){0,2}(?:actually|really|in fact|in reality)\b", re.IGNORECASE)
#: "don't tell Tom that ...", "never told anyone I'm ...": a negated telling is a cue, never a cover.
NEGATED_TELL = re.compile(
    rf"\b(?:don{_APOS}?t|do not|never|not|didn{_APOS}?t|won{_APOS}?t|mustn{_APOS}?t|"
    rf"shouldn{_APOS}?t|haven{_APOS}?t|hasn{_APOS}?t|no need to|better not)\s+"
    r"(?:(?:ever|even|yet|go|just)\s+)*(?:tell|telling|told|say|saying)\b",
    re.IGNORECASE,
)


def find_cover(text: str, speaker_words: set[str], names: ContactNames) -> tuple[str, list[str]] | None:
    """(the story, its listeners) when the sentence tells others a story."""
    negated = [(n.start(), n.end()) for n in NEGATED_TELL.finditer(text)]
    for pattern in _PATTERNS:
        m = pattern.search(text)
        if not m:
            continue
        if any(a <= m.start() < b or m.start() <= a < m.start() + 8 for a, b in negated):
            continue  # "don't tell anyone I'm ...": a cue over the truth, not a story to tell
        clause = _COVER_LEAD.sub("", m.group("clause").strip()).strip()
        if _CLAUSE_START.match(clause) and worth(clause, speaker_words):
            who = m.groupdict().get("who") or ""
            return clause, names.find(who)
    m2 = _CALL_IT.search(text)
    if m2:
        return f"it is {m2.group('np').strip()}", []
    return None
