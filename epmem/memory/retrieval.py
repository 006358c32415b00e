"""Which sessions (and turns) a question is about: native hybrid retrieval fused with the
event-fact score (docs/DESIGN.md sec. 5).

Native score of a session: the engine's weighted-RRF fusion of dense and BM25 over the session
points, plus the best of its turns from the same fusion over turn points (evidence usually sits
in one or two turns of a long session, which a whole-session vector dilutes). Event score: the
best similarity of the question to the session's F2 facts. Fused: ``alpha * native + beta *
event`` with both normalised by their maximum; ``beta = 0`` returns the native scores untouched,
so the native order is kept exactly. Turns are ranked by their own fused score plus a share of
their session's rank, so a turn that echoes the question inside the right session beats a
lookalike elsewhere; a question naming a speaker favours that speaker's turns; a question naming
a date ("in July 2022") favours sessions held then.

The dense query is the question with the speakers' names masked ("what does Lin do to relax?"
is embedded as "what does someone do to relax?"). A sentence embedder reads a name as topic and
ranks turns that merely mention Lin above the one about relaxing; BM25 and the speaker boost
still see the name. On LoCoMo the mask raised turn Recall@10 from 0.721 to 0.745.

Recall is privacy-blind, like FactMemory.recall: what may be said is decided afterwards.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np
import numpy.typing as npt

from epmem.memory.conversations import SESSIONS, TURNS, Conversations
from epmem.embedding.base import Embedder
from epmem.memory.recall import FACTS
from epmem.timeparse import question_window
from epmem.store.base import Hit, Hybrid, SparseVec, VectorStore, Where, rrf_score

Vector = npt.NDArray[np.float32]
_WORD = re.compile(r"\w+")
_POSSESSIVE = re.compile(r"['\u2019]s\b", re.IGNORECASE)
NAME_MASK = "someone"
#: what retrieval reads of a hit; the rest of the payload stays in the store.
TURN_FIELDS = ("session_id", "speaker_name", "msg_id", "speaker")
SESSION_FIELDS = ("start", "origin_id", "chat_id", "participants")


def mask_names(question: str, names: set[str]) -> str:
    """The question with every whole-word name in ``names`` (casefolded), and its possessive,
    replaced by "someone" (the possessive goes: "Lin's dog" -> "someone dog", as measured)."""
    if not names:
        return question
    out: list[str] = []
    last = 0
    for m in _WORD.finditer(question):
        if m.group(0).casefold() in names:
            out.append(question[last : m.start()])
            out.append(NAME_MASK)
            last = m.end()
            if p := _POSSESSIVE.match(question, last):
                last = p.end()
    out.append(question[last:])
    return "".join(out)


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    """Defaults measured on LoCoMo (benchmarks/locomo_bench.py, 1,536 questions, MiniLM).

    RRF is Qdrant's weighted form ``1 / ((rank + 1) / w + k - 1)``: a weight also stretches the
    rank, so with the usual k = 60 a heavier list becomes a *flatter* one. k = 3 keeps the top
    ranks decisive (turn Recall@10 0.56 at k = 60, 0.64 at k = 3, equal weights), and BM25
    weighs double: exact words (names, places) carry most of the evidence in chat. With all of
    the below and the name mask: session Recall@10 0.936, turn Recall@10 0.745 (plain BM25:
    0.884 / 0.510). Sweeps of the other weights (session vs turn, extra turns, date slack,
    candidate depth 50-200) moved session Recall@10 by less than 0.002; fusing z-scored dense
    and BM25 scores instead of ranks gained 0.002 in a simulation.
    """

    alpha: float = 1.0
    beta: float = 0.0
    rrf_k: int = 3
    turn_dense_weight: float = 1.0
    turn_sparse_weight: float = 2.0
    session_dense_weight: float = 1.0
    session_sparse_weight: float = 1.0
    #: candidates each of dense and BM25 contributes before fusion.
    prefetch: int = 50
    turn_limit: int = 50
    session_limit: int = 100
    #: weight of a session's own hybrid score against its best turn.
    session_weight: float = 1.0
    #: weight of a session's second and third best turns (lists of things span turns).
    extra_turns: float = 0.5
    #: how much of its session's rank a turn inherits.
    turn_session_prior: float = 1.0
    #: boost for sessions inside a date the question names (and ``date_slack_days`` after it,
    #: since people tell of a thing some days later).
    date_weight: float = 2.0
    date_slack_days: int = 30
    #: a turn whose speaker the question names ("what did Lin say...") gains this share.
    speaker_boost: float = 1.0
    fact_limit: int = 48

    def __post_init__(self) -> None:
        if self.alpha < 0 or self.beta < 0 or abs(self.alpha + self.beta - 1.0) > 1e-9:
            raise ValueError(f"alpha and beta must be >= 0 and sum to 1 (got {self.alpha}, {self.beta})")


@dataclass(frozen=True, slots=True)
class ScoredSession:
    session_id: str
    score: float
    native: float
    event: float
    payload: dict[str, object] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, slots=True)
class ScoredTurn:
    turn_id: str
    session_id: str
    score: float
    payload: dict[str, object] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, slots=True)
class Retrieved:
    sessions: list[ScoredSession]
    turns: list[ScoredTurn]


def fuse(native: dict[str, float], event: dict[str, float], alpha: float, beta: float) -> dict[str, float]:
    """s = alpha * s_native + beta * s_event, each scaled to [0, 1] by its maximum.

    With beta = 0 (so alpha = 1) the native scores come back untouched: rescaling would be
    monotone in exact arithmetic, but not for denormal floats, and the promise is exactness.
    """
    if beta == 0:
        return dict(native)
    top_n = max(native.values(), default=0.0) or 1.0
    top_e = max(event.values(), default=0.0) or 1.0
    keys = set(native) | (set(event) if beta > 0 else set())
    return {k: alpha * native.get(k, 0.0) / top_n + beta * max(event.get(k, 0.0), 0.0) / top_e for k in keys}


def rank(scores: dict[str, float]) -> list[str]:
    """Best first; ties broken by id so the order is reproducible."""
    return sorted(scores, key=lambda k: (-scores[k], k))


class Retriever:
    def __init__(
        self,
        store: VectorStore,
        embedder: Embedder,
        conversations: Conversations,
        config: RetrievalConfig | None = None,
        facts: bool = True,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.conversations = conversations
        self.config = config or RetrievalConfig()
        self.use_facts = facts

    def _hybrid(
        self, dense: Vector, sparse: SparseVec, limit: int, weights: tuple[float, float], fields: tuple[str, ...]
    ) -> Hybrid:
        c = self.config
        return Hybrid(
            dense,
            sparse,
            limit=limit,
            prefetch=c.prefetch,
            dense_weight=weights[0],
            sparse_weight=weights[1],
            rrf_k=c.rrf_k,
            fields=fields,
        )

    def query_text(self, question: str) -> str:
        """What the dense half embeds: the question with the speakers' names masked."""
        return mask_names(question, self.conversations.speaker_names)

    def embed(self, question: str) -> Vector:
        vector: Vector = self.embed_many([question])[0]
        return vector

    def embed_many(self, questions: list[str]) -> npt.NDArray[np.float32]:
        return self.embedder.embed([self.query_text(q) for q in questions])

    async def native(
        self, question: str, where: Where | None = None, dense: Vector | None = None
    ) -> tuple[dict[str, float], list[Hit], dict[str, Hit]]:
        """Native session scores, the fused turn hits, and the session hits by id."""
        c = self.config
        dense = self.embed(question) if dense is None else dense
        turn_sparse, session_sparse = self.conversations.query_sparse(question)
        turns = await self.store.query_hybrid(
            TURNS,
            self._hybrid(dense, turn_sparse, c.turn_limit, (c.turn_dense_weight, c.turn_sparse_weight), TURN_FIELDS),
            where,
        )
        sessions = await self.store.query_hybrid(
            SESSIONS,
            self._hybrid(
                dense,
                session_sparse,
                c.session_limit,
                (c.session_dense_weight, c.session_sparse_weight),
                SESSION_FIELDS,
            ),
            where,
        )
        by_session: dict[str, list[float]] = {}
        for h in turns:
            by_session.setdefault(str(h.payload["session_id"]), []).append(h.score)
        scores: dict[str, float] = {}
        for sid, values in by_session.items():
            values.sort(reverse=True)
            scores[sid] = values[0] + c.extra_turns * sum(values[1:3])
        for h in sessions:
            scores[h.key] = scores.get(h.key, 0.0) + c.session_weight * h.score
        self._date_boost(question, scores, sessions)
        return scores, turns, {h.key: h for h in sessions}

    def _date_boost(self, question: str, scores: dict[str, float], sessions: list[Hit]) -> None:
        """Sessions held inside the date the question names, ranked among themselves, gain a
        weighted RRF share; the others keep their score."""
        window = question_window(question)
        if window is None or self.config.date_weight <= 0:
            return
        start, end = window[0], window[1] + timedelta(days=self.config.date_slack_days)
        inside = []
        for h in sessions:
            when = h.payload.get("start")
            if isinstance(when, str):
                at = datetime.fromisoformat(when)
                at = at if at.tzinfo else at.replace(tzinfo=UTC)
                if start <= at < end:
                    inside.append(h.key)
        inside.sort(key=lambda k: (-scores.get(k, 0.0), k))
        for i, key in enumerate(inside):
            scores[key] = scores.get(key, 0.0) + rrf_score(i, self.config.date_weight, self.config.rrf_k)

    async def event_scores(self, question: str, dense: Vector | None = None) -> dict[str, float]:
        """Best fact similarity per session (a group sub-session also answers to its origin's facts)."""
        dense = self.embed(question) if dense is None else dense
        hits = await self.store.query_dense(FACTS, dense, self.config.fact_limit, fields=("session_id",))
        out: dict[str, float] = {}
        for h in hits:
            sid = h.payload.get("session_id")
            if sid:
                out[str(sid)] = max(out.get(str(sid), 0.0), h.score)
        return out

    async def retrieve(
        self, question: str, limit: int = 10, where: Where | None = None, dense: Vector | None = None
    ) -> Retrieved:
        """``dense``: the question's vector when the caller embedded a batch of questions."""
        c = self.config
        dense = await asyncio.to_thread(self.embed, question) if dense is None else dense
        native, turn_hits, session_hits = await self.native(question, where, dense)
        event: dict[str, float] = {}
        if c.beta > 0 and self.use_facts:
            by_fact_session = await self.event_scores(question, dense)
            if by_fact_session:
                origins = await self._origins(list(native))
                for sid in native:
                    event[sid] = max(by_fact_session.get(sid, 0.0), by_fact_session.get(origins.get(sid, ""), 0.0))
                for sid, score in by_fact_session.items():  # sessions only the facts point at
                    event.setdefault(sid, score)
        fused = fuse(native, event, c.alpha, c.beta)
        order = rank(fused)
        sessions = [
            ScoredSession(
                sid,
                fused[sid],
                native.get(sid, 0.0),
                event.get(sid, 0.0),
                session_hits[sid].payload if sid in session_hits else {},
            )
            for sid in order[:limit]
        ]
        session_rank = {sid: i for i, sid in enumerate(order)}
        named = set(_WORD.findall(question.casefold()))
        turns = []
        for h in turn_hits:
            sid = str(h.payload["session_id"])
            prior = rrf_score(session_rank[sid], 1.0, c.rrf_k) if sid in session_rank else 0.0
            speaker = str(h.payload.get("speaker_name", "")).casefold().split()
            boost = 1.0 + c.speaker_boost if speaker and speaker[0] in named else 1.0
            turns.append(ScoredTurn(h.key, sid, h.score * boost + c.turn_session_prior * prior, h.payload))
        turns.sort(key=lambda t: (-t.score, t.turn_id))
        return Retrieved(sessions, turns[:limit])

    async def session_scores(self, question: str, dense: Vector | None = None) -> dict[str, float]:
        """Native scores scaled to [0, 1] (FactMemory's SessionScorer); a group sub-session's
        score also counts for the chat session it was cut from, which facts may name."""
        if dense is None:
            dense = await asyncio.to_thread(self.embed, question)
        native, _, sessions = await self.native(question, dense=dense)
        top = max(native.values(), default=0.0) or 1.0
        out = {sid: score / top for sid, score in native.items()}
        for sid, hit in sessions.items():
            origin = hit.payload.get("origin_id")
            if origin:
                out[str(origin)] = max(out.get(str(origin), 0.0), out.get(sid, 0.0))
        return out

    async def _origins(self, session_ids: list[str]) -> dict[str, str]:
        if not session_ids:
            return {}
        hits = await self.store.retrieve(SESSIONS, session_ids)
        return {h.key: str(h.payload["origin_id"]) for h in hits if h.payload.get("origin_id")}
