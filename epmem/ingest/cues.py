"""Who may know, as people say it: secrecy and audience cues in any person and tense.

A cue is read from one sentence (or one clause) and says what it implies for the facts it is
about; epmem/ingest/extract_rules.py decides which facts those are (the same message, else the
message it answers: never the whole session). Three kinds:

- secrecy ("between us", "kept it secret", "in confidence", "don't tell anyone", "nobody else
  knows", "the two decided this would stay between them", "asked me not to tell anyone"):
  level 0, and only the people who were there may know (they heard it already);
- narrowing ("don't tell Tom", "keep it away from Mamma", "Tom doesn't know yet", "before Tom
  finds out", "we tell Mamma after", "haven't told Tom"): Tom is blacklisted;
- widening ("only you and Owen know", "Owen can know", "I told Elena, nobody else", "keep it
  inside the family"): Owen / Elena / the family group are whitelisted. A widening cue opens a
  fact to someone, so it is taken from the owner's own words only; narrowing and secrecy only
  ever make a fact stricter, so they are taken from anyone's words ("please keep this between
  us" from a friend is exactly the signal contextual integrity asks for).

The patterns are written from how people talk, not fitted to any scenario file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from epmem.ingest.annotate import ContactNames
from epmem.ingest.zh import has_cjk, read_cues_zh
from epmem.textnorm import SECRECY_EMOJI

A = "['’]"
_NEG = (
    rf"(?:don{A}?t|do not|doesn{A}?t|does not|didn{A}?t|did not|never|mustn{A}?t|must not|shouldn{A}?t|"
    rf"should not|won{A}?t|will not|can{A}?t|cannot|can not|not|no need to|better not)"
)
_TELL = (
    r"(?:tell|tells|telling|told|mention|mentions|mentioning|mentioned|show|say|inform|let on|breathe a word|"
    r"bring (?:it|this|that) up|share (?:it|this|that)|pass (?:it|this|that) on|spill)"
)
_PRONOUN_OBJ = r"(?:it|this|that|them|that one|this one|these|those|any of (?:this|that)|the news|the \w+)"
_KNOW = r"(?:know|knows|find out|finds out|hear|hears|learn|learns|be told|get wind|catch wind)"

#: blacklist: the people named AFTER the cue ("don't tell Tom", "keep it from Mamma").
_BLACK_AFTER = re.compile(
    rf"\b{_NEG}\s+(?:ever\s+|even\s+|yet\s+)?(?:to\s+)?{_TELL}\b"
    rf"|\b(?:keep|keeps|keeping|kept|hide|hides|hiding|hid|hidden)\s+{_PRONOUN_OBJ}\s+(?:away\s+)?from\b"
    rf"|\bnot a word to\b|\bnot\s+(?:that|this|it|any of (?:this|that)|the\s+\w+)(?:\s+\w+)?\s+to\b"
    rf"|\b(?:haven{A}?t|hasn{A}?t|have not|has not|hadn{A}?t|had not|not yet|never)\s+(?:yet\s+)?told\b"
    rf"|\bwithout\s+(?:telling|letting)\b|\bwithout\s+(?=[\w'’]+(?:\s+[\w'’]+)?\s+(?:knowing|finding out|hearing))"
    rf"|\b{_NEG}\s+let\s+(?=[\w'’]+(?:\s+[\w'’]+)?\s+(?:know|find out|hear|see)\b)"
    rf"|\bkeep(?:ing)?\s+(?=[\w'’]+\s+out of (?:it|this|that)\b)|\bbehind\b(?=\s+\w+{A}s\s+back)|\b(?:before|until|till)\s+(?=\w+\s+{_KNOW})"
    rf"|\bkeep(?:ing)?\s+\w+\s+(?:out of the loop|in the dark)\b"
    # "don't tell anyone, esp. not my parents", "least of all Tom", "not even Mamma knows"
    rf"|\b(?:esp\.?|especially|specially|particularly|above all|certainly|definitely|and|but|or)\s+not\b"
    rf"(?!\s+(?:yet|sure|really|only|just|much|that|this|it|at all)\b)|\bleast of all\b|\bnot even\b",
    re.IGNORECASE,
)
#: blacklist: the people named BEFORE the cue ("Tom must not know", "Mamma doesn't know yet").
_BLACK_BEFORE = re.compile(
    rf"\b(?:must not|mustn{A}?t|shouldn{A}?t|should not|can{A}?t|cannot|doesn{A}?t need to|don{A}?t need to|"
    rf"must never|may not|can never|is not to|are not to|isn{A}?t to|aren{A}?t to)\s+(?:ever\s+)?{_KNOW}\b"
    rf"|\b(?:doesn{A}?t|does not|don{A}?t|do not|didn{A}?t|did not)\s+(?:know|suspect)\b"
    rf"|\b(?:has|have|had)\s+no\s+(?:idea|clue)\b|\b(?:isn{A}?t|is not|aren{A}?t|are not|wasn{A}?t)\s+"
    rf"(?:aware|in the loop|in on it)\b|\bstill thinks?\b|\bthinks? (?:it{A}s|we{A}re|I{A}m) just\b"
    rf"|\bfinds? out\b(?=[^.]*\b(?:before|until|till)\b)|\b(?:would|will|{A}d|{A}ll)\s+(?:freak|kill me|lose it)\b",
    re.IGNORECASE,
)
#: "tell Mamma after / later / once it's done": not yet.
_TELL_LATER = re.compile(
    r"\b(?:tell|telling|will tell|'ll tell|’ll tell)\s+(?P<who>[\w'’ ]{1,40}?)\s+"
    r"(?:after|afterwards|later|once|when|next|at some point|eventually|in (?:a|due) (?:while|course))\b",
    re.IGNORECASE,
)
#: "Priya I'll tell after the visa": the person first.
_LATER_TELL = re.compile(
    r"(?P<who>\b[\w'’]+(?:\s+and\s+[\w'’]+)?)\s*,?\s+(?:I|we)\s*(?:'ll|’ll| will| shall)\s+tell\s+"
    r"(?:after|afterwards|later|once|when|next|at some point|eventually)\b",
    re.IGNORECASE,
)
#: "doesn't want Tom to know", "asked me not to tell Tom": the person in between.
_WANT_NOT = re.compile(
    rf"\b(?:doesn{A}?t|does not|don{A}?t|do not|didn{A}?t|did not)\s+want\s+(?P<who>[\w'’ ]{{1,40}}?)\s+to\s+"
    rf"(?:know|find out|hear)\b",
    re.IGNORECASE,
)

_SECRECY = re.compile(
    r"\bbetween (?:us|you and me|you and I|me and you|the two of us|ourselves|themselves|them|the (?:two|three|four) "
    r"of (?:us|them)|us (?:two|three)|the family)\b"
    r"|\b(?:keep|keeps|keeping|kept|stay|stays|stayed|staying|remain|remains)\s+(?:(?:it|this|that|that one|this one|"
    r"things|the news|everything|that bit)\s+)?(?:to (?:yourself|yourselves|ourselves|themselves|himself|herself|"
    r"myself|us|them)|quiet|secret|a secret|private|confidential|under wraps|on the down ?low|hush(?:-hush)?|between|"
    r"in this (?:room|chat|group)|off the record|offline|in the family|within the family|inside the family|"
    r"among us|amongst us|with you|with me)\b"
    r"|\bin (?:strict(?:est)? )?confidence\b|\bconfidential(?:ly)?\b|\boff the record\b|\bsecret(?:ly|s)?\b"
    r"|\bsworn (?:me |us |him |her |them )?to secrecy\b|\bswore (?:me|us|him|her|them) to secrecy\b"
    rf"|\b(?:nobody|no one|no-one|noone)\s+(?:else\s+)?(?:knows|know|is to know|must know|can know|may know|has to know|"
    rf"needs to know|should know|else)\b|\bnobody else\b|\bno one else\b"
    rf"|\b{_NEG}\s+(?:ever\s+)?{_TELL}\s+(?:anyone|anybody|a soul|people|others|the others|everyone|a single person)\b"
    r"|\btell (?:no one|nobody|no-one)\b|\bnot a word\b|\bmum(?:'s| is) the word\b|\blips (?:are|r) sealed\b"
    rf"|\b(?:haven{A}?t|hasn{A}?t|have not|has not|hadn{A}?t|had not|not|never)\s+(?:yet\s+)?told\s+(?:anyone|anybody|a soul)\b"
    rf"|\byou{A}?re the (?:first|only)(?: one| person)?\b(?=[^.]*\b(?:told|know|tell)\b)"
    r"|\b(?:not|isn't|isn’t|hasn't|hasn’t) (?:public|official|announced|out)(?: yet)?\b|\bbefore (?:it's|it’s|it is) "
    r"(?:announced|public|official)\b|\bembargo(?:ed)?\b|\bunder embargo\b"
    rf"|\b(?:it{A}s|this is|that{A}s|that is|is) private\b|\bprivately\b|\bjust for you\b|\bfor your ears only\b"
    r"|\bcan you keep a secret\b|\bpromise (?:me )?(?:you )?(?:won't|wont|will not|not to)\b"
    r"|\bkeep (?:it|this|that) (?:to|between|among)\b|\bhush(?:-hush)?\b|\bon the quiet\b|\bon the q\.?t\.?\b"
    r"|\bstays? here\b|\bstays? in (?:this|the) (?:room|chat|group|family)\b"
    r"|\bunder (?:your|my|our|his|her|their) hats?\b|\bkeep (?:mum|schtum|shtum|stumm)\b|\bentre nous\b"
    r"|\bnot (?:for|to be) (?:sharing|shared|repeated|spread)\b|\bneed[- ]to[- ]know\b|\bzip (?:it|your lips)\b"
    # "I'd rather people didn't know", "Sam would rather nobody knew", "I'd prefer if people didn't find out"
    rf"|\b(?:would|{A}d|had)\s+(?:much\s+)?(?:rather|prefer)\s+(?:it\s+)?(?:if\s+)?(?:people|others|anyone|anybody|"
    rf"everyone|everybody|folks|you|the others|the world)?\s*(?:didn{A}?t|did not|don{A}?t|do not|not|wouldn{A}?t|"
    rf"would not|weren{A}?t)\s+(?:to\s+)?(?:know|knew|find out|found out|hear|heard|tell|told|mention|say|be told|"
    rf"spread|share)\b"
    rf"|\b(?:rather|prefer)\s+(?:that\s+)?(?:nobody|no one|no-one|noone)\s+(?:knew|know|knows|found out|hears|heard)\b"
    # "I don't want people to know yet", "she doesn't want anyone finding out", "don't want it getting out"
    rf"|\b(?:don{A}?t|do not|doesn{A}?t|does not|didn{A}?t|did not|wouldn{A}?t|would not|won{A}?t)\s+want\s+"
    rf"(?:people|anyone|anybody|everyone|everybody|others|the others|folks|the world|the whole world|the team|"
    rf"the office|the family)\s+(?:to\s+)?(?:know|knowing|find out|finding out|hear|hearing|be told)\b"
    rf"|\b(?:don{A}?t|do not|doesn{A}?t|does not)\s+want\s+(?:it|this|that|the news|word)\s+(?:to\s+)?"
    rf"(?:get|getting|go|going|be)\s+(?:out|around|public|known)\b"
    # "don't say a word", "don't mention it to anyone", "don't let anyone know", "don't spread it around"
    rf"|\b{_NEG}\s+(?:say|breathe|utter|whisper)\s+a\s+(?:single\s+)?word\b"
    rf"|\b{_NEG}\s+(?:ever\s+)?{_TELL}\s+(?:it|this|that|any of (?:this|that)|the news)\s+(?:to|with)\s+"
    rf"(?:anyone|anybody|a soul|people|others|the others|everyone|a single person)\b"
    rf"|\b{_NEG}\s+let\s+(?:anyone|anybody|people|others|everyone|everybody|a soul)\s+(?:know|find out|hear)\b"
    rf"|\b{_NEG}\s+(?:spread|broadcast|post|share|blab|leak)\s+(?:it|this|that|the news)(?:\s+around)?\b"
    r"|\bnot (?:for|meant for) (?:public|general) (?:consumption|knowledge)\b|\bnot common knowledge\b"
    rf"|\b(?:hasn{A}?t|has not|haven{A}?t|have not|not) (?:been )?(?:announced|made public)(?: yet)?\b"
    r"|\bshh+\b|\bhush\b"
    rf"|[{SECRECY_EMOJI}]",
    re.IGNORECASE,
)
_WHITE_NAMED = re.compile(
    rf"\bonly\b(?P<who>[^.;!?]{{1,60}}?)\b(?:know|knows|can know|may know|are told|is told|have been told|"
    rf"has been told|are in on it|is in on it|were told|was told)\b"
    rf"|(?P<who2>[\w'’ ,]{{1,60}}?)\s+(?:can|may|could)\s+(?:know|be told|hear about it|hear it)\b"
    rf"|\b(?:you can|feel free to|it{A}s fine to|ok to|okay to)\s+tell\s+(?P<who3>[\w'’ ,]{{1,60}})"
    rf"|\bkeep(?:ing)?\s+(?:it|this|that)\s+(?:inside|within|in)\s+(?P<who4>(?:the|our|my)?\s*[\w'’ ]{{1,30}})"
    rf"|\b(?:I|we)\s+(?:only\s+)?(?:told|have told|{A}ve told|{A}ve only told|will tell|{A}ll tell|am telling|{A}m telling)"
    rf"\s+(?P<who5>[\w'’ ,]{{1,60}}?)(?:\s+(?:and|but)\s+|\s*,\s*)?(?:nobody|no one|no-one)\s+else\b"
    rf"|\btold\s+(?P<who6>[\w'’ ,]{{1,60}}?)\s*,?\s*(?:and|but)?\s*(?:nobody|no one|no-one)\s+else\b"
    rf"|\b(?:nobody|no one|no-one)\b[^.;!?]{{0,30}}?\b(?:except|but|apart from|besides|other than)\s+"
    rf"(?P<who7>[\w'’ ,]{{1,40}})",
    re.IGNORECASE,
)
#: the owner opening a statement to anyone ("you can tell anyone", "it's not a secret").
_PUBLIC = re.compile(
    rf"\b(?:you can|you may|feel free to|it{A}?s fine to|fine to|ok to|okay to|go ahead and)\s+tell\s+"
    rf"(?:anyone|anybody|everyone|everybody|people|whoever)\b"
    rf"|\b(?:it{A}?s|it is|this is|that{A}?s|that is)\s+(?:not a secret|no secret|not secret|public)\b",
    re.IGNORECASE,
)
_YOU = re.compile(r"\b(?:you|yourself|yourselves|us|ourselves)\b", re.IGNORECASE)


@dataclass(slots=True)
class Cue:
    """What one sentence says about who may know."""

    blacklist: list[str] = field(default_factory=list)
    whitelist: list[str] = field(default_factory=list)
    secrecy: bool = False
    #: the people present may know (they heard it): "between us", "only you and Owen know".
    present: bool = False
    #: the words that fired, for the fact's evidence.
    said: list[str] = field(default_factory=list)
    #: the cue points back with "that"/"this"/"it" ("keep that between us"): it is about the
    #: statement just made in the same message, if there is one.
    anaphoric: bool = False
    #: the cue is about the conversation so far ("does Abuela know?" "no"): it reaches every
    #: earlier fact of the session. Only narrowing cues are read this way.
    so_far: bool = False
    #: the owner opened it to anyone ("you can tell anyone"): its category's audience.
    public: bool = False
    #: the owner named the listener in words ("only you and Owen know"): an opening, unlike a
    #: bare "between us", which only says who heard it.
    names_present: bool = False

    def __bool__(self) -> bool:
        return bool(self.blacklist or self.whitelist or self.secrecy or self.present or self.public)

    def evidence(self) -> list[str]:
        out = [f"cue:secret:{w}" for w in self.said] if self.secrecy else []
        out += [f"cue:not:{b}" for b in self.blacklist] + [f"cue:also:{w}" for w in self.whitelist]
        return (
            out + (["cue:also:everyone"] if self.public else []) + (["cue:also:present"] if self.names_present else [])
        )


class CueReader:
    """Reads cues from text; names resolve to contact and group ids via :class:`ContactNames`."""

    def __init__(self, names: ContactNames) -> None:
        self.names = names

    def read(self, segment: str, *, owner: bool) -> Cue:
        """The cue of one clause. ``owner``: the owner wrote it (only then may it widen)."""
        cue = Cue()

        def black(ids: list[str]) -> None:
            cue.blacklist += [c for c in ids if c not in cue.blacklist]

        for m in _BLACK_AFTER.finditer(segment):
            black(self.names.find(_first_clause(segment[m.end() :])))
        for m in _BLACK_BEFORE.finditer(segment):
            black(self.names.find(_last_clause(segment[: m.start()])))
        for m in _TELL_LATER.finditer(segment):
            black(self.names.find(m.group("who")))
        for m in _LATER_TELL.finditer(segment):
            black(self.names.find(m.group("who")))
        for m in _WANT_NOT.finditer(segment):
            black(self.names.find(m.group("who")))
        for m in _SECRECY.finditer(segment):
            cue.secrecy = True
            cue.said.append(m.group(0).strip().casefold())
        if owner:
            cue.public = not cue.secrecy and not cue.blacklist and _PUBLIC.search(segment) is not None
            for m in _WHITE_NAMED.finditer(segment):
                groups = m.groupdict()
                who = next(v for v in groups.values() if v)
                cue.whitelist += [c for c in self.names.find(who) if c not in cue.whitelist + cue.blacklist]
                if groups["who"] and _YOU.search(who):
                    cue.present = cue.names_present = True
                if groups["who"] or groups["who4"] or groups["who5"] or groups["who6"] or groups["who7"]:
                    cue.secrecy = True
                    cue.said.append(m.group(0).strip().casefold())
        if has_cjk(segment):
            self._read_zh(segment, owner, cue)
        if cue.secrecy and not cue.whitelist:
            cue.present = True  # "between us", "nobody else": whoever was there, and only they
        cue.anaphoric = bool(cue) and bool(
            re.search(r"\b(?:that|this|it)\b|这事|这件事|这个|此事", segment, re.IGNORECASE)
        )
        return cue

    def _read_zh(self, segment: str, owner: bool, cue: Cue) -> None:
        """The Chinese cues of a clause (epmem/ingest/zh.py), with the same meanings as above."""
        black, white, said, public, present = read_cues_zh(segment, owner=owner, find=self.names.find)
        cue.blacklist += [c for c in black if c not in cue.blacklist]
        cue.whitelist += [c for c in white if c not in cue.whitelist + cue.blacklist]
        if said:
            cue.secrecy = True
            cue.said += [w for w in said if w not in cue.said]
        cue.public = cue.public or (public and not cue.secrecy and not cue.blacklist)
        cue.present = cue.present or present
        cue.names_present = cue.names_present or present


def _first_clause(text: str) -> str:
    """The words a "don't tell ..." cue governs: up to the next clause break."""
    return re.split(
        r"[.;!?]|,\s*(?:but|and|so|because|since|as)\b|\s+(?:because|since|until|before|but)\s+", text, maxsplit=1
    )[0][:80]


def _last_clause(text: str) -> str:
    """The words before a "... must not know" cue: back to the previous clause break."""
    parts = re.split(r"[.;!?,]|\b(?:but|and so|so|because)\b", text)
    return parts[-1][-80:] if parts else ""
