"""The owner's F2 facts in the vector store, and recall of the events a question is about.

Recall is deliberately privacy-blind: it finds what is *relevant*, and adjudication decides
later what is *allowed*. Keeping the two apart means a relevance threshold can never depend on
a hidden fact, which is what keeps a deflection the same whether or not a secret exists.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from epmem.embedding.base import Embedder, Vectors, readings
from epmem.embedding.once import embed
from epmem.embedding.sparse import Bm25Encoder
from epmem.language.english import is_catch_up
from epmem.memory.facts import Fact
from epmem.store.base import OWNER_FIELD, Hit, PointIn, VectorStore

FACTS = "facts"
#: every fact again, read by the multilingual model alone (an embedder's ``across``, where it
#: has one): what a question in another language than English is searched against. Vectors
#: and the fields recall reads, never the text.
ACROSS = "facts-across"
#: what recall reads of a candidate fact (the whole fact is read later, per recalled event).
_HIT_FIELDS = ("event_id", "category", "session_id")


@dataclass(frozen=True, slots=True)
class RecallConfig:
    #: how many facts the store returns before grouping into events.
    candidates: int = 48
    #: a fact whose relevance is below this is not about the question. The relevance step
    #: (epmem/reply/relevance/) says a fact this far only when the cross-encoder is sure it
    #: answers (its ``rescue_recall``, the same threshold: keep them together); the rest of
    #: what recall finds must reach its ``min_recall``.
    min_relevance: float = 0.2
    #: weight of the question's similarity to the fact's category (name, description, keywords).
    category_weight: float = 1.0
    #: weight of the native score (0..1) of the session a fact came from, added to its event's
    #: rank (never to the relevance threshold): the session retrieval of epmem.memory.retrieval.
    session_weight: float = 0.2


class SessionScorer(Protocol):
    async def session_scores(self, question: str, dense: np.ndarray | None = None) -> dict[str, float]:
        """Native score in [0, 1] per session id (a group sub-session's origin id included);
        ``dense`` is the question's vector when the caller has it (one embedding per recall)."""
        ...


@dataclass(frozen=True, slots=True)
class Recalled:
    fact: Fact
    score: float


@dataclass(frozen=True, slots=True)
class RecalledEvent:
    event_id: str
    score: float
    facts: tuple[Recalled, ...]


class SubjectNormalizer:
    """Removes the owner's own name before embedding.

    Every memory is about the owner, so the owner's name carries no information about which
    memory a question means; left in, it pulls every fact towards every question that names
    the owner and flattens the similarity scores the relevance threshold depends on.
    """

    def __init__(self, owner_names: Iterable[str]) -> None:
        words = sorted({w for name in owner_names for w in name.split() if len(w) > 1}, key=len, reverse=True)
        self._pattern = (
            re.compile(r"\b(?:" + "|".join(map(re.escape, words)) + r")(?:'s|’s)?\b", re.IGNORECASE) if words else None
        )

    def __call__(self, text: str) -> str:
        if self._pattern is None:
            return text
        return re.sub(r"\s+", " ", self._pattern.sub("they", text)).strip()


class FactObserver(Protocol):
    """Told of every change to the stored facts (the audit page's fact register listens)."""

    async def facts_changed(self, upserted: Sequence[Fact], removed: Sequence[str], cleared: bool) -> None: ...


class FactMemory:
    """F2 facts with their annotations, stored as payloads next to dense and BM25 vectors."""

    def __init__(
        self,
        store: VectorStore,
        embedder: Embedder,
        normalizer: SubjectNormalizer,
        config: RecallConfig | None = None,
        categories: dict[str, str] | None = None,
        sessions: SessionScorer | None = None,
        observers: Sequence[FactObserver] = (),
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.normalize = normalizer
        self.config = config or RecallConfig()
        self.sparse = Bm25Encoder()
        #: session retrieval (epmem.memory.retrieval.Retriever): a relevant session ranks its facts up.
        self.sessions = sessions
        #: told after each change has been stored (epmem.audit.register.FactRegister).
        self.observers: list[FactObserver] = list(observers)
        #: bumped when a write through this memory begins and when it ends; with ``_writing`` (writes
        #: in flight) it tells a caller whether the facts can have changed since it last asked
        #: (:class:`epmem.memory.nearest.NearestOnce`).
        self._generation = 0
        self._writing = 0
        names = sorted(categories or {})
        self._category_index = {name: i for i, name in enumerate(names)}
        #: the multilingual reading of every fact (:data:`ACROSS`), where the embedder has one.
        self._across: Callable[[list[str]], Vectors] | None = getattr(embedder, "across", None)
        self._reads_across: Callable[[str], bool] = getattr(embedder, "reads_across", lambda _q: False)
        self._category_vectors = (
            embedder.embed([(categories or {})[n] for n in names]) if names else np.zeros((0, embedder.dim))
        )

    async def open(self) -> FactMemory:
        await self.store.ensure_collection(FACTS, self.embedder.dim, self.embedder.name)
        if self._across is not None:
            name = str(getattr(self.embedder, "across_name", "across"))
            await self.store.ensure_collection(ACROSS, int(getattr(self.embedder, "across_dim", 0)), name)
            await self._fill_across()
        return self

    async def _fill_across(self) -> None:
        """A memory stored before :data:`ACROSS` existed (or left short by a crash between the
        two writes) gets the facts it lacks there, once, at open."""
        have = await self.store.count(ACROSS)
        if have == await self.count():
            return
        if have:
            await self.store.delete_where(ACROSS, {OWNER_FIELD: self.store.owner_id})
        points = self._across_points(await self.all())
        if points:
            await self.store.upsert(ACROSS, points)

    def _across_points(self, facts: Sequence[Fact]) -> list[PointIn]:
        if self._across is None or not facts:
            return []
        vectors = self._across([self._read(f) for f in facts])
        return [
            PointIn(key=f.id, payload={k: getattr(f, k) for k in _HIT_FIELDS}, dense=vectors[i])
            for i, f in enumerate(facts)
        ]

    def _read(self, fact: Fact) -> str:
        """What a fact is found by: its words, after the question it answers where it has one
        (:attr:`Fact.context`: "Base goes from 92k to 118k." is about pay, which only its
        question says)."""
        return self.normalize(fact.found_by)

    def _points(self, facts: Sequence[Fact]) -> list[PointIn]:
        texts = [self._read(f) for f in facts]
        vectors = embed(self.embedder, texts)
        return [
            PointIn(
                key=f.id,
                payload={**f.model_dump(mode="json"), "event_id": f.event_id},
                dense=vectors[i],
                sparse=self.sparse.document(texts[i]),
            )
            for i, f in enumerate(facts)
        ]

    @property
    def generation(self) -> int | None:
        """Which state of the facts a read now sees: equal numbers mean no write through this
        memory began or ended in between; None while one is under way."""
        return None if self._writing else self._generation

    @contextmanager
    def _write(self) -> Iterator[None]:
        self._generation += 1
        self._writing += 1
        try:
            yield
        finally:
            self._writing -= 1
            self._generation += 1

    async def _changed(self, upserted: Sequence[Fact] = (), removed: Sequence[str] = (), cleared: bool = False) -> None:
        for observer in self.observers:
            await observer.facts_changed(upserted, removed, cleared)

    async def add(self, facts: Sequence[Fact]) -> None:
        if facts:
            with self._write():
                await self.store.upsert(FACTS, self._points(facts))
                if self._across is not None:
                    await self.store.upsert(ACROSS, self._across_points(facts))
            await self._changed(upserted=facts)

    async def replace_all(self, facts: Sequence[Fact]) -> None:
        """Embed first, then swap: a failure while embedding leaves the old memory intact."""
        points, across = self._points(facts), self._across_points(facts)
        with self._write():
            await self.clear()
            await self.store.upsert(FACTS, points)
            if across:
                await self.store.upsert(ACROSS, across)
        await self._changed(upserted=facts)

    async def update(self, facts: Sequence[Fact]) -> None:
        """Annotations live in the payload; re-embedding keeps the seam to plain upserts."""
        await self.add(facts)

    async def get(self, fact_id: str) -> Fact | None:
        hits = await self.store.retrieve(FACTS, [fact_id])
        return _fact(hits[0]) if hits else None

    async def all(self) -> list[Fact]:
        facts = [_fact(h) for h in await self.store.scroll(FACTS)]
        return sorted(facts, key=lambda f: _natural(f.id))

    async def by_event(self, event_ids: Sequence[str]) -> list[Fact]:
        if not event_ids:
            return []
        return [_fact(h) for h in await self.store.scroll(FACTS, {"event_id": list(event_ids)})]

    async def of_session(self, session_id: str) -> list[Fact]:
        """Every stored fact distilled from one session."""
        return [_fact(h) for h in await self.store.scroll(FACTS, {"session_id": session_id})]

    async def similar(self, texts: Sequence[str], limit: int = 5) -> list[list[tuple[Fact, float]]]:
        """Nearest stored facts for each text (dense similarity only): event linking at ingest,
        and the post-check's denied neighbours of a question at reply time.

        Equal scores (the same words stored from several sessions) are ordered by fact id, and
        which of them make the cut too: the store is asked for one more than ``limit``, and
        again for more while the last hit still ties the ``limit``-th. So the answer is the
        first ``limit`` facts by (score, id), whatever order the store lists equals in (it
        differs between processes), and a shorter answer is the start of a longer one."""
        if not texts or await self.count() == 0:
            return [[] for _ in texts]
        vectors = embed(self.embedder, [self.normalize(t) for t in texts])
        wanted = limit + 1
        rows = await self.store.query_dense_many(FACTS, list(vectors), wanted)
        out: list[list[tuple[Fact, float]]] = []
        for vector, hits in zip(vectors, rows):
            asked = wanted
            while limit > 0 and len(hits) == asked and hits[-1].score >= hits[limit - 1].score:
                asked *= 4
                hits = (await self.store.query_dense_many(FACTS, [vector], asked))[0]
            ranked = sorted(hits, key=lambda h: (-h.score, h.key))[:limit]
            out.append([(_fact(h), float(h.score)) for h in ranked])
        return out

    async def forget(self, fact_ids: Sequence[str]) -> None:
        with self._write():
            await self.store.delete(FACTS, list(fact_ids))
            if self._across is not None:
                await self.store.delete(ACROSS, list(fact_ids))
            await self.store.compact()
        await self._changed(removed=fact_ids)

    async def clear(self) -> None:
        with self._write():
            await self.store.delete_where(FACTS, {OWNER_FIELD: self.store.owner_id})
            if self._across is not None:
                await self.store.delete_where(ACROSS, {OWNER_FIELD: self.store.owner_id})
            await self.store.compact()
        await self._changed(cleared=True)

    async def count(self) -> int:
        return await self.store.count(FACTS)

    def _category_scores(self, query: np.ndarray) -> dict[str, float]:
        scores = self._category_vectors @ query if len(self._category_index) else np.zeros(0)
        return {name: float(scores[i]) for name, i in self._category_index.items()}

    async def _query_each(self, vectors: Vectors) -> list[Hit]:
        """The nearest facts to any of ``vectors`` (a question read by each model that reads
        it), each with its best score, best first."""
        if len(vectors) == 1:
            return await self.store.query_dense(FACTS, vectors[0], self.config.candidates, fields=_HIT_FIELDS)
        rows = [await self.store.query_dense(FACTS, v, self.config.candidates, fields=_HIT_FIELDS) for v in vectors]
        return _best_of(*rows)[: self.config.candidates]

    async def _query_across(self, question: str) -> list[Hit]:
        """The nearest facts to ``question`` read by the multilingual model (:data:`ACROSS`)."""
        assert self._across is not None
        vector = self._across([self.normalize(question)])[0]
        hits = await self.store.query_dense(ACROSS, vector, self.config.candidates, fields=_HIT_FIELDS)
        # the same least similarity as for the English model, on this model's lifted scale
        lift = float(getattr(self.embedder, "cjk_lift", 0.0))
        least = self.config.min_relevance + lift * (1 - self.config.min_relevance)
        return [h for h in hits if h.score >= least]

    async def _theirs(self, query: Vectors, asker: str) -> list[Hit]:
        """The facts ``asker`` heard said or said themselves, nearest to ``query`` first."""
        rows = [
            await self.store.query_dense(FACTS, query, self.config.candidates, {field: [asker]}, _HIT_FIELDS)
            for field in ("heard_by", "stated_by")
        ]
        return _best_of(*rows)

    async def recall(self, question: str, asker: str | None = None) -> list[RecalledEvent]:
        """Events whose facts are about the question, best first, each with all its facts
        (so a cover is at hand when its truth is what the question matched).

        A fact's relevance is its similarity to the question plus the question's similarity to
        the fact's category: "did she get any money from work?" shares no word with "she
        received a retention bonus", but it is plainly a finances question.

        ``asker``: the question points back to an earlier chat with this contact ("re the thing
        we talked about, when do we get the keys?"). The thing is one of those they heard said or
        said themselves, so only those are recalled, the nearest named for sure (its score lifted
        to 1) and the others at their distance below it; the relevance step then weighs them as
        any other. When they heard and said nothing stored, the words alone are read.
        """
        asked = readings(self.embedder, self.normalize(question))
        query = asked[0]
        earlier = await self._theirs(query, asker) if asker else []
        if earlier:
            lift = 1.0 - earlier[0].score
            hits = [Hit(h.key, h.payload, h.score + lift) for h in earlier]
        else:
            hits = await self._query_each(asked)
            if self._across is not None and self._reads_across(question):
                hits = _best_of(hits, await self._query_across(question))
        by_category = {k: max(v) for k, v in _columns([self._category_scores(q) for q in asked]).items()}
        weight = 0.0 if earlier else self.config.category_weight
        scores = {h.key: h.score + weight * by_category.get(str(h.payload.get("category")), 0.0) for h in hits}
        floor = float("-inf") if is_catch_up(question) or earlier else self.config.min_relevance
        prior: dict[str, float] = {}
        wanted = self.sessions is not None and self.config.session_weight > 0
        if wanted and self.sessions is not None and any(v >= floor for v in scores.values()):
            prior = await self.sessions.session_scores(question, query)
        best: dict[str, float] = {}
        for h in hits:
            if scores[h.key] >= floor:
                event = str(h.payload["event_id"])
                boost = self.config.session_weight * prior.get(str(h.payload.get("session_id")), 0.0)
                best[event] = max(best.get(event, 0.0), scores[h.key] + boost)
        if not best:
            return []
        members: dict[str, list[Recalled]] = {e: [] for e in best}
        for fact in await self.by_event(list(best)):
            members[fact.event_id].append(Recalled(fact, scores.get(fact.id, 0.0)))
        events = [RecalledEvent(e, best[e], tuple(sorted(members[e], key=lambda r: -r.score))) for e in best]
        return sorted(events, key=lambda ev: (-ev.score, ev.event_id))


def together(*recalls: Sequence[RecalledEvent]) -> list[RecalledEvent]:
    """Several recalls as one (the questions of one message): each event once, each fact with
    its best score over them, best first."""
    score: dict[str, float] = {}
    facts: dict[str, dict[str, Recalled]] = {}
    for events in recalls:
        for ev in events:
            score[ev.event_id] = max(score.get(ev.event_id, ev.score), ev.score)
            mine = facts.setdefault(ev.event_id, {})
            for r in ev.facts:
                if r.fact.id not in mine or r.score > mine[r.fact.id].score:
                    mine[r.fact.id] = r
    events = [RecalledEvent(e, score[e], tuple(sorted(facts[e].values(), key=lambda r: -r.score))) for e in score]
    return sorted(events, key=lambda ev: (-ev.score, ev.event_id))


def _best_of(*rows: Sequence[Hit]) -> list[Hit]:
    """Each fact once, with its best score over ``rows``, best first."""
    best: dict[str, Hit] = {}
    for row in rows:
        for h in row:
            if h.key not in best or h.score > best[h.key].score:
                best[h.key] = h
    return sorted(best.values(), key=lambda h: (-h.score, h.key))


def _columns(rows: Sequence[dict[str, float]]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for row in rows:
        for k, v in row.items():
            out.setdefault(k, []).append(v)
    return out


def _fact(hit: Hit) -> Fact:
    payload = {k: v for k, v in hit.payload.items() if k in Fact.model_fields}
    return Fact.model_validate(payload)


def _natural(key: str) -> tuple[object, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", key))
