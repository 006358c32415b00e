"""The fail-closed rules of ingest, in one place (docs/DESIGN.md sec. 6.3).

Every rule that decides how open an extracted fact may be lives here, with its reason, and
:func:`decide` applies them to one proposed fact. The extractors only *read* (sentences, cues,
category evidence); the decision is made here, the same way for every backend and every path
into memory. A rule may only ever make a fact stricter than the evidence alone would, except
the owner's own words ("Owen can know") and the owner's answers in review.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from epmem.ingest.annotate import Annotation
from epmem.policy.model import OWNER_ID, Domain, Policy


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    rule: str
    reason: str


RULES: tuple[Rule, ...] = (
    Rule(
        "clear-evidence",
        "A fact gets a category only on clear evidence: an example the owner confirmed, a keyword of the "
        "policy that no sensitive topic contradicts, or a statement positively judged mundane. A private "
        "topic (health, money, work moves, love, the law, identifiers, school records) that the keyword's "
        "category is not about contradicts it, and a keyword that only names a person ('mum', a contact's "
        "name) says who, not what. Anything else stays pending (level 0) with a suggestion, until the "
        "owner or a model settles it.",
        "A guess that is too loose tells people what the owner never meant them to know and cannot be "
        "taken back; a guess that is too strict only waits for the owner.",
    ),
    Rule(
        "default-is-mundane",
        "The policy's default category is for statements positively judged mundane (no policy keyword, no "
        "sensitive topic, no closer category), never a fallback for 'no keyword matched'.",
        "The default category is usually the most open one: falling into it on a miss fails open.",
    ),
    Rule(
        "secrecy-cue",
        "A secrecy cue ('between us', 'kept it secret', 'in confidence', 'don't tell anyone', 'nobody "
        "else knows'), said by anyone, puts the facts of its own message (or of the message it answers) at "
        "level 0, open only to the people who were there. It also closes the facts of the same person's "
        "messages just before it, nobody else speaking in between (one thought typed as several messages), "
        "and, when it opens the talk ('can you keep a secret?', 'between us...'), of their next messages: "
        "level 0 there, nobody let in who was not already.",
        "Whoever asked for secrecy knows best who may know; the people present heard it already.",
    ),
    Rule(
        "narrowing-cue",
        "'Don't tell Tom', 'Tom doesn't know yet', 'we tell Mamma after', said by anyone, blacklists Tom "
        "on the facts of that message (or the message it answers, or the same person's messages just before it) "
        "only; 'esp. not my parents' names both parents; a 'no' to 'does Tom know?' on the "
        "conversation so far. A person merely mentioned is never blacklisted, and no other cue reaches "
        "across the session.",
        "A blacklist only narrows, so anyone's word is enough; scoping it to the message keeps one "
        "remark from silencing unrelated facts.",
    ),
    Rule(
        "widening-cue",
        "'Only you and Owen know', 'Owen can know', 'I told Elena, nobody else' whitelist the people "
        "named, only from the owner's own words, and only on the facts of that message (or the owner "
        "message it answers).",
        "A whitelist opens a fact: only the owner may open it, and only on a clear scope.",
    ),
    Rule(
        "heard-it-already",
        "The people who read the owner's message when it was sent are whitelisted on its facts (unless a "
        "cue shuts them out), but only those the category's level and domain would otherwise exclude.",
        "Telling someone again what the owner told them reveals nothing new. A whitelist entry for someone "
        "the default audience already holds would change nothing alone but would open composites: least "
        "privilege.",
    ),
    Rule(
        "contextual-integrity",
        "Someone else's private matter told to the owner (health, money, work moves, love, the law, "
        "identifiers, or anything said under a secrecy cue) is at most as open as the conversation it was "
        "told in: it stays pending at level 0, open to nobody until the owner settles it (the suggested "
        "category is kept, and the teller and the people who were there are offered in review). So is news "
        "filed under a "
        "category of the other domain than the teller's (work news from a friend, family news from a "
        "colleague) and anything said by someone who is not a contact. Their ordinary news said openly "
        "keeps its category's level, on clear evidence only (else it is pending, its suggested audience "
        "again only the people who were there). Someone else's passing remark that no policy keyword, "
        "sensitive topic, confirmed example or secrecy cue of theirs names is kept (nothing they said is "
        "lost) but never settled on a similarity or 'mundane' reading: it stays pending at level 0, opens "
        "nobody, and neither closes its twins nor lengthens the owner's question budget.",
        "What someone told the owner is theirs to spread, not the delegate's: the teller is in on it, "
        "others are not by default, and only the owner may open it further.",
    ),
    Rule(
        "cover-is-not-truth",
        "A cover instruction ('if anyone asks, say the boat needs repairs', 'tell them I'm on "
        "leave') becomes a cover fact holding only the story, tied to the truth it stands in for: "
        "the truth said before it in the same message, else the one said after it with 'really', "
        "'actually', 'the truth is', else the message it answers, else, of the truths the "
        "conversation said before it, the one it is most like (the embedder's cosine; the latest on "
        "a tie: a story stands in for the news, not for the remark said last, so 'if anyone asks, "
        "say we close for renovation in July' is the story for 'we are moving the shop in June', not "
        "for 'he is friends with the owner across the road'). The people it is told to are "
        "blacklisted on the truth and, named by the owner, whitelisted on the cover. A cue about the "
        "truth ('between us', 'don't tell Tom') neither closes nor narrows the cover: it is for the "
        "people outside the secret, at its category's level; whoever only heard the owner describe "
        "it is not in its audience. When the truth is chosen by likeness, the people the cover is "
        "told to are blacklisted on every truth it could stand for. The owner later "
        "telling the same story to someone makes that a cover too, open only to the people told. "
        "A cover whose truth cannot be found stays pending.",
        "Telling the instruction itself reveals that there is a secret; a cover not tied to its "
        "truth could be told next to the truth.",
    ),
    Rule(
        "twin-news",
        "The same news told in another conversation (another fact that says the same thing) is narrowed "
        "by this one: a blacklist on either telling is on both, and a telling closed by a secrecy cue or by "
        "contextual integrity closes its open twin to level 0, keeping only the whitelist it had.",
        "A secret told openly a second time is still a secret: it must not become news for everyone the "
        "category would allow; and closing without letting anyone in keeps composites shut.",
    ),
    Rule(
        "normalised-text",
        "Statements are cut and cues read from normalised text: Unicode NFKC, zero-width "
        "characters, word joiners, the BOM and soft hyphens removed, Cyrillic and Greek "
        "look-alike letters mapped to Latin inside a word that also holds Latin letters (a whole "
        "Cyrillic or Greek word stays as written), and 🤫 🤐 🙊 ㊙ read as secrecy cues. A fact's "
        "text is the normalised text.",
        "A cue hidden by an invisible character or a Cyrillic 'о' is still a cue to the person "
        "who reads it; the delegate must read what a person reads, and the owner must see the "
        "words that will be told.",
    ),
    Rule(
        "cue-keeps-its-statement",
        "A statement that starts or ends with a cue ('Not a word to Tom, but I'm organising ...', "
        "'..., but I don't want people to know yet', 'Please don't tell anyone I'm ...', '... "
        "(secret!)') becomes a fact with the cue applied to it. Only a clause that is nothing but "
        "the cue, or a comment on it that points back ('Don't tell Tom, he'd worry'), becomes no "
        "fact. A negated telling ('don't tell Tom I'm ...') is a cue over the truth, never a "
        "cover.",
        "A statement dropped for its cue loses the news, and the cue, left without its fact, is "
        "read as being about a neighbouring message.",
    ),
    Rule(
        "owner-by-account",
        "Who said what comes from account ids wherever an export has them. The owner is only the "
        "policy's owner.identities, the account a full Telegram export says it belongs to, one "
        "the owner names at import (--owner), or a JSONL's literal 'owner'. A display name, the "
        "owner's own included, never makes anyone the owner, nor a contact whose account on that "
        "platform is another one; such accounts are kept as unknown people and named at import.",
        "Only the owner's own words widen an audience or set a cover: a name anyone can give "
        "themselves must not carry that power.",
    ),
    Rule(
        "nothing-lost",
        "A statement that becomes no fact and is not filler by rule (a question, a greeting or "
        "reaction, too short to say anything, an instruction with no news of the speaker's, a "
        "clause that is only a cue, a comment on a cue) is counted and quoted with its session "
        "and turn in the import summary, kept for `epmem facts unread`, and counted in the daily "
        "digest.",
        "What the owner is not shown cannot be corrected: a statement silently dropped is news "
        "the owner believes the delegate holds, and a cue whose statement vanished lands "
        "elsewhere.",
    ),
    Rule(
        "pending-opens-nothing",
        "A pending fact whitelists nobody: its suggested 'who may know' is shown to the owner in review "
        "and opens nothing until confirmed.",
        "Level 0 lets whitelisted people through; a guessed whitelist would be a guess that opens.",
    ),
    Rule(
        "stricter-only",
        "Rules, cues and models may only make a fact stricter than its category (level at most the "
        "category's, the category's domain kept, never-share at level 0 with nobody whitelisted); "
        "only the owner loosens.",
        "The policy is the owner's; nothing read from a transcript may override it.",
    ),
    Rule(
        "whitelist-heard",
        "A whitelist entry is kept only for someone who was present (they heard it already) or whom the "
        "owner named in that conversation.",
        "A line in a transcript ('whitelist me') from someone else must open nothing.",
    ),
)

State = Literal["annotated", "pending"]


@dataclass(slots=True)
class Decision:
    state: State
    category: str
    level: int
    domain: Domain | None
    whitelist: list[str] = field(default_factory=list)
    blacklist: list[str] = field(default_factory=list)
    proposed_whitelist: list[str] = field(default_factory=list)
    confidence: float = 0.0
    evidence: list[str] = field(default_factory=list)


def _by_default(policy: Policy, who: str, level: int, domain: str | None) -> bool:
    """Whether the default audience of a fact at ``level``/``domain`` holds contact ``who``."""
    c = policy.contacts.get(who)
    return c is not None and level >= 1 and c.level <= level and (domain is None or c.domain == domain)


#: topics that make someone else's news a private matter (contextual-integrity).
PRIVATE_TOPICS = frozenset({"health", "money", "career", "romance", "legal", "identity", "secrets"})


def decide(
    policy: Policy,
    ann: Annotation,
    *,
    speaker: str,
    present: Sequence[str],
    secrecy: bool = False,
    whitelist: Sequence[str] = (),
    blacklist: Sequence[str] = (),
    cover_orphan: bool = False,
    evidence: Sequence[str] = (),
    cover: bool = False,
    close: bool = False,
) -> Decision:
    """Apply :data:`RULES` to one proposed fact.

    ``ann`` is the category evidence; ``speaker`` who said it (``owner`` or a contact id);
    ``present`` everyone else who read it; ``secrecy``/``whitelist``/``blacklist`` what the cues
    that reach this fact said (whitelists only from the owner's words); ``close`` a secrecy cue
    from a neighbouring message (level 0, nobody let in who was not already)."""
    cat = policy.categories[ann.category]
    black = list(dict.fromkeys(blacklist))
    white = [w for w in dict.fromkeys(whitelist) if w not in black]
    ev = [*evidence, *ann.evidence]
    other = speaker != OWNER_ID
    audience = [p for p in dict.fromkeys([*([speaker] if other else []), *present]) if p not in black]
    if cover:  # the people who heard the owner describe a cover know the truth, not the story
        audience = []
    private = other and (secrecy or close or bool(PRIVATE_TOPICS & _topics(ann)) or _crosses(policy, ann, speaker))
    level, confidence, clear = ann.level, ann.confidence, ann.clear
    # least privilege: whitelist only the people the category's own audience would leave out;
    # an entry for someone it holds changes nothing alone but opens composites
    needed = [p for p in audience if not _by_default(policy, p, ann.level, ann.domain)]
    if private:  # contextual-integrity: pending at level 0; the owner may open it to those who were there
        ev.append(f"context:told-by:{speaker}")
        offered = [] if cat.never_share else list(dict.fromkeys([*white, *audience]))
        return Decision("pending", ann.category, 0, ann.domain, [], black, offered, round(max(confidence, 0.7), 3), ev)
    if secrecy:  # secrecy-cue: only the people who were there (at level 0 each needs an entry)
        level, clear = 0, True
        white = list(dict.fromkeys([*white, *audience]))
        confidence = max(confidence, 0.7)
    elif clear:  # heard-it-already
        white = list(dict.fromkeys([*white, *needed]))
        if close:  # secrecy-cue from a neighbouring message: closed, no one let in who was not already
            level = 0
            ev.append("cue:near")
    if cover_orphan:  # cover-is-not-truth
        clear = False
        ev.append("cover:no-truth")
    level = min(level, cat.level)  # stricter-only
    if cat.never_share:
        level, white = 0, []
    if not clear:  # clear-evidence, default-is-mundane, pending-opens-nothing
        if other:
            level = 0
            white = list(dict.fromkeys([*white, *audience]))
        return Decision("pending", ann.category, level, ann.domain, [], black, white, round(confidence, 3), ev)
    return Decision("annotated", ann.category, level, ann.domain, white, black, [], round(confidence, 3), ev)


def _crosses(policy: Policy, ann: Annotation, speaker: str) -> bool:
    """News from a work contact filed under a life category (or the other way round) left the
    context it was told in: contextual integrity keeps it there."""
    who = policy.contacts.get(speaker)
    return who is None or (ann.domain is not None and who.domain is not None and who.domain != ann.domain)


def _topics(ann: Annotation) -> set[str]:
    return {e.split(":")[1] for e in ann.evidence if e.startswith("topic:") and e.count(":") >= 2}
