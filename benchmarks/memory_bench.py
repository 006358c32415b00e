"""Memory at the size of years of chats: 10,000 sessions, 100,000 turns, 50,000 facts.

What it measures, on the embedded default (Qdrant Edge in a temporary data folder):
- ``ingest``: the whole ingest path with the default embedder, on a slice (the rate is what
  a user waits for on an import);
- ``ingest_without_dense``: everything in ingest but the dense embedding (sessions, group
  splitting, summaries, BM25, payloads, writes) over the full 100k turns, dense rows reused
  from a pool of embedded sentences (embedding 100k turns measures the embedder, as the slice does);
- ``recall``: the production recall path (FactMemory.recall with the session retrieval fused
  in), question embedding included, p50/p95/mean over distinct questions after warm-up;
- ``reply``: the whole reply path (recall, adjudication, projection, relevance, the composite
  rule, the rules composer and its post-check) for a level-2 friend who may know every fact,
  with the cross-encoder and without it (the difference of the medians is what it adds);
- ``peak_rss_mb``: the process's peak resident memory (ru_maxrss).
"""

from __future__ import annotations

import random
import resource
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from epmem.memory.conversations import SESSIONS, TURNS, Conversations
from epmem.embedding.base import Embedder
from epmem.memory.facts import Fact
from epmem.memory.recall import FACTS, FactMemory, SubjectNormalizer
from epmem.policy.model import OWNER_ID
from epmem.memory.retrieval import Retriever
from epmem.memory.sessions import Message, build_sessions
from epmem.store.base import PointIn
from epmem.store.edge import EdgeStore
from epmem.policy.calculus import Recipient, Rulebook
from epmem.policy.model import Policy
from epmem.policy.overlay import MIGRATIONS as OVERLAY, Overlay
from epmem.sqlite import open_database
from epmem.reply.engine import PrivacyEngine
from epmem.reply.relevance import Relevance, Reranker
from epmem.reply.respond import RulesResponder

NAMES = [
    "Alex",
    "Mia",
    "Jamie",
    "Noor",
    "Priya",
    "Tom",
    "Lena",
    "Dev",
    "Ines",
    "Rosa",
    "Kai",
    "Omar",
    "Yuki",
    "Sofia",
    "Liam",
    "Chen",
    "Ava",
    "Marco",
    "Zara",
    "Ben",
    "Hana",
    "Ivan",
    "Lucia",
    "Raj",
    "Eva",
    "Finn",
    "Amara",
    "Jonas",
    "Leila",
    "Theo",
    "Nina",
    "Sam",
    "Aisha",
    "Pablo",
    "Greta",
    "Hugo",
    "Maya",
    "Ravi",
    "Elin",
    "Tariq",
]
TOPICS = [
    "the marathon training",
    "the kitchen renovation",
    "the school play",
    "the quarterly roadmap",
    "the trip to Lisbon",
    "the new espresso machine",
    "the knee surgery",
    "the garden shed",
    "the job interview",
    "the book club",
    "the climbing gym",
    "the wedding plans",
    "the tax return",
    "the broken bike",
    "the piano lessons",
    "the product launch",
    "the dentist appointment",
    "the camping weekend",
    "the birthday party",
    "the apartment search",
    "the sourdough starter",
    "the chess tournament",
    "the volunteer shift",
    "the photography course",
    "the car repair",
    "the team offsite",
    "the language exchange",
    "the football match",
    "the pottery class",
    "the flight to Tokyo",
    "the conference talk",
    "the puppy training",
    "the salary review",
    "the house warming",
    "the hiking trip",
    "the board game night",
    "the bathroom leak",
    "the charity run",
    "the science fair",
    "the yoga retreat",
    "the move to Berlin",
    "the vegetable garden",
    "the film festival",
    "the guitar",
    "the hackathon",
    "the ski holiday",
    "the wine tasting",
    "the museum visit",
    "the concert tickets",
    "the exam results",
]
DAYS = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
    "next week",
    "tomorrow",
    "this weekend",
    "in March",
    "after the holidays",
]
TEMPLATES = [
    "How is {topic} going?",
    "I finally sorted out {topic} on {day}.",
    "Can we talk about {topic} {day}?",
    "{name} told me {topic} is delayed again.",
    "I'm worried about {topic}, honestly.",
    "Did you hear what happened with {topic}?",
    "{topic} went better than expected!",
    "Let's meet {day} to plan {topic}.",
    "I need a break from {topic} for a while.",
    "{name} wants to join {topic} {day}.",
]
#: questions in another language than English (the multilingual reading: a second search and the
#: multilingual model in place of the cross-encoder, epmem/reply/relevance/multilingual.py).
OTHER_QUESTIONS = [
    "¿Qué tal va todo con {name}? ¿Hay novedades de esta semana?",
    "Como foi a semana de {name}? Alguma novidade?",
    "Czy {name} ma jakieś nowe plany na weekend?",
]
#: messages that ask two things (each recalled and answered alone: english.py ``questions``).
SEVERAL_QUESTIONS = [
    "How did {topic} go? And is {name} still coming {day}?",
    "When is {topic} happening, and did {name} hear back?",
    "Any news about {topic}? And what did {name} say {day}?",
]
QUESTIONS = [
    "How did {topic} go?",
    "What happened with {topic} {day}?",
    "Is {name} still part of {topic}?",
    "Any news about {topic}?",
    "When is {topic} happening?",
]


def _sentence(rng: random.Random, templates: list[str]) -> str:
    return rng.choice(templates).format(topic=rng.choice(TOPICS), day=rng.choice(DAYS), name=rng.choice(NAMES))


def synthetic_messages(
    n_sessions: int, turns_per_session: int, pool: list[str], seed: int = 7
) -> tuple[list[Message], list[int]]:
    """Chats with 40 people, every tenth session a group chat; and each turn's pool row."""
    rng = random.Random(seed)
    start = datetime(2020, 1, 1, tzinfo=UTC)
    messages: list[Message] = []
    rows: list[int] = []
    for s in range(n_sessions):
        when = start + timedelta(hours=8 * s)
        group = s % 10 == 0
        people = rng.sample(NAMES, 3) if group else [rng.choice(NAMES)]
        chat = f"group-{s % 37}" if group else f"dm-{people[0]}"
        for t in range(turns_per_session):
            speaker = OWNER_ID if t % 2 == 0 else f"person:{people[(t // 2) % len(people)]}"
            name = "Sam Rivera" if speaker == OWNER_ID else speaker.split(":", 1)[1]
            row = rng.randrange(len(pool))
            rows.append(row)
            messages.append(
                Message(
                    platform="telegram",
                    chat_id=chat,
                    chat_kind="group" if group else "direct",
                    msg_id=f"{s}-{t}",
                    speaker=speaker,
                    speaker_name=name,
                    text=pool[row],
                    time=when + timedelta(minutes=t),
                    source="synthetic",
                )
            )
    return messages, rows


def _percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q))


async def _ingest_slice(
    tmp: Path, embedder: Embedder, n_sessions: int, turns_per_session: int, pool: list[str], seed: int
) -> dict[str, Any]:
    """1. The whole ingest path, default embedder, on a slice."""
    store = EdgeStore(tmp / "slice", "bench")
    try:
        conv = await Conversations(store, embedder).open()
        msgs, _ = synthetic_messages(n_sessions, turns_per_session, pool, seed)
        t0 = time.perf_counter()
        built = build_sessions(msgs)
        await conv.add(built)
        took = time.perf_counter() - t0
        n_turns = sum(len(s.turns) for s in built)
        return {
            "sessions": len(built),
            "turns": n_turns,
            "seconds": round(took, 2),
            "sessions_per_s": round(len(built) / took, 1),
            "turns_per_s": round(n_turns / took, 1),
        }
    finally:
        await store.close()


async def _ingest_without_dense(
    store: EdgeStore,
    conv: Conversations,
    n_sessions: int,
    turns_per_session: int,
    pool: list[str],
    pool_vectors: np.ndarray,
    seed: int,
) -> tuple[dict[str, Any], list[str]]:
    """2. Everything but the dense embedding, full size; the session ids written."""
    msgs, rows = synthetic_messages(n_sessions, turns_per_session, pool, seed)
    t0 = time.perf_counter()
    built = build_sessions(msgs)
    build_s = time.perf_counter() - t0
    by_msg = {m.msg_id: rows[i] for i, m in enumerate(msgs)}
    write_s = points_s = 0.0
    for i in range(0, len(built), 64):
        batch = built[i : i + 64]
        vectors = pool_vectors[[by_msg[t.msg_id] for s in batch for t in s.turns]]
        t1 = time.perf_counter()
        turn_points, session_points = conv.points(batch, vectors)
        t2 = time.perf_counter()
        await store.upsert(TURNS, turn_points)
        await store.upsert(SESSIONS, session_points)
        t3 = time.perf_counter()
        points_s += t2 - t1
        write_s += t3 - t2
    n_turns = sum(len(s.turns) for s in built)
    total = build_s + points_s + write_s
    return {
        "sessions": len(built),
        "turns": n_turns,
        "seconds": round(total, 2),
        "turns_per_s": round(n_turns / total, 1),
        "sessions_per_s": round(len(built) / total, 1),
        "split": {
            "build_sessions_s": round(build_s, 2),
            "bm25_and_payload_s": round(points_s, 2),
            "write_s": round(write_s, 2),
        },
    }, [s.id for s in built]


#: about one imported fact in three answers a question (Fact.context; storylines-v1 133 of 402)
ASKED_EVERY = 3


async def _write_facts(
    store: EdgeStore,
    memory: FactMemory,
    facts: int,
    fact_pool: list[str],
    fact_vectors: np.ndarray,
    session_ids: list[str],
) -> float:
    """Facts as points, in chunks, over the written sessions; the seconds it took. Every
    :data:`ASKED_EVERY`-th answers a question, which the cross-encoder reads it with too."""
    t0 = time.perf_counter()
    for i in range(0, facts, 2_000):
        chunk = []
        for j in range(i, min(i + 2_000, facts)):
            row = j % len(fact_pool)
            fact = Fact(
                id=f"f{j}",
                text=fact_pool[row],
                event_id=f"e{j // 2}",
                session_id=session_ids[j % len(session_ids)],
                state="annotated",
                level=2,
                category="daily_life",
                context=fact_pool[(row + 1) % len(fact_pool)] if j % ASKED_EVERY == 0 else None,
            )
            chunk.append(
                PointIn(fact.id, fact.model_dump(mode="json"), fact_vectors[row], memory.sparse.document(fact.text))
            )
        await store.upsert(FACTS, chunk)
    return round(time.perf_counter() - t0, 2)


async def _recall_latency(memory: FactMemory, retriever: Retriever, qs: list[str]) -> dict[str, Any]:
    """3. Recall latency, question embedding included, after ten warm-up questions."""
    for q in qs[:10]:
        await memory.recall(q)
    lat: list[float] = []
    session_lat: list[float] = []
    for q in qs[10:]:
        t1 = time.perf_counter()
        await memory.recall(q)
        lat.append((time.perf_counter() - t1) * 1000)
    for q in qs[10:]:
        t1 = time.perf_counter()
        await retriever.retrieve(q)
        session_lat.append((time.perf_counter() - t1) * 1000)
    return {
        "recall_ms": {
            "n": len(lat),
            "p50": round(_percentile(lat, 50), 2),
            "p95": round(_percentile(lat, 95), 2),
            "mean": round(statistics.fmean(lat), 2),
        },
        "session_retrieve_ms": {
            "n": len(session_lat),
            "p50": round(_percentile(session_lat, 50), 2),
            "p95": round(_percentile(session_lat, 95), 2),
        },
    }


def _ms(values: list[float]) -> dict[str, float]:
    return {"n": len(values), "p50": round(_percentile(values, 50), 2), "p95": round(_percentile(values, 95), 2)}


async def _timed(
    engine: PrivacyEngine, recipient: Recipient, questions: list[str], warm: int
) -> tuple[list[float], list[float], int]:
    """Each question after the first ``warm`` (asked untimed) answered and timed: the reply's
    milliseconds, the relevance step's, and how many were answered."""
    for q in questions[:warm]:
        await engine.answer(q, [recipient], recipient)
    lat: list[float] = []
    step: list[float] = []
    said = 0
    for q in questions[warm:]:
        t1 = time.perf_counter()
        answer = await engine.answer(q, [recipient], recipient)
        lat.append((time.perf_counter() - t1) * 1000)
        step.append(answer.choice.ms if answer.choice is not None else 0.0)
        said += not answer.deflected
    return lat, step, said


async def _reply_latency(
    memory: FactMemory,
    policy: Policy,
    state: Path,
    questions: list[str],
    reranker: Reranker | None,
    reader: str = "jamie",
    matcher: Reranker | None = None,
    other: list[str] | None = None,
    several: list[str] | None = None,
) -> dict[str, Any]:
    """engine.answer per question, with and without the cross-encoder and the late-interaction
    model (same questions, same store); ``other``: questions in another language than English,
    with the models (what the multilingual reading adds); ``several``: messages that ask two
    things, with the models (a recall and a relevance pass per question)."""
    db = await open_database(state, [OVERLAY])
    overlay = Overlay(db)
    try:
        recipient = Rulebook(policy).recipient(reader)
        out: dict[str, Any] = {
            "reader": reader,
            "reranker": getattr(reranker, "name", None),
            "matcher": getattr(matcher, "name", None),
        }
        for label, model in (("without_reranker", None), ("with_reranker", reranker)):
            engine = PrivacyEngine(
                policy,
                overlay,
                memory,
                RulesResponder(),
                Relevance(None, model, matcher if model is not None else None),
            )
            lat, step, said = await _timed(engine, recipient, questions, warm=10)
            out[label] = {"reply_ms": _ms(lat), "relevance_step_ms": _ms(step), "answered": said}
            if other and model is not None:
                lat, _, _ = await _timed(engine, recipient, other, warm=3)
                out["other_language"] = {"reply_ms": _ms(lat)}
            if several and model is not None:
                lat, _, _ = await _timed(engine, recipient, several, warm=3)
                out["several_questions"] = {"reply_ms": _ms(lat)}
        if reranker is not None:
            out["added_p50_ms"] = round(
                out["with_reranker"]["reply_ms"]["p50"] - out["without_reranker"]["reply_ms"]["p50"], 2
            )
        return out
    finally:
        await db.close()


async def run_memory_bench(
    embedder: Embedder,
    sessions: int = 10_000,
    turns_per_session: int = 10,
    facts: int = 50_000,
    questions: int = 200,
    pool_size: int = 3_000,
    ingest_slice: int = 100,
    seed: int = 7,
    policy: Policy | None = None,
    reranker: Reranker | None = None,
    matcher: Reranker | None = None,
) -> dict[str, Any]:
    """``policy`` (the example policy, owner Sam Rivera) turns on the reply measurement."""
    rng = random.Random(seed)
    pool = sorted({_sentence(rng, TEMPLATES) for _ in range(pool_size * 3)})[:pool_size]
    t0 = time.perf_counter()
    pool_vectors = embedder.embed(pool)
    pool_embed_s = time.perf_counter() - t0
    fact_pool = [f"Sam {_sentence(rng, TEMPLATES).lower()}" for _ in range(pool_size)]
    fact_vectors = embedder.embed(fact_pool)
    out: dict[str, Any] = {
        "embedder": embedder.name,
        "sessions": sessions,
        "turns": sessions * turns_per_session,
        "facts": facts,
        "pool_sentences": pool_size,
        "pool_embed_sentences_per_s": round(pool_size / pool_embed_s, 1),
    }
    with tempfile.TemporaryDirectory(prefix="epmem-membench-") as tmp:
        out["ingest"] = await _ingest_slice(Path(tmp), embedder, ingest_slice, turns_per_session, pool, seed + 1)
        store = EdgeStore(Path(tmp) / "full", "bench")
        try:
            conv = await Conversations(store, embedder).open()
            writer = await FactMemory(store, embedder, SubjectNormalizer(["Sam Rivera"])).open()
            out["ingest_without_dense"], session_ids = await _ingest_without_dense(
                store, conv, sessions, turns_per_session, pool, pool_vectors, seed + 2
            )
            out["facts_write_s"] = await _write_facts(store, writer, facts, fact_pool, fact_vectors, session_ids)
            t0 = time.perf_counter()
            await store.compact()
            out["compact_s"] = round(time.perf_counter() - t0, 2)
            out["counts"] = {
                "sessions": await store.count(SESSIONS),
                "turns": await store.count(TURNS),
                "facts": await store.count(FACTS),
            }
            retriever = Retriever(store, embedder, conv)
            t0 = time.perf_counter()  # an embedder that reads across languages fills its collection here
            memory = await FactMemory(store, embedder, SubjectNormalizer(["Sam Rivera"]), sessions=retriever).open()
            out["open_s"] = round(time.perf_counter() - t0, 2)
            qs = list(dict.fromkeys(_sentence(rng, QUESTIONS) for _ in range(questions * 3)))[:questions]
            out.update(await _recall_latency(memory, retriever, qs))
            if policy is not None:
                other, several = (
                    list(dict.fromkeys(_sentence(rng, t) for _ in range(questions)))[: questions // 2]
                    for t in (OTHER_QUESTIONS, SEVERAL_QUESTIONS)
                )
                state = Path(tmp) / "state.sqlite"
                out["reply"] = await _reply_latency(
                    memory, policy, state, qs, reranker, matcher=matcher, other=other, several=several
                )
        finally:
            await store.close()
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return out
