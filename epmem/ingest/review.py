"""The owner in the loop: a review queue of the facts the delegate is unsure of.

Ingest fails closed: a fact it cannot annotate on clear evidence is stored ``pending`` (level 0,
nobody hears it) with a suggestion. This module turns those facts into questions for the owner,
applies the answers, and learns from them. It is platform-free: bot/ renders the questions as a
Telegram inline keyboard, Slack buttons or console lines, and the scenario benchmark's oracle
owner answers them from gold annotations.

Contract
--------
``queue = ReviewQueue(policy, memory, examples)``
    ``examples`` is the :class:`~epmem.ingest.examples.ExampleBank` the classifier reads (share
    the same object with the distiller's classifier so answers teach it at once); ``None``
    disables learning. ``queue.policy`` is always the current one: give it the runtime's policy holder.
``await queue.waiting() -> int``
    How many facts wait for the owner (the daily digest says this number).
``await queue.next_batch(limit=None) -> list[Question]``
    The next questions, one per event (epmem/ingest/review_rank.py: the facts of one message
    and the same news found again in other chats are asked about together, and the answer
    applies to all of them), the events with most at stake first (:func:`~epmem.ingest.review_rank.stakes`:
    a private topic, someone else's matter, an audience read from a cue), then the ones whose
    suggestion would let the most people know, then the least confident. An event with nothing
    worth asking (keyword-filed, mundane, never shared, fragments) is not asked about.
    ``limit`` defaults to ``ReviewConfig.batch`` (small: one screen). Events skipped in this
    queue's lifetime come last. An empty list means nothing waits.
``await queue.budget() -> int``
    How many questions the delegate asks unprompted after an import: ``ReviewConfig.share`` of
    the events in memory, and never more than there are events worth asking about; the
    owner's /review asks on.
``await queue.question(fact_id) -> Question``
    One fact as a question (to redraw a keyboard, or to review a fact the owner names).
    Any fact may be reviewed, pending or not; :class:`ReviewError` if there is no such fact.
``await queue.apply(answer) -> Applied``
    Applies at once: the fact becomes ``owner-set`` with the chosen annotation. Returns the
    updated facts, the body for the audit record (``audit.append("policy_change", applied.audit,
    contact="owner")``, the caller appends it: only bot/ knows who answered and where) and a
    one-line confirmation for the owner. The answer becomes a labelled example. Facts that say
    the same thing in other sessions (``Question.also``) get the same annotation: the owner
    answered about the information, not about one copy of it. :class:`ReviewError` (a
    one-line message) for an unknown fact, category or contact, or a whitelist on a
    never-share category; nothing is changed then. Checking that the answer comes from the
    owner is the caller's job. The answer applies to the fact and to ``Question.also`` (the
    other facts of its event, shown in the question); each one's annotation before the answer
    is in the audit body (``also_from``). An owner's earlier answer is never overwritten.
``await queue.relearn() -> list[Fact]``
    Re-annotates the facts still pending with what the answers taught (nearest confirmed
    examples first); returns the facts that left the queue. Call it after each batch.

The questions and answers (:class:`Question`, :class:`ReviewAnswer`) are in
:mod:`epmem.ingest.review_answers`.

Only ``owner-set`` loosens a fact beyond its category (docs/DESIGN.md sec. 6): an answer is the owner's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from epmem.ingest.annotate import CategoryClassifier, ContactNames
from epmem.ingest.examples import ExampleBank, Label
from epmem.ingest.review_answers import (
    AnswerKind,
    Applied,
    Option,
    OptionKind,
    Question,
    ReviewAnswer,
    ReviewChoice,
    ReviewConfig,
    ReviewError,
)
from epmem.ingest.review_rank import conversations, counted, events, open_members, stakes
from epmem.memory.facts import Fact
from epmem.memory.recall import FactMemory
from epmem.policy.calculus import STRANGER, Rulebook
from epmem.policy.holder import PolicyHolder
from epmem.policy.model import Policy

__all__ = [
    "AnswerKind",
    "Applied",
    "Option",
    "OptionKind",
    "Question",
    "ReviewAnswer",
    "ReviewChoice",
    "ReviewConfig",
    "ReviewError",
    "ReviewQueue",
]


def _group_of(facts: Sequence[Fact]) -> dict[str, list[Fact]]:
    """Each fact's event group (:func:`~epmem.ingest.review_rank.events`), by fact id: the first
    group that holds the id, as a scan of the groups in order would find it."""
    out: dict[str, list[Fact]] = {}
    for g in events(facts):
        for x in g:
            out.setdefault(x.id, g)
    return out


def _annotation(f: Fact) -> dict[str, Any]:
    return {
        "category": f.category,
        "level": f.level,
        "domain": f.domain,
        "whitelist": list(f.whitelist),
        "blacklist": list(f.blacklist),
        "state": f.state,
    }


@dataclass
class ReviewQueue:
    #: the policy, or the holder of the current one (bot/runtime.py passes its holder).
    policies: Policy | PolicyHolder
    memory: FactMemory
    examples: ExampleBank | None = None
    config: ReviewConfig = field(default_factory=ReviewConfig)
    #: used by relearn(); built from the policy, the memory's embedder and the examples if None.
    classifier: CategoryClassifier | None = None
    _skipped: set[str] = field(default_factory=set)

    @property
    def policy(self) -> Policy:
        return PolicyHolder.of(self.policies).current

    # ------------------------------------------------------------------ questions

    async def waiting(self) -> int:
        """Facts the delegate would ask about (in the events worth asking; the digest's number).
        A question settles a whole event, so there are at most this many questions."""
        return sum(len(g) for g in self._askable(await self.memory.all()))

    def _askable(self, facts: Sequence[Fact]) -> list[list[Fact]]:
        """The events with something worth asking, each as its open facts."""
        policy = self.policy
        groups = [open_members(g) for g in events(facts)]
        return [g for g in groups if any(stakes(f, policy) > 0 for f in g)]

    async def next_batch(self, limit: int | None = None) -> list[Question]:
        limit = self.config.batch if limit is None else limit
        if limit <= 0:
            return []
        facts = await self.memory.all()
        policy, rulebook = self.policy, Rulebook(self.policy)
        exposure: dict[str, int] = {}

        def key(f: Fact) -> tuple[float, int, float, str]:
            if f.id not in exposure:
                exposure[f.id] = self._exposure(rulebook, self._suggested(f))
            return (-stakes(f, policy), -exposure[f.id], f.confidence if f.confidence is not None else 0.0, f.id)

        askable = self._askable(facts)
        heads = [min(g, key=key) for g in askable]
        skipped = {h.id for h, g in zip(heads, askable) if any(f.id in self._skipped for f in g)}
        ranked = sorted(heads, key=lambda h: (h.id in skipped, *key(h)))
        by_id = {f.id: f for f in facts}
        grouped = _group_of(list(by_id.values()))  # once per batch, not once per question
        chosen: list[Question] = []
        settled: set[str] = set()
        for f in ranked:
            if f.id in settled:
                continue
            q = await self._question(f, by_id, rulebook, grouped)
            settled.update([q.fact_id, *q.also])
            chosen.append(q)
            if len(chosen) >= limit:
                break
        return chosen

    async def budget(self) -> int:
        """How many questions are worth the owner's time unprompted: ``ReviewConfig.share`` of
        the events in memory (an answer settles an event; other people's passing remarks do not
        count, see :func:`~epmem.ingest.review_rank.counted`) and ``ReviewConfig.per_conversation``
        per conversation they came from, whichever is fewer, at most the events worth asking
        about (see :meth:`next_batch`)."""
        facts = await self.memory.all()
        wanted = min(
            self.config.share * len(counted(events(facts))), self.config.per_conversation * conversations(facts)
        )
        return min(int(wanted + 0.5), len(self._askable(facts)))

    async def question(self, fact_id: str) -> Question:
        facts = await self.memory.all()
        by_id = {f.id: f for f in facts}
        if fact_id not in by_id:
            raise ReviewError(f"no fact {fact_id!r}")
        return await self._question(by_id[fact_id], by_id, Rulebook(self.policy))

    def _suggested(self, f: Fact) -> ReviewChoice:
        cat = f.category if f.category in self.policy.categories else self.policy.default_category
        level = f.level if f.level is not None else self.policy.categories[cat].level
        white = f.proposed_whitelist if f.state == "pending" else f.whitelist
        if f.closed and f.state != "owner-set":  # closed: the whitelist is the owner's, the rest offered
            white = list(dict.fromkeys([*f.whitelist, *f.proposed_whitelist]))
        if f.stated_by is not None and f.state != "owner-set":
            # a contact's words never widen who may know ("you can tell everyone"): at most the
            # people who were there (the owner's own words are what widens)
            level = 0
        return ReviewChoice(cat, level, f.domain, tuple(white), tuple(f.blacklist))

    def _exposure(self, rulebook: Rulebook, choice: ReviewChoice) -> int:
        probe = Fact(
            id="probe",
            text="probe",
            event_id="probe",
            category=choice.category,
            level=choice.level,
            domain=choice.domain,
            whitelist=list(choice.whitelist),
            blacklist=list(choice.blacklist),
            state="annotated",
        )
        gate = rulebook.gate(probe)
        from epmem.policy.calculus import judge

        people = sum(1 for cid in self.policy.contacts if judge(gate, rulebook.recipient(cid)).allowed)
        return people + (self.config.stranger_weight if judge(gate, STRANGER).allowed else 0)

    async def _question(
        self, f: Fact, by_id: dict[str, Fact], rulebook: Rulebook, grouped: dict[str, list[Fact]] | None = None
    ) -> Question:
        suggested = self._suggested(f)
        alternatives = self._alternatives(f, suggested)
        others = await self._event_of(f, list(by_id.values()), grouped)
        also = tuple(x.id for x in others)
        options = [Option("ok", "accept", f"Yes: {suggested.describe()}", suggested)]
        options += [Option(f"c:{c.category}", "category", c.describe(), c) for c in alternatives]
        options += [
            Option("private", "private", "Keep private"),
            Option("who", "who", "Who may know…"),
            Option("skip", "skip", "Ask me later"),
        ]
        covers = by_id.get(f.covers) if f.covers else None
        return Question(
            fact_id=f.id,
            text=f.text,
            version=f.version,
            covers_text=covers.text if covers else None,
            state=f.state,
            suggested=suggested,
            confidence=f.confidence,
            reasons=tuple(f.evidence),
            alternatives=tuple(alternatives),
            people=self._people(f, suggested),
            exposure=self._exposure(rulebook, suggested),
            also=also,
            options=tuple(options),
            also_text=tuple(x.text for x in others),
            stakes=stakes(f, self.policy),
            stated_by=f.stated_by,
            also_stated_by=tuple(x.stated_by for x in others),
        )

    def _alternatives(self, f: Fact, suggested: ReviewChoice) -> list[ReviewChoice]:
        """Other categories worth a button: those the evidence names, then the nearest
        by level to the suggestion (stricter first)."""
        cats = self.policy.categories
        named = [e.split(":", 2)[1] for e in f.evidence if e.count(":") >= 1 and e.split(":", 2)[1] in cats]
        rest = sorted(cats, key=lambda n: (abs(cats[n].level - suggested.level), cats[n].level, n))
        out: list[ReviewChoice] = []
        for name in dict.fromkeys([*named, *rest]):
            if name == suggested.category or cats[name].never_share and name not in named:
                continue
            out.append(ReviewChoice(name, cats[name].level, cats[name].domain))
            if len(out) >= self.config.alternatives:
                break
        return out

    def _people(self, f: Fact, suggested: ReviewChoice) -> tuple[str, ...]:
        named = ContactNames(self.policy).find(f.text)
        contacts = sorted(self.policy.contacts, key=lambda c: (self.policy.contacts[c].level, c))
        order = [*suggested.whitelist, *suggested.blacklist, *named, *self.policy.groups, *contacts]
        return tuple(dict.fromkeys(order))

    async def _event_of(
        self, f: Fact, facts: Sequence[Fact], grouped: dict[str, list[Fact]] | None = None
    ) -> list[Fact]:
        """The other facts one answer about ``f`` settles, none set by the owner: the facts of
        its event and of its message (epmem/ingest/review_rank.py), and facts elsewhere that say
        nearly the same thing (``ReviewConfig.same_information``), each of ``f``'s version.
        ``grouped``: :func:`_group_of` of ``facts``, when the caller asks about several facts."""
        group = (grouped if grouped is not None else _group_of(facts)).get(f.id, [f])
        members = open_members(group)
        if f.state == "owner-set":
            members = [f, *members]
        texts = [x.text for x in members]
        rows = await self.memory.similar(texts, limit=8) if texts else []
        out = {x.id: x for x in members if x.id != f.id}
        for row in rows:
            for g, score in row:
                if (
                    g.id != f.id
                    and score >= self.config.same_information
                    and g.version == f.version
                    and g.state != "owner-set"
                ):
                    out.setdefault(g.id, g)
        return sorted(out.values(), key=lambda x: x.id)

    # ------------------------------------------------------------------ answers

    async def apply(self, answer: ReviewAnswer, tag: str | None = None) -> Applied:
        """``tag``: one more evidence line on every fact the answer sets (where the owner's word
        came from, e.g. ``owner:consult:tell``), written with the answer in one update."""
        fact = await self.memory.get(answer.fact_id)
        if fact is None:
            raise ReviewError(f"no fact {answer.fact_id!r}")
        if answer.kind == "skip":
            self._skipped.add(fact.id)
            return Applied(
                (fact,),
                {"action": "review", "fact": fact.id, "answer": "skip"},
                f"Skipped {fact.id}: I will ask again later.",
            )
        choice = self._resolve(fact, answer)
        also = await self._event_of(fact, await self.memory.all())
        closed = answer.kind == "private"
        updated = [self._set(g, choice, fact.id if g.id != fact.id else None, closed, tag) for g in [fact, *also]]
        linked: list[str] = []
        if answer.covers is not None:
            updated, linked = await self._as_cover(fact, answer.covers, updated, closed)
        await self.memory.update(updated)
        self._skipped.difference_update([fact.id, *(g.id for g in also)])
        if self.examples is not None:
            label = Label(choice.category, choice.level, choice.domain, choice.level == 0 and not choice.whitelist)
            self.examples.add(fact.id, fact.text, label)
        audit: dict[str, Any] = {
            "action": "review",
            "fact": fact.id,
            "answer": answer.kind,
            "from": _annotation(fact),
            "to": _annotation(updated[0]),
            "also": [g.id for g in also],
            "also_from": {g.id: _annotation(g) for g in also},
        }
        more = f" (and {len(also)} more fact{'s' * (len(also) != 1)} of the same event)" if also else ""
        story = ""
        if linked:
            audit["covers"] = answer.covers
            audit["cover_facts"] = linked
            # the events the cover story left (what readers were told of it is filed under them)
            audit["cover_left"] = sorted({g.event_id for g in [fact, *also] if g.id in linked})
            story = f" {', '.join(linked)} now your cover story for {answer.covers}: told to whoever may not know it."
            if fact.version == "cover" and fact.covers not in (None, answer.covers):
                audit["covered"] = fact.covers  # the extractor's (or an earlier) choice, corrected
                story += f" No longer the story for {fact.covers}."
        return Applied(tuple(updated), audit, f"{fact.id}{more}: {choice.describe()}, set by you.{story}")

    async def _as_cover(
        self, fact: Fact, truth_id: str, updated: list[Fact], closed: bool
    ) -> tuple[list[Fact], list[str]]:
        """``fact`` and the facts of its own event (not the rest of its message, which may say
        other things) become cover stories of ``truth_id``, in the truth's event."""
        truth = await self.memory.get(truth_id)
        if truth is None:
            raise ReviewError(f"no fact {truth_id!r} to be the cover story of")
        if closed:
            raise ReviewError("a cover story is for telling: keep private and cover do not go together")
        if truth.version != "truth" or truth.id == fact.id:
            raise ReviewError(f"{truth_id} is not a truth another fact can stand in for")
        # the facts of its event, and the same story stored again from another chat (nearly the
        # same words, settled by this answer too): a copy left outside would be told beside the
        # truth as unrelated news
        rows = await self.memory.similar([fact.text], limit=8)
        copies = {g.id for g, score in rows[0] if score >= self.config.same_information} if rows else set()
        linked = {fact.id} | {
            g.id for g in updated if g.version == fact.version and (g.event_id == fact.event_id or g.id in copies)
        }
        out = [
            g.model_copy(update={"version": "cover", "covers": truth.id, "event_id": truth.event_id})
            if g.id in linked
            else g
            for g in updated
        ]
        return out, sorted(linked)

    def _resolve(self, fact: Fact, answer: ReviewAnswer) -> ReviewChoice:
        suggested = self._suggested(fact)
        cats = self.policy.categories
        if answer.kind == "accept":
            choice = suggested
        elif answer.kind == "private":
            choice = ReviewChoice(suggested.category, 0, suggested.domain, (), suggested.blacklist)
        elif answer.kind in ("category", "set"):
            name = answer.category or ""
            if name not in cats:
                raise ReviewError(f"no category {name!r}; categories: {', '.join(cats)}")
            cat = cats[name]
            level = cat.level if answer.level is None else answer.level
            if not 0 <= level <= 4:
                raise ReviewError(f"level {level} is not 0-4")
            domain = answer.domain if answer.kind == "set" and answer.level is not None else cat.domain
            white = suggested.whitelist if answer.whitelist is None else answer.whitelist
            black = suggested.blacklist if answer.blacklist is None else answer.blacklist
            choice = ReviewChoice(name, level, domain, tuple(white), tuple(black))
        else:
            raise ReviewError(f"unknown review answer {answer.kind!r}")
        known = set(self.policy.contacts) | set(self.policy.groups)
        unknown = [w for w in (*choice.whitelist, *choice.blacklist) if w not in known]
        if unknown:
            raise ReviewError(f"no contact or group {', '.join(map(repr, unknown))}")
        if cats[choice.category].never_share:
            if answer.whitelist:
                raise ReviewError(f"{choice.category} is never shared: nobody can be whitelisted")
            choice = replace(choice, level=0, whitelist=())
        white = tuple(w for w in choice.whitelist if w not in choice.blacklist)
        return replace(choice, whitelist=white)

    @staticmethod
    def _set(fact: Fact, choice: ReviewChoice, via: str | None, closed: bool = False, tag: str | None = None) -> Fact:
        """The owner's answer: the fact is open to what the owner chose (``closed``: "keep
        private", which no category-wide exception opens either)."""
        evidence = [*fact.evidence, f"owner:review{' via ' + via if via else ''}", *([tag] if tag else [])]
        return fact.model_copy(
            update={
                "category": choice.category,
                "level": choice.level,
                "domain": choice.domain,
                "whitelist": list(choice.whitelist),
                "blacklist": list(choice.blacklist),
                "state": "owner-set",
                "confidence": None,
                "evidence": evidence,
                "proposed_whitelist": [],
                "closed": closed,
            }
        )

    # ------------------------------------------------------------------ learning

    async def relearn(self) -> list[Fact]:
        """Pending facts the examples now settle on clear evidence are annotated."""
        if self.examples is None or not len(self.examples):
            return []
        classifier = self.classifier or CategoryClassifier(self.policy, self.memory.embedder, examples=self.examples)
        waiting = [f for f in await self.memory.all() if f.state == "pending"]
        if not waiting:
            return []
        settled: list[Fact] = []
        for f, ann in zip(waiting, classifier.classify_many([f.text for f in waiting])):
            if ann.basis != "example" or not ann.clear:
                continue
            cued = any(e.startswith("cue:") for e in f.evidence) and f.level is not None
            level = min(ann.level, f.level) if cued and f.level is not None else ann.level
            settled.append(
                f.model_copy(
                    update={
                        "category": ann.category,
                        "level": level,
                        "domain": ann.domain,
                        "whitelist": list(f.proposed_whitelist),
                        "state": "annotated",
                        "confidence": ann.confidence,
                        "proposed_whitelist": [],
                        "evidence": [*f.evidence, *ann.evidence],
                    }
                )
            )
        if settled:
            await self.memory.update(settled)
        return settled
