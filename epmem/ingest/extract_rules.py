"""The offline extractor: sentence-level facts from every speaker's turns, no network.

Every message is read, the owner's and everyone else's: a secret a friend tells the owner is a
fact about the friend (a third party), and what the owner is told is as much the owner's memory
as what the owner says. Each statement (epmem/ingest/statements.py cuts a message into whole
statements) becomes at most one fact, in the third person ("I" is the
speaker, "you" the person spoken to), with a bare "he"/"she" resolved to the person the
conversation just named. Questions, instructions, greetings and pure reactions become no fact;
someone else's passing remark is kept, pending (see :meth:`RulesExtractor._evident`).

What a sentence means for who may know is read by epmem/ingest/cues.py and scoped here: a cue
applies to the facts of its own message, else of the message it answers (its reply link), else
of the nearest earlier message with facts when the cue stands alone. Never to the session.
Cover instructions ("if anyone asks, just say ...", "tell them ...", "the story is ...") become
cover facts holding only the story, tied to the truth they stand in for.

Each proposal then goes through the fail-closed rules (epmem/ingest/failclosed.py), which decide
whether it is annotated or stays pending for the owner.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from epmem.ingest.annotate import Annotation, CategoryClassifier, ContactNames
from epmem.ingest.covers import TRUTH_MARK as _TRUTH_MARK, TRUTH_WORD as _TRUTH_WORD, find_cover
from epmem.ingest.cues import Cue, CueReader
from epmem.ingest.cuesplit import PROMISE as _PROMISE, CueSplitter, filler as _filler
from epmem.ingest.extract import Draft, owner_first_name, reply_index
from epmem.ingest.heard import present
from epmem.ingest.failclosed import decide
from epmem.ingest.review_rank import PASSING
from epmem.memory.sessions import Session
from epmem.policy.holder import PolicyHolder, ReadsPolicy
from epmem.policy.model import OWNER_ID, Policy
from epmem.ingest.statements import LEAD as _LEAD, SUBJECTLESS_SKIP as _SUBJECTLESS_SKIP
from epmem.ingest.statements import asks, chat_statements, ends_asking, informative, worth
from epmem.ingest.unread import FILLER, Unread
from epmem.ingest.zh import ChineseFacts, has_cjk
from epmem.textnorm import STOPWORDS, normalise, sentence, third_person, words

_SEGMENT = re.compile(r"\s*[,;:—–]\s*|\s+-\s+")
#: "does Abuela know?" ... "no, and let's keep it that way": the person asked about does not know.
_ASKS_KNOW = re.compile(
    r"\b(?:does|did|do|has|have|is|are)\s+(?P<who>[\w'’ ]{1,30}?)\s+(?:know|knows|heard|found out|been told|"
    r"aware|in the loop)\b|\b(?:have|did|has)\s+(?:you|u|he|she|they)\s+told\s+(?P<who2>[\w'’ ]{1,30}?)"
    r"(?:\s+yet)?\s*\?",
    re.IGNORECASE,
)
_ANSWER_NO = re.compile(
    r"^\W*(?:no+|nope|nah|not yet|god no|hell no|absolutely not|not at all|not a chance)\b", re.IGNORECASE
)
_HE_SHE = re.compile(r"^(?:he|she)\b", re.IGNORECASE)
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-ZÀ-Þ][a-zà-ÿ]+)\b")
_NOT_NAMES = frozenset(
    """I The A An My Our His Her Their This That These Those It Its We You He She They Monday Tuesday
    Wednesday Thursday Friday Saturday Sunday January February March April May June July August
    September October November December Mr Mrs Ms Dr OK Okay Yes No Hi Hey Thanks Christmas Easter""".split()
)


@dataclass(slots=True)
class _TurnDrafts:
    turn: int
    drafts: list[int] = field(default_factory=list)
    cues: list[Cue] = field(default_factory=list)
    #: a sentence that was only a cue ("We tell Mum afterwards."): it is about an earlier message.
    bare_cue: bool = False
    #: covers of this message not tied to a truth of it yet, with their listeners: "If anyone
    #: asks, say I'm at a conference. Really I'm at the clinic." ties to what follows.
    open_covers: list[tuple[int, list[str]]] = field(default_factory=list)


@dataclass(slots=True)
class _Proposal:
    """A draft before the fail-closed rules: what was said and what cues reach it."""

    draft: Draft
    speaker: str
    secrecy: bool = False
    #: a secrecy cue in the fact's own message (said by whoever said the fact).
    own_secrecy: bool = False
    whitelist: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    cover_orphan: bool = False
    #: a secrecy cue in a neighbouring message of the same person: closed, nobody let in.
    close: bool = False
    #: fragments joined into this statement that say something of their own ("11 weeks").
    joined: list[str] = field(default_factory=list)


def normalised(session: Session) -> Session:
    """The session with every turn's text :func:`~epmem.textnorm.normalise`-d (a copy)."""
    turns = [t if (text := normalise(t.text)) == t.text else replace(t, text=text) for t in session.turns]
    return session if all(a is b for a, b in zip(turns, session.turns)) else replace(session, turns=turns)


class RulesExtractor(ReadsPolicy):
    name = "rules"

    def __init__(self, policy: Policy | PolicyHolder, classifier: CategoryClassifier) -> None:
        self._policy = PolicyHolder.of(policy)
        self.classifier = classifier
        self.names = ContactNames(policy)
        self.cues = CueReader(self.names)
        self.splitter = CueSplitter(self.cues, self.names, set(words(self.policy.owner.name)))
        self.owner = owner_first_name(self.policy)
        self._owner_words = set(words(self.policy.owner.name))
        self.zh = ChineseFacts(self.policy.owner.name, self.names.strip)  # Chinese statements and covers

    # ------------------------------------------------------------------ people

    def speaker_name(self, session: Session, t: int) -> str:
        turn = session.turns[t]
        if turn.speaker == OWNER_ID:
            return self.owner
        if turn.speaker in self.policy.contacts:
            return self.names.name_of(turn.speaker)
        name = (turn.speaker_name or "Someone").strip() or "Someone"
        first = name.split()[0]
        if first.casefold() == self.owner.casefold() or self.names.find(first):
            # someone else named like the owner or a contact: a fact must not read as theirs
            return f"{name} ({turn.speaker.removeprefix('unknown:')})"
        return first

    def _you(self, session: Session, t: int) -> str | None:
        """Who "you" is: for the owner, the counterpart of a two-party (sub-)session, the author
        of the message replied to, or everyone present for "you two"; for anyone else, the owner
        (they are talking to the owner) unless the message answers someone else."""
        turn = session.turns[t]
        target = reply_index(session, t)
        if turn.speaker != OWNER_ID:
            if target is not None and session.turns[target].speaker not in (OWNER_ID, turn.speaker):
                return self.speaker_name(session, target)
            return self.owner if session.chat_kind == "direct" or target is not None else None
        others = present(session)
        if re.search(r"\byou (?:two|both|all|guys)\b", turn.text, re.IGNORECASE) and len(others) > 1:
            return " and ".join(self.names.name_of(o) for o in others)
        if target is not None and session.turns[target].speaker != OWNER_ID:
            return self.speaker_name(session, target)
        counterparts = [p for p in session.participants if p != OWNER_ID]
        if len(counterparts) == 1:
            return self.names.name_of(counterparts[0])
        return None

    def _last_named(self, session: Session, t: int, before: str) -> str | None:
        """The one person the conversation just named (this sentence's turn, then two back)."""
        texts = [before] + [session.turns[i].text for i in range(t - 1, max(-1, t - 3), -1)]
        for text in texts:
            found: list[str] = [n for n in _NAME.findall(text) if n not in _NOT_NAMES and n != self.owner]
            found += [self.names.name_of(c) for c in self.names.find(text) if c in self.policy.contacts]
            people = list(dict.fromkeys(found))
            if len(people) == 1:
                return people[0]
            if people:
                return None
        return None

    # ------------------------------------------------------------------ sentences

    def _rewrite(self, text: str, speaker: str, you: str | None, he_she: str | None = None) -> str:
        if has_cjk(text):
            return self.zh.rewrite(text, speaker, you)
        text = _LEAD.sub("", text.strip()).strip()
        if you and " and " not in you:  # "Nora, I'd like to offer you ...": the listener named is no subject
            text = _LEAD.sub("", re.sub(rf"^{re.escape(you)}\s*[,!:]\s*(?=\S)", "", text, flags=re.IGNORECASE))
        if he_she and _HE_SHE.match(text):
            text = _HE_SHE.sub(he_she, text, count=1)
        first = text.split(" ", 1)[0] if text else ""
        token = re.match(r"\w+", first)
        if first and first[0].islower() and (token is None or token.group(0).casefold() not in _SUBJECTLESS_SKIP):
            text = f"{speaker} is {text}" if first.endswith("ing") else f"{speaker} {text}"
        return sentence(third_person(text, speaker, you))

    def _cue_sentence(self, raw: str, owner: bool) -> tuple[list[Cue], str | None, str]:
        """The cues of a sentence and the statement it carries (epmem/ingest/cuesplit.py)."""
        return self.splitter.split(raw, owner)

    def _cover(self, text: str, speaker_words: set[str]) -> tuple[str, list[str]] | None:
        """(the story, its listeners) when the sentence tells others a story (epmem/ingest/covers.py)."""
        return find_cover(text, speaker_words, self.names)

    # ------------------------------------------------------------------ sessions

    def drafts(self, session: Session) -> list[Draft]:
        return self.read(session)[0]

    def read(self, session: Session) -> tuple[list[Draft], list[Unread]]:
        """The session's drafts, and the statements that could not become one (not filler by
        :data:`FILLER`'s rules): the import lists them for the owner instead of losing them.

        The turns are read normalised (epmem/textnorm.py :func:`normalise`: NFKC, no invisible
        characters, look-alike letters mapped inside Latin words), so a cue cannot hide behind
        a zero-width space or a Cyrillic "о", and fact texts hold what the owner would read."""
        session = normalised(session)
        self.zh.now = session.start
        proposals: list[_Proposal] = []
        turns: dict[int, _TurnDrafts] = {}
        unread: list[Unread] = []
        last_truth: int | None = None
        for t, _turn in enumerate(session.turns):
            td = turns.setdefault(t, _TurnDrafts(t))
            last_truth = self._read_turn(session, t, td, turns, proposals, last_truth, unread)
        self._apply_cues(session, proposals, turns)
        return self._decide(session, proposals), unread

    def _read_turn(
        self,
        session: Session,
        t: int,
        td: _TurnDrafts,
        turns: dict[int, _TurnDrafts],
        proposals: list[_Proposal],
        last_truth: int | None,
        unread: list[Unread],
    ) -> int | None:
        turn = session.turns[t]
        owner = turn.speaker == OWNER_ID
        speaker = self.speaker_name(session, t)
        mine = set(words(speaker)) | (self._owner_words if owner else set())
        you = self._you(session, t)
        before = last_truth  # the conversation's latest truth before this message
        marked: set[int] = set()
        td.cues += self._not_told(session, t)

        def lost(text: str, reason: str) -> None:
            if (reason or _filler(text)) not in FILLER:
                quote = " ".join(text.split())
                unread.append(Unread(session.id, t, turn.speaker, quote if len(quote) <= 120 else quote[:119] + "…"))

        for raw, joined in chat_statements(turn.text, lambda x: bool(self.cues.read(x, owner=owner)), mine):
            if ends_asking(raw):
                td.cues += [c for c in (self.cues.read(x, owner=owner) for x in [raw, *_SEGMENT.split(raw)]) if c][:1]
                continue
            cover = self.zh.cover(raw) if has_cjk(raw) else self._cover(raw, mine)
            if cover is not None:
                clause, listeners = cover
                story = self._rewrite(clause, speaker, you)
                same = [i for i in td.drafts if proposals[i].draft.version == "truth"]
                proposals.append(
                    _Proposal(
                        Draft(story, "cover", same[-1] if same else None, source_turns=[t]),
                        turn.speaker,
                        whitelist=listeners if owner else [],
                    )
                )
                td.drafts.append(len(proposals) - 1)
                td.open_covers.append((len(proposals) - 1, listeners))
                continue
            cues, said, why = self._cue_sentence(raw, owner)
            td.cues += cues
            for i, _ in td.open_covers:  # "If anyone asks, say X. Not that line to Tara": a narrowing after a cover
                black = proposals[i].draft.blacklist  # is about the cover too (a cue before it is about the truth)
                black += [b for c in cues for b in c.blacklist if b not in black]
            # a cue with no statement of its own kept, or one it could not be cut from, reaches back
            td.bare_cue = td.bare_cue or bool(cues) and (said is None or why == "embedded" or not worth(said, mine))
            if said is not None and td.open_covers and (mark := _TRUTH_MARK.match(said.strip())):
                said = said.strip()[mark.end() :]  # "Really I'm going to the clinic": the truth of the cover
                marked.add(len(proposals))
            elif said is not None and td.open_covers and _TRUTH_WORD.match(said):
                marked.add(len(proposals))  # "It's actually the visa appointment"
            if cues and said is not None and _PROMISE.search(raw):
                td.bare_cue = True  # "my lips are sealed but you owe me chocolates": about the news before
            if said is not None and worth(said, mine):
                he_she = self._last_named(session, t, raw) if _HE_SHE.match(_LEAD.sub("", said)) else None
                proposals.append(
                    _Proposal(
                        Draft(self._rewrite(said, speaker, you, he_she), "truth", source_turns=[t]),
                        turn.speaker,
                        joined=[f for f in joined if informative(f)],
                    )
                )
                td.drafts.append(len(proposals) - 1)
                last_truth = len(proposals) - 1
            else:
                lost(said if said is not None else raw, why if said is None else "")
        self._tie_covers(session, t, td, turns, proposals, before, marked)
        return last_truth

    def _tie_covers(
        self,
        session: Session,
        t: int,
        td: _TurnDrafts,
        turns: dict[int, _TurnDrafts],
        proposals: list[_Proposal],
        before: int | None,
        marked: set[int],
    ) -> None:
        """Each cover of the message gets its truth (cover-is-not-truth): the truth the message
        said before it; else the one it says after it with "really", "actually", "the truth is"
        ("If anyone asks, say I'm at a conference. Really I'm at the clinic."); else the message
        it answers, else the conversation's latest truth before this message. Whoever the
        cover is told to is blacklisted on the truth."""
        for i, listeners in td.open_covers:
            d = proposals[i].draft
            if d.covers is None:
                after = [k for k in td.drafts if k > i and k in marked]
                named = self._truth_for(session, t, _TurnDrafts(t), turns, None, proposals)
                d.covers = after[0] if after else named if named is not None else before
                if not after and named is None and before is not None:
                    # only a guess: the finalizer picks, of the truths said before, the one the
                    # cover is most like (a story stands in for the news, not for the remark
                    # said last: "he is friends with the owner across the road")
                    d.truths = [k for k in range(i) if proposals[k].draft.version == "truth" and k not in td.drafts]
            proposals[i].cover_orphan = d.covers is None
            # whoever the cover is told to may not know its truth: when the truth is a guess,
            # every truth it may stand in for (fail closed)
            for k in dict.fromkeys([*d.truths, *([] if d.covers is None else [d.covers])]):
                black = proposals[k].draft.blacklist
                black += [x for x in listeners if x not in black]
        td.open_covers.clear()

    def _not_told(self, session: Session, t: int) -> list[Cue]:
        """A "no" to "does Abuela know?" blacklists Abuela on what the question was about."""
        turn = session.turns[t]
        if not _ANSWER_NO.match(turn.text):
            return []
        q = reply_index(session, t)
        q = t - 1 if q is None else q
        if q < 0 or session.turns[q].speaker == turn.speaker:
            return []
        m = _ASKS_KNOW.search(session.turns[q].text)
        if m is None or not asks(session.turns[q].text):
            return []
        who = [c for c in self.names.find(m.group("who") or m.group("who2") or "") if c != turn.speaker]
        return [Cue(blacklist=who, said=[m.group(0).strip().casefold()], so_far=True)] if who else []

    @staticmethod
    def _truth_for(
        session: Session,
        t: int,
        td: _TurnDrafts,
        turns: dict[int, _TurnDrafts],
        last_truth: int | None,
        proposals: list[_Proposal],
    ) -> int | None:
        """The truth a cover stands in for: in the same message, else the message it answers
        (or the one that message answers), else the latest truth of the conversation."""
        same = [i for i in td.drafts if proposals[i].draft.version == "truth"]
        if same:
            return same[-1]
        at: int | None = t
        for _ in range(2):
            at = reply_index(session, at) if at is not None else None
            if at is None:
                break
            replied = [i for i in turns.get(at, _TurnDrafts(at)).drafts if proposals[i].draft.version == "truth"]
            if replied:
                return replied[-1]
        return last_truth

    def _targets(
        self, session: Session, t: int, turns: dict[int, _TurnDrafts], depth: int = 2, top: bool = True
    ) -> list[int]:
        """The facts a cue of turn ``t`` is about: its own, and those of the message it answers,
        following reply links, through a question with no facts of its own ("priya knows?" ->
        "nobody at home except Divya" reaches what the question was about). A message with no
        facts of its own and no reply link that holds a cue ("Let's not mention the money to
        Marco") reaches the nearest earlier message with facts, at most three back. Never
        further: no cue reaches across the session."""
        own = list(turns[t].drafts) if t in turns else []
        target = reply_index(session, t)
        if target is not None and target < t:
            via = self._targets(session, target, turns, depth - 1, False) if depth > 0 else []
            return list(dict.fromkeys([*own, *via]))
        question = t in turns and not own and asks(session.turns[t].text)
        if not (top or question or (t in turns and turns[t].cues)) or own and not turns[t].bare_cue:
            return own
        earlier = [i for p in range(t - 1, max(-1, t - 4), -1) if p in turns for i in turns[p].drafts]
        return list(dict.fromkeys([*own, *earlier]))

    @staticmethod
    def _burst(
        session: Session, t: int, turns: dict[int, _TurnDrafts], ahead: bool = False, span: int = 3
    ) -> list[int]:
        """The facts of the messages the same person sent right before turn ``t``, nobody else
        speaking in between: one thought typed as several messages, so a secrecy or narrowing
        cue in any of them is about all of them. ``ahead``: their next messages instead, over a
        short reply ("Can you keep a secret?" "sure" "I'm pregnant")."""
        speaker = session.turns[t].speaker
        n = len(session.turns)
        steps = range(t + 1, min(n, t + 1 + span)) if ahead else range(t - 1, max(-1, t - 1 - span), -1)
        found: list[int] = []
        for p in steps:
            if session.turns[p].speaker != speaker:
                if ahead:
                    continue
                break
            found += turns[p].drafts if p in turns else []
        return found

    def _apply_cues(self, session: Session, proposals: list[_Proposal], turns: dict[int, _TurnDrafts]) -> None:
        """Narrowing cues reach their message and the message it answers; a widening cue only
        its own message's facts, or, standing alone, those of the message it answers."""
        for t in sorted(turns):
            td = turns[t]
            if not td.cues:
                continue
            base = self._targets(session, t, turns)
            near = self._burst(session, t, turns)
            if (
                (td.bare_cue or not td.drafts)
                and any(c.secrecy for c in td.cues)
                and (session.turns[t].text.rstrip().endswith(("?", ":", "...", "…")) or not base)
            ):
                # "Can you keep a secret?", "Between us..." then the news: a cue that opens reaches ahead
                near += self._burst(session, t, turns, ahead=True)
            opened = list(td.drafts) or base
            for cue in td.cues:
                reach = base
                if cue.anaphoric and td.drafts:  # "keep that between us": the statement just made
                    reach = list(td.drafts)
                if cue.so_far and not cue.whitelist:  # "does Abuela know?" "no": the talk so far
                    reach = [i for p in sorted(turns) if p <= t for i in turns[p].drafts]
                for i in dict.fromkeys([*reach, *near]):
                    p = proposals[i]
                    if p.draft.version == "cover":
                        continue  # a cover is for the people outside the secret: a cue about the truth is not about it
                    p.draft.blacklist += [b for b in cue.blacklist if b not in p.draft.blacklist]
                    if i in reach:
                        p.secrecy = p.secrecy or cue.secrecy
                    else:  # a neighbouring message's cue closes, and lets nobody in
                        p.close = p.close or cue.secrecy
                    p.own_secrecy = p.own_secrecy or (cue.secrecy and i in td.drafts)
                    p.evidence += [e for e in cue.evidence() if e not in p.evidence and not e.startswith("cue:also")]
                for i in opened:
                    p = proposals[i]
                    if p.draft.version == "cover":
                        continue
                    p.whitelist += [w for w in cue.whitelist if w not in p.whitelist]
                    p.evidence += [e for e in cue.evidence() if e not in p.evidence]

    def _decide(self, session: Session, proposals: list[_Proposal]) -> list[Draft]:
        if not proposals:
            return []
        heard = present(session)
        anns = self.classifier.classify_many([p.draft.text for p in proposals])
        passing = {i for i, (p, ann) in enumerate(zip(proposals, anns)) if not self._evident(p, ann)}
        unsettled = self._unsettled_parts(proposals)
        out: list[Draft] = []
        for i, (p, ann) in enumerate(zip(proposals, anns)):
            d = p.draft
            if i in passing:
                ann = replace(ann, clear=False, evidence=(*ann.evidence, PASSING, f"context:passing:{p.speaker}"))
            elif i in unsettled and ann.clear:  # only as settled as its least settled part
                ann = replace(ann, clear=False, evidence=(*ann.evidence, "fragment:unclear"))
            d.truths = [k for k in d.truths if k not in passing]
            if d.covers is not None and d.covers in passing:
                # a cover stands in for news, not for someone's passing remark ("What should I
                # tell the team?" "Just say I'm on leave"): the latest other truth before it
                before = [k for k in range(d.covers + 1) if proposals[k].draft.version == "truth" and k not in passing]
                d.covers = before[-1] if before else None
                p.cover_orphan = d.covers is None
            others = [x for x in heard if x != p.speaker]
            decision = decide(
                self.policy,
                ann,
                speaker=p.speaker,
                present=others,
                secrecy=p.secrecy,
                close=p.close,
                whitelist=p.whitelist,
                blacklist=d.blacklist,
                cover_orphan=p.cover_orphan,
                evidence=p.evidence,
                cover=d.version == "cover",
            )
            d.category, d.level, d.domain = decision.category, decision.level, decision.domain
            d.whitelist, d.blacklist = decision.whitelist, decision.blacklist
            d.state, d.confidence, d.evidence = decision.state, decision.confidence, decision.evidence
            d.proposed_whitelist = decision.proposed_whitelist
            out.append(d)
        return out

    def _unsettled_parts(self, proposals: list[_Proposal]) -> set[int]:
        """Statements with a joined fragment whose own reading is not clear ("I got the offer.
        120k base"): the fragment says something the statement's category may not cover."""
        parts = [(i, f) for i, p in enumerate(proposals) for f in p.joined]
        anns = self.classifier.classify_many([f for _, f in parts]) if parts else []
        return {i for (i, _), ann in zip(parts, anns) if not ann.clear}

    @staticmethod
    def _evident(p: _Proposal, ann: Annotation) -> bool:
        """Whether the category evidence may settle someone else's statement. Their passing
        remarks (no policy keyword, sensitive topic or confirmed example names what they are
        about, and no secrecy cue of their own) are kept, so that what they said is in memory
        and the owner can be asked about it, but never settled on a similarity or "mundane"
        reading: they stay pending at level 0 (clear-evidence, contextual-integrity)."""
        if p.speaker == OWNER_ID or ann.basis in ("keywords", "topic", "example"):
            return True
        return p.own_secrecy and len([w for w in words(p.draft.text) if w not in STOPWORDS]) >= 4
