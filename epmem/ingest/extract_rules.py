"""The offline extractor: sentence-level facts from the owner's own turns, no network.

Only the owner's turns are read: the owner's words are the owner's memory, and other people's
words are the part of a transcript most likely to be wrong about the owner or to carry
instructions. Each sentence becomes at most one fact, rewritten in the third person where the
rewrite is simple; greetings, thanks, questions and sentences with fewer than two content words
are dropped. Three kinds of cue are read from the owner's words:

- cover cues ("tell them ...", "just say ...", "the story is ...", "call it a ...", "if anyone
  asks, ..."): the clause becomes a ``cover`` fact of the most recent truth; people named as
  the listeners of a cover are blacklisted on the truth (they are the ones being told the story);
- narrowing cues ("don't tell Tom", "keep it away from Mamma", "between us", "nobody else"):
  blacklists, level 0 and whitelisting the people present, who heard it already. These apply to
  the facts of the same message, else the message it replies to, else the owner's previous
  message: a narrowing cue applied one message too far only makes a fact stricter;
- widening cues ("only you and Owen know", "Tara and Mei can know"): a named whitelist, applied
  only to facts of the same message or of the owner message it replies to, since opening a
  fact to someone on a guessed scope would be failing open.

And one rule for what the cues cannot read: people the owner talks *about* in a conversation
they were not part of ("We tell Mamma after", "Let's get Mei on the terms first") are
blacklisted on that conversation's truths, unless a widening cue names them. Whether the owner
wanted them to hear it is exactly what sentence rules cannot tell, so the answer is no.

Categories come from CategoryClassifier (keywords, then similarity). The rest of the rules that
no backend may bend are applied afterwards by epmem/ingest/extract.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from epmem.ingest.annotate import CategoryClassifier, ContactNames
from epmem.ingest.extract import Draft, owner_first_name, present, reply_index
from epmem.policy.holder import PolicyHolder, ReadsPolicy
from epmem.policy.model import OWNER_ID, Policy
from epmem.memory.sessions import Session
from epmem.textnorm import STOPWORDS, sentence, split_sentences, third_person, words

_APOS = "['’]"
_LEAD = re.compile(
    r"^(?:(?:yes|yeah|yep|yup|no|nope|ok|okay|oh|ah|aha|ha|haha|hah|wow|well|so|sorry|thanks|thank you|"
    r"agreed|sure|great|hey|hi|hello|and|but|then|also|anyway|actually|honestly|basically|just|ugh|phew|"
    r"perfect|cool|nice|awesome|lovely|exactly|right|true|absolutely|of course|definitely|understood|"
    r"got it|noted|fair|good|fine|alright|hmm|yay|congrats|congratulations)"
    r"(?![\w'’])[\s,!.;-]*|(?:update|note to self|note|fyi|btw|ps|p\.s\.|reminder|confirmed|news)\s*:\s*)+",
    re.IGNORECASE,
)
_SUBJECTLESS_SKIP = frozenset(
    "the a an it its this that these those there here she he they we i you my our his her their "
    "us me him them what who when where why how if".split()
)
#: an instruction to the listener ("Rotate it after...", "Please don't paste it") is not a fact.
_IMPERATIVE = re.compile(
    rf"^(?:please\b|don{_APOS}?t\b|do not\b|never\b|let{_APOS}s\b|let us\b|"
    r"[a-z]+\s+(?:it|me|us|them|him|this|that|these|those)\b(?!\s+(?:is|are|was|were|has|have|will|would)\b))",
    re.IGNORECASE,
)
#: politeness and reactions: kept out unless the sentence says much more than that.
_CHITCHAT = re.compile(
    r"\b(?:thank you|thanks|congrats|congratulations|sorry|no worries|means a lot|can'?t wait|proud of you|"
    r"good luck|get well|sounds good|love you|miss you|see you|take care)\b",
    re.IGNORECASE,
)
_SEGMENT = re.compile(r"\s*[,;:—–]\s*|\s+-\s+")
_COVER = [
    # "I'll tell them I'm taking a sabbatical", "tell Mamma we're on holiday", "just say I'm on leave"
    re.compile(
        rf"\b(?:tell|telling)\s+(?P<who>them|him|her|everyone|everybody|people|others|the\s+\w+(?:\s+\w+)?|"
        rf"[A-ZÀ-Þ][\w'’-]*(?:\s+and\s+[A-ZÀ-Þ][\w'’-]*)?)(?:\s+(?:at|in|on|from)\s+(?:the\s+)?\w+)?"
        rf"\s+(?:that\s+)?(?P<clause>.+)",
        re.IGNORECASE,
    ),
    re.compile(rf"\b(?:just|let{_APOS}s|let us|please|can|could|we{_APOS}ll|I{_APOS}ll|we will|I will)\s+(?:just\s+)?"
               rf"say\s+(?:that\s+)?(?P<clause>.+)", re.IGNORECASE),
    re.compile(r"^(?:please\s+)?(?:just\s+)?say\s+(?:that\s+)?(?P<clause>.+)", re.IGNORECASE),
    re.compile(r"\b(?:the|our|my)\s+(?:official\s+|cover\s+)?(?:story|line|version)\s+is\s+(?:that\s+)?(?P<clause>.+)",
               re.IGNORECASE),
    re.compile(r"\bif\s+(?:anyone|anybody|someone|people|they)\b[^,]{0,40}?\basks?\b\s*,?\s*(?P<clause>.+)",
               re.IGNORECASE),
    re.compile(rf"\bas far as (?P<who>[\w'’ ]{{1,30}}?) (?:knows?|{_APOS}s concerned|is concerned|are concerned)\s*,?\s*"
               r"(?P<clause>.+)", re.IGNORECASE),
    re.compile(r"\bofficially\s*,\s*(?P<clause>.+)", re.IGNORECASE),
    re.compile(r"\bfor (?:anyone|anybody|people|others)(?: who)? ask(?:s|ing)?\s*[:,]\s*(?P<clause>.+)", re.IGNORECASE),
]
_CALL_IT = re.compile(r"\bcall it (?P<np>(?:a|an|the)\s+[^,.;!?]+)", re.IGNORECASE)
#: a cover clause must read as a statement: it starts with a subject.
_CLAUSE_START = re.compile(
    rf"^(?:I|I{_APOS}m|I{_APOS}ve|I{_APOS}ll|I{_APOS}d|we|we{_APOS}re|we{_APOS}ve|we{_APOS}ll|he|she|they|it|"
    rf"it{_APOS}s|there|there{_APOS}s|[A-ZÀ-Þ][\w'’-]+\s+(?:is|are|was|has|will|had))\b",
    re.IGNORECASE,
)

_BLACK_AFTER = re.compile(
    rf"\b(?:don{_APOS}?t|do not|never|mustn{_APOS}?t|must not|shouldn{_APOS}?t|should not|won{_APOS}?t|can{_APOS}?t|"
    rf"cannot|please don{_APOS}?t|not)\s+(?:ever\s+)?(?:tell|mention|show|say|inform|let on|breathe a word)\b"
    r"|\b(?:keep|hide)\s+(?:it|this|that|them|that one|this one|these|those)\s+(?:away\s+)?from\b"
    r"|\bnot a word to\b"
    r"|\bnot\s+(?:that|this|it|any of (?:this|that)|the\s+\w+)(?:\s+\w+)?\s+to\b",
    re.IGNORECASE,
)
_BLACK_BEFORE = re.compile(
    rf"\b(?:must not|mustn{_APOS}?t|shouldn{_APOS}?t|should not|can{_APOS}?t|cannot|doesn{_APOS}?t need to|"
    rf"must never|may not)\s+(?:ever\s+)?(?:know|find out|hear|learn)\b",
    re.IGNORECASE,
)
_SECRECY = re.compile(
    r"\bbetween (?:us|you and me|the two of us|ourselves|the three of us)\b"
    r"|\bkeep(?:ing)?\s+(?:it|this|that|that one|this one)\s+(?:to yourself|to yourselves|quiet|secret|private|"
    r"confidential|under wraps|inside|within|in the)\b"
    rf"|\bin confidence\b|\bstays? (?:with you|between us|in this (?:room|chat))\b|\b(?:nobody|no one|no-one) else\b"
    rf"|\bdon{_APOS}?t tell (?:anyone|anybody|a soul)\b|\bnot a word to (?:anyone|anybody)\b|\boff the record\b"
    r"|\bconfidential\b",
    re.IGNORECASE,
)
_WHITE_NAMED = re.compile(
    r"\bonly\b(?P<who>.{1,60}?)\b(?:know|knows|can know|may know|are told|is told)\b"
    r"|(?P<who2>[\w'’ ,]{1,60}?)\s+(?:can|may)\s+(?:know|be told|hear about it)\b"
    r"|\byou can tell\s+(?P<who3>[\w'’ ,]{1,60})"
    r"|\bkeep(?:ing)?\s+(?:it|this|that)\s+(?:inside|within|in)\s+(?P<who4>(?:the|our|my)?\s*[\w'’ ]{1,30})",
    re.IGNORECASE,
)
_TELL_NAMED = re.compile(r"\btell\s+(?P<who>[\w'’ ,]{1,60}?)\b(?:\s+\w+)?\s*(?:,\s*)?(?:and|but)\s+(?:nobody|no one)\s+else\b",
                         re.IGNORECASE)
_YOU = re.compile(r"\b(?:you|yourself|yourselves|us|ourselves)\b", re.IGNORECASE)


@dataclass(slots=True)
class Cue:
    """What one sentence says about who may know."""

    blacklist: list[str] = field(default_factory=list)
    whitelist: list[str] = field(default_factory=list)
    secrecy: bool = False
    present: bool = False

    def __bool__(self) -> bool:
        return bool(self.blacklist or self.whitelist or self.secrecy or self.present)


@dataclass(slots=True)
class _TurnDrafts:
    turn: int
    drafts: list[int] = field(default_factory=list)
    cues: list[Cue] = field(default_factory=list)


class RulesExtractor(ReadsPolicy):
    name = "rules"

    def __init__(self, policy: Policy | PolicyHolder, classifier: CategoryClassifier) -> None:
        self._policy = PolicyHolder.of(policy)
        self.classifier = classifier
        self.names = ContactNames(policy)
        self.owner = owner_first_name(self.policy)
        self._owner_words = set(words(self.policy.owner.name))

    # ------------------------------------------------------------------ cues

    def cue(self, segment: str) -> Cue:
        cue = Cue()
        for m in _BLACK_AFTER.finditer(segment):
            cue.blacklist += [c for c in self.names.find(segment[m.end():]) if c not in cue.blacklist]
        for m in _BLACK_BEFORE.finditer(segment):
            cue.blacklist += [c for c in self.names.find(segment[: m.start()]) if c not in cue.blacklist]
        secrecy = _SECRECY.search(segment)
        if secrecy:
            cue.secrecy = True
        for m in _WHITE_NAMED.finditer(segment):
            who = next(g for g in (m.group("who"), m.group("who2"), m.group("who3"), m.group("who4")) if g)
            cue.whitelist += [c for c in self.names.find(who) if c not in cue.whitelist + cue.blacklist]
            if m.group("who") and _YOU.search(who):
                cue.present = True
            if m.group("who") or m.group("who4"):
                cue.secrecy = True
        for m in _TELL_NAMED.finditer(segment):
            cue.whitelist += [c for c in self.names.find(m.group("who")) if c not in cue.whitelist + cue.blacklist]
            cue.secrecy = True
        if cue.secrecy and not cue.whitelist:
            cue.present = True  # "between us", "nobody else": whoever was there, and only they
        return cue

    # ------------------------------------------------------------------ sentences

    def _you(self, session: Session, turn_index: int) -> str | None:
        """Who "you" is: the counterpart of a two-party (sub-)session, the author of the
        message replied to, or everyone present for "you two" / "you all"."""
        text = session.turns[turn_index].text
        others = present(session)
        if re.search(r"\byou (?:two|both|all|guys)\b", text, re.IGNORECASE) and len(others) > 1:
            return " and ".join(self.names.name_of(o) for o in others)
        target = reply_index(session, turn_index)
        if target is not None and session.turns[target].speaker != OWNER_ID:
            return self.names.name_of(session.turns[target].speaker)
        counterparts = [p for p in session.participants if p != OWNER_ID]
        if len(counterparts) == 1:
            return self.names.name_of(counterparts[0])
        return None

    def _rewrite(self, text: str, you: str | None) -> str:
        text = _LEAD.sub("", text.strip()).strip()
        first = text.split(" ", 1)[0] if text else ""
        token = re.match(r"\w+", first)
        if first and first[0].islower() and (token is None or token.group(0).casefold() not in _SUBJECTLESS_SKIP):
            text = f"{self.owner} is {text}" if first.endswith("ing") else f"{self.owner} {text}"
        return sentence(third_person(text, self.owner, you))

    def _worth(self, text: str) -> bool:
        """A statement with some content: not a question, an instruction or small talk."""
        if text.rstrip().endswith("?"):
            return False
        body = _LEAD.sub("", text.strip()).strip()
        if _IMPERATIVE.match(body):
            return False
        tokens = words(body)
        content = [t for t in tokens if t not in STOPWORDS and t not in self._owner_words and len(t) > 1]
        if _CHITCHAT.search(body) and len(content) < 4:
            return False
        return len(tokens) >= 4 and len(content) >= 2

    def _cue_sentence(self, raw: str) -> tuple[list[Cue], str | None]:
        """The cues of a sentence, and the statement it carries, if any.

        Only two shapes carry one: a cue that introduces it ("Between us: it's X") and a cue
        that trails it ("I'm using it for X, but that stays with you"). Anything else around
        a cue is a comment on the cue ("..., she'd worry") and becomes no fact."""
        segments = [x for x in _SEGMENT.split(raw) if x.strip()]
        cues = [self.cue(x) for x in segments]
        found = [c for c in cues if c]
        if not found:
            return [], raw
        head, colon, tail = raw.partition(":")
        if colon and self.cue(head) and not self.cue(tail):
            return found, tail.strip()
        m = re.match(r"^(?P<body>.+?),?\s+(?:but|and|so)\s+(?P<cue>[^,]*\b(?:it|that|this)\b[^,]*)$", raw)
        if m and self.cue(m.group("cue")) and not self.cue(m.group("body")):
            return found, m.group("body").strip()
        return found, None

    def _cover(self, text: str) -> tuple[str, list[str]] | None:
        """(cover clause, listeners) when the sentence tells others a story."""
        for pattern in _COVER:
            m = pattern.search(text)
            if not m:
                continue
            clause = m.group("clause").strip()
            if _CLAUSE_START.match(clause) and self._worth(clause):
                who = m.groupdict().get("who") or ""
                return clause, self.names.find(who)
        m2 = _CALL_IT.search(text)
        if m2:
            return f"it is {m2.group('np').strip()}", []
        return None

    # ------------------------------------------------------------------ sessions

    def drafts(self, session: Session) -> list[Draft]:
        drafts: list[Draft] = []
        turns: dict[int, _TurnDrafts] = {}
        heard = present(session)
        last_truth: int | None = None
        for t, turn in enumerate(session.turns):
            if turn.speaker != OWNER_ID:
                continue
            td = turns.setdefault(t, _TurnDrafts(t))
            you = self._you(session, t)
            for raw in split_sentences(turn.text):
                if raw.rstrip().endswith("?"):
                    td.cues += [c for c in (self.cue(x) for x in _SEGMENT.split(raw)) if c]
                    continue
                cover = self._cover(raw)
                if cover is not None:
                    clause, listeners = cover
                    truth = self._truth_for(session, t, td, turns, last_truth, drafts)
                    if truth is not None:
                        drafts[truth].blacklist += [x for x in listeners if x not in drafts[truth].blacklist]
                    drafts.append(Draft(self._rewrite(clause, you), "cover", truth, source_turns=[t]))
                    td.drafts.append(len(drafts) - 1)
                    continue
                cues, text = self._cue_sentence(raw)
                td.cues += cues
                if text is not None and self._worth(text):
                    drafts.append(Draft(self._rewrite(text, you), "truth", source_turns=[t]))
                    td.drafts.append(len(drafts) - 1)
                    last_truth = len(drafts) - 1
        self._apply_cues(session, drafts, turns, heard)
        opened = {w for td in turns.values() for c in td.cues for w in c.whitelist}
        self._absent_third_parties(session, drafts, heard, opened)
        anns = self.classifier.classify_many([d.text for d in drafts]) if drafts else []
        for d, ann in zip(drafts, anns):
            d.category, d.domain = ann.category, ann.domain
            d.level = ann.level if d.level is None else min(d.level, ann.level)
        return drafts

    def _truth_for(self, session: Session, t: int, td: _TurnDrafts, turns: dict[int, _TurnDrafts],
                   last_truth: int | None, drafts: list[Draft]) -> int | None:
        same = [i for i in td.drafts if drafts[i].version == "truth"]
        if same:
            return same[-1]
        reply_to = reply_index(session, t)
        if reply_to is not None and reply_to in turns:
            replied = [i for i in turns[reply_to].drafts if drafts[i].version == "truth"]
            if replied:
                return replied[-1]
        return last_truth

    def _absent_third_parties(self, session: Session, drafts: list[Draft], heard: list[str],
                              opened: set[str]) -> None:
        """``opened``: everyone a widening cue named, applied or not (the owner meant them to know
        something; they are left to the category's default rather than shut out)."""
        widened = {w for d in drafts for w in d.whitelist} | opened
        named: list[str] = []
        for turn in session.turns:
            if turn.speaker == OWNER_ID:
                named += self.names.find(turn.text)
        absent: list[str] = []
        for entry in dict.fromkeys(named):
            members = self.policy.groups.get(entry, [entry])
            absent += [m for m in members if m not in heard and m not in widened and entry not in widened
                       and m not in absent]
        for d in drafts:
            if d.version == "truth":
                d.blacklist += [a for a in absent if a not in d.blacklist and a not in d.whitelist]

    @staticmethod
    def _replied_drafts(session: Session, t: int, turns: dict[int, _TurnDrafts]) -> list[int]:
        """Facts of the owner message this one answers: its reply target, or the target of the
        message it replies to ("Was it hard?" -> "A bit. Tara can know" is about the owner's
        message that "Was it hard?" answered)."""
        at: int | None = t
        for _ in range(2):
            at = reply_index(session, at) if at is not None else None
            if at is None:
                return []
            if at in turns and turns[at].drafts:
                return list(turns[at].drafts)
        return []

    def _apply_cues(self, session: Session, drafts: list[Draft], turns: dict[int, _TurnDrafts],
                    heard: list[str]) -> None:
        order = sorted(turns)
        for t in order:
            td = turns[t]
            if not td.cues:
                continue
            narrow = list(td.drafts) or self._replied_drafts(session, t, turns)
            # a cue answering someone else's message is about that message, of which the
            # owner's facts hold nothing: only an unlinked cue reaches back to the owner's
            # previous message
            unlinked = reply_index(session, t) is None
            wide = narrow or (next((turns[p].drafts for p in reversed(order) if p < t and turns[p].drafts), [])
                              if unlinked else [])
            for cue in td.cues:
                for i in wide:
                    d = drafts[i]
                    d.blacklist += [b for b in cue.blacklist if b not in d.blacklist]
                    if cue.secrecy:
                        d.level = 0
                    if cue.present:
                        d.whitelist += [p for p in heard if p not in d.whitelist and p not in d.blacklist]
                for i in narrow:
                    d = drafts[i]
                    d.whitelist += [w for w in cue.whitelist if w not in d.whitelist and w not in d.blacklist]
