"""A sentence with a cue in it: which clauses only say who may know, and which statement is left.

"Not a word to Tom, but I'm organising a surprise party", "..., but I don't want people to
know yet", "keep this between us im entering ...", "... (secret!)": the statement is kept and
the cue applied to it (docs/DESIGN.md sec. 6.3, `cue-keeps-its-statement`); a clause that is nothing but the cue,
or a comment pointing back at it ("Don't tell Tom, he'd worry"), becomes no fact. Split out of
epmem/ingest/extract_rules.py, which decides what the cues reach.
"""

from __future__ import annotations

import re

from epmem.ingest.annotate import ContactNames
from epmem.ingest.cues import Cue, CueReader
from epmem.ingest.statements import CHITCHAT, IMPERATIVE, LEAD, REACTION_LEAD, asks, informative, worth
from epmem.ingest.zh import cue_only_zh, filler_zh, has_cjk
from epmem.textnorm import SECRECY_EMOJI, STOPWORDS, words

_APOS = "['’]"
_SEGMENT = re.compile(r"\s*[,;:—–]\s*|\s+-\s+")

#: where a sentence may be cut between a cue and the statement it is about: punctuation,
#: brackets, a dash, a secrecy emoji, or before a "but" ("Not a word to Tom, but I'm ...").
_CUT = re.compile(rf"\s*(?:[,;:!—–(){{}}\[\]]+|\s-\s|[{SECRECY_EMOJI}]+)\s*|\s+(?=but\b)", re.IGNORECASE)
#: words that only make up a cue ("I don't want people to know yet", "not a word to"): a clause
#: of nothing but these, names and function words says who may know, and nothing else.
_CUE_WORDS = frozenset(
    """tell tells telling told mention mentions mentioned mentioning say said word words know knows knew known
    find finds found out hear hears heard secret secrets secretly quiet private privately confidential
    confidentially confidence keep keeps kept keeping stay stays stayed between anyone anybody nobody noone
    everyone everybody people others soul single person please yet want wants rather prefer public announced
    common knowledge record hush shh yourself yourselves ourselves themselves lips sealed mum breathe spill
    share spread around loop dark promise wraps under hat ears need needs folks world whole alone else
    except let go us you me him her them get gets getting got going out known leak leaks leaking afterwards after later once then first eventually
    soon otherwise esp especially specially particularly least even certainly definitely
    above""".split()
)
#: what may follow a cue and still be part of it, before the statement starts ("keep this
#: between us im ...", "don't tell anyone that I'm ...").
_CUE_TAIL = _CUE_WORDS | frozenset("that but and so it this about to for now my our the his her your us you me".split())
#: words a statement's subject starts with (the walk past a cue stops there).
_SUBJECT_WORDS = frozenset("i im ive we my our he she they there".split())
#: a statement starts with a subject ("I'm", "im", "we", "my sister", "Alex and I").
_SUBJECT = re.compile(
    rf"^(?:I\b|im\b|ive\b|we\b|my\b|our\b|there\b|it{_APOS}s\b|(?:he|she|they){_APOS}?\w*\b|"
    r"(?:the|his|her|their)\s+\w+|[A-ZÀ-Þ][\w'’-]+\s+(?:and\s+I\b|is\b|are\b|was\b|has\b|"
    r"will\b|had\b|got\b))",
    re.IGNORECASE,
)

#: a listener's promise ("my lips are sealed", "ok not a word", "your secret's safe"): it is about
#: what the other person just said, whatever else its sentence goes on to say.
PROMISE = re.compile(
    rf"\b(?:my |our )?lips (?:are|r) sealed\b|\bI(?:{_APOS}ll| will)? (?:won{_APOS}?t|will not|never|wont) "
    rf"(?:tell|say|breathe|mention)\b|\bwon{_APOS}?t (?:tell a soul|say a word|say anything|breathe a word)\b"
    rf"|\bsecret{_APOS}?s? (?:is )?safe\b|^\W*(?:ok|okay|sure|of course|yes|yeah)\W+not a word\b"
    rf"|\bI{_APOS}ll keep (?:it|this|that) (?:quiet|to myself|secret|between us)\b",
    re.IGNORECASE,
)


def filler(text: str) -> str:
    """Why a sentence that became no fact is filler by rule (:data:`FILLER`), or "" when it is
    not: then it is :class:`Unread` and the owner is shown it."""
    if has_cjk(text):
        return filler_zh(text)
    body = LEAD.sub("", text.strip()).strip()
    if not body or body.rstrip().endswith("?") or asks(body):
        return "question"
    tokens = words(body)
    content = [t for t in tokens if t not in STOPWORDS and len(t) > 1]
    if (CHITCHAT.search(body) or REACTION_LEAD.match(text)) and len(content) < 4:
        return "reaction"
    if len(tokens) < 3 or not content or (len(content) < 2 and not informative(body)):
        return "too-short"
    if IMPERATIVE.match(body) and not re.search(r"\b(?:I|I['’]m|my|we|our)\b", body):
        return "instruction"
    return ""


class CueSplitter:
    """Cuts a sentence's cue clauses from its statement (see the module docstring)."""

    def __init__(self, cues: CueReader, names: ContactNames, owner_words: set[str]) -> None:
        self.cues = cues
        self.names = names
        self._owner_words = owner_words

    def split(self, raw: str, owner: bool) -> tuple[list[Cue], str | None, str]:
        """The cues of a sentence, the statement it carries if any, and why there is none.

        A cue introduces a statement ("Between us: it's X", "Not a word to Tom, but I'm ...",
        "keep this between us im ..."), trails it ("I'm using it for X, but I don't want people
        to know yet", "... (secret!)", "... 🤫") or sits inside it ("Mum doesn't know I'm
        pregnant"): the statement is kept, with the cue applied (a statement is never dropped for
        starting with a cue). What follows a cue clause and points back at someone or at the
        news ("Don't tell Tom, he'd worry", "Tara can know, it shows I'm committed") is a comment
        on the cue and becomes no fact. With no statement, the reason is ``cue`` or
        ``cue-comment`` (filler by rule, epmem/ingest/unread.py); a statement the cue could not
        be cut from comes with ``embedded`` (its cue reaches as a bare cue's would: fail closed)."""
        segments = [x for x in _SEGMENT.split(raw) if x.strip()]
        found = [c for c in (self.cues.read(x, owner=owner) for x in segments) if c]
        whole = self.cues.read(raw, owner=owner)
        if whole and not found:
            found = [whole]
        if not found:
            return [], raw, ""
        head, colon, tail = raw.partition(":")
        if colon and self.cues.read(head, owner=owner) and not self.cues.read(tail, owner=owner):
            return found, tail.strip(), ""
        m = re.match(r"^(?P<body>.+?),?\s+(?:but|and|so)\s+(?P<cue>[^,]*\b(?:it|that|this)\b[^,]*)$", raw)
        if m and self.cues.read(m.group("cue"), owner=owner) and not self.cues.read(m.group("body"), owner=owner):
            return found, m.group("body").strip(), ""
        m3 = re.match(r"^(?P<body>.+),\s*(?P<cue>[^,]{3,60})$", raw)
        if m3 and self.cues.read(m3.group("cue"), owner=owner) and not self.cues.read(m3.group("body"), owner=owner):
            return found, m3.group("body").strip(), ""
        m2 = re.match(r"^(?P<cue>[^,]{3,60}),\s*(?P<body>.+)$", raw)
        if m2:  # "Between us, ...": a secrecy cue introduces; "Don't tell Tom, he'd worry" comments
            intro = self.cues.read(m2.group("cue"), owner=owner)
            if intro.secrecy and not intro.blacklist and not self.cues.read(m2.group("body"), owner=owner):
                for c in found:  # "keep it under your hat, Tobi applied too": "it" is what came before
                    c.anaphoric = c.anaphoric and not worth(m2.group("body"), set())
                return found, m2.group("body").strip(), ""
        said, why = self._around(raw, owner)
        return found, said, why

    def cue_only(self, clause: str, owner: bool) -> bool:
        """A clause that says who may know and nothing else ("I don't want people to know yet",
        "Not a word to Tom", "secret!", "🤫"): a cue, and no word left once the cue's own words,
        names and function words are set aside."""
        cue = self.cues.read(clause, owner=owner)
        if not cue:
            return False
        if has_cjk(clause):
            return cue_only_zh(clause, cue.said, self.names.strip(clause))
        rest = words(self.names.strip(clause))
        return not [
            w for w in rest if w not in STOPWORDS and w not in _CUE_WORDS and w not in self._owner_words and len(w) > 1
        ]

    def _around(self, raw: str, owner: bool) -> tuple[str | None, str]:
        """The statement around the cue clauses of a sentence (see :meth:`_cue_sentence`)."""
        cuts = [(m.start(), m.end()) for m in _CUT.finditer(raw) if m.end() > m.start()]
        bounds = [0, *[x for c in cuts for x in c], len(raw)]
        pieces = [(bounds[i], bounds[i + 1]) for i in range(0, len(bounds), 2) if bounds[i + 1] > bounds[i]]
        pieces = [(a, b) for a, b in pieces if raw[a:b].strip()]
        i, j = 0, len(pieces)
        while i < j and self.cue_only(raw[pieces[i][0] : pieces[i][1]], owner):
            i += 1
        while j > i and self.cue_only(raw[pieces[j - 1][0] : pieces[j - 1][1]], owner):
            j -= 1
        if i == j:
            return None, "cue"
        middle = raw[pieces[i][0] : pieces[j - 1][1]].strip()
        # "Not a word to Tom, but ...", "Don't say a word to anyone: ...": the cue introduces the
        # statement. "Haven't told Kari yet, want the contract signed first": a cue clause and a
        # remark after a comma may be about the news before, so it reaches back as well (fail closed)
        gap = raw[pieces[i - 1][1] : pieces[i][0]] if i else ""
        back = (
            bool(i)
            and not re.match(r"^(?:but|so|and so)\b", middle, re.IGNORECASE)
            and not re.search(r"[:—–(\[]|\s-\s", gap)
        )
        if i == 0:  # no clause of its own: a cue that runs into its statement ("keep this between us im ...")
            middle = self._after_lead(middle, owner)
        middle = re.sub(r"^(?:but|and|so|that)\b[\s,]*", "", middle, flags=re.IGNORECASE).strip()
        if not middle:
            return None, "cue"
        if i and re.match(
            r"^(?:he|she|they|him|her|them|it|that|this|which)\b|^(?:他|她|佢|这|那)", middle, re.IGNORECASE
        ):
            return None, "cue-comment"  # "Don't tell Tom, he'd worry", "Tara can know, it shows I'm committed"
        # a cue that could not be cut from its statement ("Ingrid cannot keep a secret to save her
        # life") is kept in the fact and still reaches as a sentence that is only a cue would
        return middle, "embedded" if back or self.cues.read(middle, owner=owner) else ""

    def _after_lead(self, text: str, owner: bool) -> str:
        """A sentence that opens with a cue and runs on into its statement without a break
        ("Please don't tell anyone I'm entering ...", "keep this between us im entering ...",
        "Don't tell Tom I'm pregnant"): the statement, from its subject on. Anything else is
        kept whole (a statement with a cue inside: "Mum doesn't know I'm pregnant")."""
        for m in re.finditer(r"[\w'’]+", text):
            head = text[: m.start()]
            if not head.strip():
                continue
            token, ws = m.group(0), words(m.group(0))
            if (
                ws
                and ws[0] not in _SUBJECT_WORDS
                and all(w in _CUE_TAIL or w in STOPWORDS for w in ws)
                or self.names.find(token)
            ):
                continue
            if self.cue_only(head, owner) and _SUBJECT.match(text[m.start() :]):
                return text[m.start() :]
            break
        return text
