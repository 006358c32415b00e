"""From one Session to annotated F2 facts: the part both backends share.

A backend (epmem/ingest/extract_rules.py offline, epmem/ingest/extract_llm.py over an LLM) proposes
:class:`Draft` facts; :func:`finalize` turns drafts into :class:`Fact` objects and is where the
rules that no backend may bend are enforced in code:

- the stricter-only clamp (epmem/ingest/annotate.py): level <= the category's level, the category's
  domain kept, never-share categories at level 0;
- exception suggestions are checked against the conversation: a blacklist entry only ever
  narrows, so any known contact or group is taken; a whitelist entry widens, so it is taken
  only for someone who was present (they heard it already) or whom the owner named in this
  session's own turns. A transcript line "whitelist me" from someone else opens nothing;
- ids: facts get stable ids from the session id; events are linked to events already in
  memory (same category, near-identical wording) or get a new id;
- covers take their truth's event id and name the truth fact.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace

from epmem.embedding.once import embed
from epmem.ingest.annotate import Annotation, CategoryClassifier, Clamped, ContactNames, clamp
from epmem.ingest.asked import asked_before
from epmem.ingest.heard import describes_a_telling, heard_label, listeners, present, said_to_everyone, stated_by
from epmem.ingest.topics import holds_secret
from epmem.memory.facts import Fact, Version
from epmem.memory.nearest import FindsSimilar
from epmem.memory.recall import FactMemory
from epmem.policy.holder import PolicyHolder, ReadsPolicy
from epmem.policy.model import OWNER_ID, Policy
from epmem.memory.sessions import Session, source_ref
from epmem.textnorm import normalise

_EVENT_ID = re.compile(r"[^a-z0-9_.-]+")


@dataclass(slots=True)
class Draft:
    """A proposed fact: what a backend says, before the code-enforced rules run."""

    text: str
    version: Version = "truth"
    #: for a cover: index of its truth in the same list of drafts.
    covers: int | None = None
    category: str | None = None
    level: int | None = None
    domain: str | None = None
    event_id: str | None = None
    source_turns: list[int] = field(default_factory=list)
    whitelist: list[str] = field(default_factory=list)
    blacklist: list[str] = field(default_factory=list)
    #: set by the fail-closed rules (epmem/ingest/failclosed.py); None: the caller's state applies.
    state: str | None = None
    confidence: float | None = None
    evidence: list[str] = field(default_factory=list)
    proposed_whitelist: list[str] = field(default_factory=list)
    #: for a cover whose truth its message does not name (not in the message, not the one it
    #: answers, no "really ..." after it): the conversation's earlier truths it may stand in
    #: for, ``covers`` the latest of them; the finalizer picks the one the cover is most like.
    truths: list[int] = field(default_factory=list)


def owner_first_name(policy: Policy) -> str:
    return policy.owner.name.split()[0] if policy.owner.name.strip() else "The owner"


def reply_index(session: Session, turn_index: int) -> int | None:
    """The index (in this session) of the turn a turn replies to, if it is in this session."""
    target = session.turns[turn_index].reply_to
    if target is None:
        return None
    for t in session.turns:
        if t.msg_id == target:
            return t.index
    return None


def owner_named(session: Session, names: ContactNames) -> set[str]:
    """Contacts and groups the owner's own turns in this session name."""
    named: set[str] = set()
    for turn in session.turns:
        if turn.speaker == OWNER_ID:
            named.update(names.find(turn.text))
    return named


def _slug(value: str) -> str:
    return _EVENT_ID.sub("-", value.casefold()).strip("-")[:80]


@dataclass
class _Batch:
    """One session's drafts on their way to facts: what each draft's fact is read against."""

    session: Session
    drafts: list[Draft]
    ids: list[str]
    events: list[str]
    retold: dict[int, Fact]
    #: who heard the session, whom the owner's turns name, the policy's contacts and groups.
    heard: set[str]
    named: set[str]
    lists: set[str]
    per_turn: Counter[int]
    state: str | None
    notes: list[str]
    #: the rules' reading of the text only stands in for a category the policy lacks (clamp):
    #: rules drafts always name one, so their texts are not embedded a second time. It is read
    #: when the first draft needs it, for all drafts in one batch (the same batch, the same vectors).
    fallback: list[Annotation] | None = None


class Finalizer(ReadsPolicy):
    """Drafts -> facts under the code-enforced rules (see the module docstring)."""

    def __init__(
        self,
        policy: Policy | PolicyHolder,
        classifier: CategoryClassifier,
        memory: FactMemory | None = None,
        link_similarity: float = 0.8,
        retold_similarity: float = 0.75,
        *,
        open_by_category: bool = False,
    ) -> None:
        self._policy = PolicyHolder.of(policy)
        #: the old behaviour, off by default (docs/DESIGN.md sec. 6.5): a fact the rules
        #: settle is open to its category's audience at once, without the owner's word.
        self.open_by_category = open_by_category
        self.classifier = classifier
        self.memory = memory
        self.names = ContactNames(policy)
        self.link_similarity = link_similarity
        self.retold_similarity = retold_similarity

    async def finalize(
        self,
        session: Session,
        drafts: Sequence[Draft],
        *,
        prefix: str,
        state: str | None,
        known_events: set[str] | None = None,
        near: FindsSimilar | None = None,
    ) -> tuple[list[Fact], list[str]]:
        """``state`` forces every fact's state; None keeps each draft's own (the fail-closed
        rules set it), pending where a draft has none. ``near``: where to ask for stored
        neighbours (a session's :class:`~epmem.memory.nearest.NearestOnce`, shared with the
        distiller so a question asked twice is answered once); the memory by default."""
        notes: list[str] = []
        # every backend's facts hold normalised words (normalised-text): a model may copy a
        # zero-width character or a look-alike letter from the chat
        drafts = [d if (text := normalise(d.text)) == d.text else replace(d, text=text) for d in drafts]
        drafts = [d for d in drafts if d.text.strip()]
        drafts = self._covers_most_like(drafts)
        heard = set(present(session))
        named = owner_named(session, self.names)
        lists = set(self.policy.contacts) | set(self.policy.groups)
        ids = [f"{session.id}-{prefix}{i + 1}" for i in range(len(drafts))]
        # how many facts each message gave: an opening in a message of several statements is
        # ambiguous ("Only Jess and Claire know about the MS. At school it's the knee.")
        per_turn = Counter(d.source_turns[0] for d in drafts if d.source_turns)
        # every draft's neighbours first (limit 8): the truths' shorter question (limit 5) is then
        # the start of that answer (NearestOnce in an embedding scope), not another store search
        events = await self._events(session, drafts, known_events or set(), near)
        retold = await self._retold_covers(session, drafts, near)
        batch = _Batch(session, drafts, ids, events, retold, heard, named, lists, per_turn, state, notes)
        return [self._fact(batch, i, d) for i, d in enumerate(drafts)], notes

    def _fact(self, batch: _Batch, i: int, d: Draft) -> Fact:
        """One draft's fact: its annotation clamped to the policy, who may hear it, its state."""
        session, fid = batch.session, batch.ids[i]
        if batch.fallback is None and d.category not in self.policy.categories:
            batch.fallback = self.classifier.classify_many([x.text for x in batch.drafts])
        c = clamp(self.policy, d.category, d.level, d.domain, None if batch.fallback is None else batch.fallback[i])
        batch.notes.extend(f"{fid}: {n}" for n in c.notes)
        never = self.policy.categories[c.category].never_share
        blacklist = [b for b in dict.fromkeys(d.blacklist) if b in batch.lists]
        whitelist = self._heard(fid, d.whitelist, blacklist, never, batch.heard, batch.named, batch.lists, batch.notes)
        proposed = self._heard(
            fid, d.proposed_whitelist, blacklist, never, batch.heard, batch.named, batch.lists, batch.notes
        )
        fact_state = batch.state or d.state or "pending"
        if fact_state == "pending":  # pending-opens-nothing
            proposed, whitelist = list(dict.fromkeys([*proposed, *whitelist])), []
        covers = None
        version = d.version
        if d.version == "cover" and d.covers is not None and 0 <= d.covers < len(batch.drafts) and d.covers != i:
            covers = batch.ids[d.covers]
        if i in batch.retold:  # cover-is-not-truth: the owner telling a known cover story
            story = batch.retold[i]
            version, covers, batch.events[i] = "cover", story.covers, story.event_id
            level = 0
            whitelist = [] if never else [p for p in present(session) if p in batch.lists and p not in blacklist]
            c = Clamped(c.category, level, c.domain, c.notes)
            batch.notes.append(f"{fid}: retells cover {story.id}: only the people told it may hear it")
        # awaiting the model's annotation (``state`` forced pending): whether it is a secret is
        # not known yet, so nobody hears it back until the model (or the owner) has read it
        # a cover story is never told back as heard, not even to those the owner told it to as
        # news: one of them who may know the truth would then hold the story and the truth of
        # one matter, which the composite rule keeps apart (measured: storylines-v2, Lekha)
        shut = (
            never
            or version == "cover"
            or batch.state == "pending"
            or holds_secret(d.text)
            or describes_a_telling(session, d.source_turns, d.text)
        )
        heard_by = self._heard_by(session, d, shut, blacklist)
        closed = not self.open_by_category
        if closed:
            shared = bool(d.source_turns) and batch.per_turn[d.source_turns[0]] > 1
            whitelist, proposed, closed = closed_audience(
                d.evidence, whitelist, proposed, batch.heard, cover=version == "cover" or shared
            )
        return Fact(
            id=fid,
            text=d.text.strip(),
            event_id=batch.events[i],
            session_id=session.id,
            version=version,
            covers=covers,
            category=c.category,
            level=c.level,
            domain=c.domain,
            whitelist=whitelist,
            blacklist=blacklist,
            valid_from=session.start,
            state=fact_state,  # type: ignore[arg-type]
            source_turns=[source_ref(session.id, t) for t in d.source_turns if 0 <= t < len(session.turns)],
            confidence=d.confidence,
            evidence=list(d.evidence),
            proposed_whitelist=proposed,
            closed=closed,
            stated_by=stated_by(session, d.source_turns),
            heard_by=heard_by,
            heard_in=heard_label(session) if heard_by else None,
            context=asked_before(session, d.source_turns),
        )

    def _heard_by(self, session: Session, d: Draft, shut: bool, blacklist: Sequence[str]) -> list[str]:
        """The contacts who heard it said, less anyone a blacklist (a cue naming them) shuts
        out; nobody for a never-share fact, a cover story or a secret such as a door code (``shut``)."""
        if shut:
            return []
        denied = {m for b in blacklist for m in self.policy.groups.get(b, [b])}
        to_everyone = said_to_everyone(session, d.source_turns, d.evidence, self.names, self.policy.owner.name)
        heard = listeners(session, d.source_turns, to_everyone=to_everyone)
        return [p for p in heard if p in self.policy.contacts and p not in denied]

    def _covers_most_like(self, drafts: list[Draft]) -> list[Draft]:
        """A cover whose truth the conversation did not name (``Draft.truths``) stands in for the
        earlier truth it is most like, by the embedder's cosine (the latest on a tie): "if anyone
        asks, say we close for renovation in July" is the story for "we are moving the shop in
        June", said three messages before, not for "he is friends with the owner across the
        road", said last. The vectors are the ones the import embeds the texts with anyway."""
        if self.memory is None:
            return drafts
        out = list(drafts)
        for i, d in enumerate(drafts):
            truths = [k for k in d.truths if 0 <= k < len(drafts) and k != i]
            if d.version != "cover" or len(truths) < 2:
                continue
            texts = [self.memory.normalize(x) for x in [d.text, *(drafts[k].text for k in truths)]]
            vectors = embed(self.memory.embedder, texts)  # unit rows (Embedder): dot is cosine
            likeness = vectors[1:] @ vectors[0]
            best = max(range(len(truths)), key=lambda j: (round(float(likeness[j]), 6), truths[j]))
            out[i] = replace(d, covers=truths[best])
        return out

    async def _retold_covers(
        self, session: Session, drafts: Sequence[Draft], near: FindsSimilar | None = None
    ) -> dict[int, Fact]:
        """Truth drafts that say what a cover already in memory says: the owner telling the
        cover story to someone. They become covers of the same truth (never a public truth)."""
        if self.memory is None or not drafts:
            return {}
        truths = [i for i, d in enumerate(drafts) if d.version == "truth"]
        if not truths:
            return {}
        rows = await (near or self.memory).similar([drafts[i].text for i in truths], limit=5)
        out: dict[int, Fact] = {}
        for i, row in zip(truths, rows):
            stories = [
                (f, score)
                for f, score in row
                if f.version == "cover" and f.covers and score >= self.retold_similarity and f.session_id != session.id
            ]
            story = _best(stories)
            if story is not None:
                out[i] = story
        return out

    def _heard(
        self,
        fid: str,
        entries: Sequence[str],
        blacklist: list[str],
        never: bool,
        heard: set[str],
        named: set[str],
        lists: set[str],
        notes: list[str],
    ) -> list[str]:
        """whitelist-heard: entries for people present or named by the owner; never on never-share."""
        out: list[str] = []
        for w in dict.fromkeys(entries):
            if w not in lists or w in blacklist:
                continue
            members = set(self.policy.groups.get(w, [w]))
            if never:
                notes.append(f"{fid}: whitelist {w} dropped: never-share category")
            elif members <= heard or w in named:
                out.append(w)
            else:
                notes.append(f"{fid}: whitelist {w} dropped: not present and not named by the owner")
        return out

    async def _events(
        self, session: Session, drafts: Sequence[Draft], known: set[str], near: FindsSimilar | None = None
    ) -> list[str]:
        """Event ids: a backend's id when it names a known event; else a similar fact's event
        in memory (same category, near-identical wording); else a new id. Covers follow
        their truth."""
        out: list[str | None] = [None] * len(drafts)
        linked = await self._similar_events(drafts, near)
        for i, d in enumerate(drafts):
            if d.version == "cover" and d.covers is not None:
                continue
            if d.event_id and _slug(d.event_id) and (d.event_id in known or not linked[i]):
                out[i] = d.event_id if d.event_id in known else f"{session.id}-{_slug(d.event_id)}"
            else:
                out[i] = linked[i] or f"{session.id}-e{i + 1}"
        for i, d in enumerate(drafts):
            if out[i] is None:
                j = d.covers if d.covers is not None and 0 <= d.covers < len(drafts) else None
                out[i] = out[j] if j is not None and out[j] is not None else f"{session.id}-e{i + 1}"
        # the same words said twice in one conversation are one event (else a later telling
        # links to whichever copy the store happens to rank first: not reproducible)
        first: dict[str, str] = {}
        for i, d in enumerate(drafts):
            if d.version == "truth":
                said = " ".join(d.text.casefold().split())
                out[i] = first.setdefault(said, out[i] or f"{session.id}-e{i + 1}")
        return [e or f"{session.id}-e{i + 1}" for i, e in enumerate(out)]

    async def _similar_events(self, drafts: Sequence[Draft], near: FindsSimilar | None = None) -> list[str | None]:
        if self.memory is None or not drafts:
            return [None] * len(drafts)
        hits = await (near or self.memory).similar([d.text for d in drafts], limit=8)
        out: list[str | None] = []
        for d, row in zip(drafts, hits):
            best = _best(
                [
                    (f, score)
                    for f, score in row
                    if score >= self.link_similarity and (d.category is None or f.category == d.category)
                ]
            )
            out.append(best.event_id if best is not None else None)
        return out


#: the evidence a widening cue in the owner's own words leaves on the facts it opens
#: (epmem/ingest/cues.py ``Cue.evidence``); ``everyone``: "you can tell anyone".
OWNER_OPENED = "cue:also:"
OPENED_TO_EVERYONE = "everyone"
PRESENT = "present"


def closed_audience(
    evidence: Sequence[str],
    whitelist: Sequence[str],
    proposed: Sequence[str],
    heard: Collection[str] = (),
    *,
    cover: bool = False,
) -> tuple[list[str], list[str], bool]:
    """Closed until the owner says: of a fact's whitelist only the people the owner's own
    words named stay ("Owen can know", "tell the team"); everyone else the rules would let in
    (whoever heard it, whom a bare "between us" let in) is only offered to the owner; "only you
    and Owen know" names the people who heard it (``heard``) as well as Owen. The owner's
    "you can tell anyone" opens the fact to its category's audience. A cover keeps nobody: the
    owner's "only Jess and Claire know" in the message that sets it names who knows the truth,
    and the people in on the truth are not in on every story told to others; nor does a fact
    that shares its message with others (the caller passes ``cover`` for both): which of them
    the words open is a guess. Returns the whitelist, the suggestion and whether the fact stays
    closed."""
    named = set() if cover else {e[len(OWNER_OPENED) :] for e in evidence if e.startswith(OWNER_OPENED)}
    if OPENED_TO_EVERYONE in named:
        return list(whitelist), list(proposed), False
    if PRESENT in named:
        named |= set(heard)
    keep = [w for w in whitelist if w in named]
    offered = list(dict.fromkeys([*proposed, *(w for w in whitelist if w not in keep)]))
    return keep, offered, True


def _best(hits: Sequence[tuple[Fact, float]]) -> Fact | None:
    """The closest hit; equally close ones (the same words in several sessions) by fact id, so
    the choice does not depend on how the store happens to order ties (an import resumed in a
    new process must link exactly as an uninterrupted one)."""
    if not hits:
        return None
    return min(hits, key=lambda hit: (-round(hit[1], 6), hit[0].id))[0]
