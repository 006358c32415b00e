"""LoCoMo retrieval benchmark: does the memory find the sessions and turns that hold the answer?

Per conversation: its sessions are ingested into a fresh embedded store (the real Qdrant Edge
path, speaker A as the owner), then every question of categories 1-4 with evidence is asked.
Evidence ``D3:5`` is session 3, turn 5; every ``D:?(\\d+):(\\d+)`` pair in an evidence string is
read, which repairs the few malformed ids (``D:11:26``, ``D8:6; D9:17``). Recall@k is the share
of a question's evidence sessions (turns) found in the top k, averaged over questions: the
definition that reproduces the plain BM25 baseline in shared/NOTES.md exactly.

Three retrievers in one run, on the same questions: ``hybrid`` (the default retrieval),
``dense`` (the same store and fusion with BM25 and the date boost off) and ``bm25_plain``
(Okapi BM25 as in rank-bm25: lower-cased alphanumeric tokens, no stemming, k1 1.5, b 0.75).
"""

from __future__ import annotations

import math
import re
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from epmem.memory.conversations import Conversations
from epmem.embedding.base import Embedder
from epmem.policy.model import OWNER_ID
from epmem.memory.retrieval import RetrievalConfig, Retriever
from epmem.memory.sessions import Message, Session, build_sessions
from epmem.store.edge import EdgeStore

CATEGORIES = (1, 2, 3, 4)
KS = (1, 5, 10)
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")
_TOKEN = re.compile(r"[a-z0-9]+")
_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*(am|pm) on (\d{1,2}) (\w+),? (\d{4})", re.IGNORECASE)
_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        (
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        )
    )
}


def evidence_pairs(evidence: Sequence[str]) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for e in evidence for a, b in _EVIDENCE.findall(str(e))]


def session_time(text: str) -> datetime | None:
    m = _DATE.search(text or "")
    if not m:
        return None
    hour = int(m.group(1)) % 12 + (12 if m.group(3).lower() == "pm" else 0)
    return datetime(int(m.group(6)), _MONTHS[m.group(5).lower()], int(m.group(4)), hour, int(m.group(2)), tzinfo=UTC)


def turn_body(turn: dict[str, Any]) -> str:
    """A shared photo is part of what was said (the dataset gives its caption)."""
    text = str(turn.get("text", ""))
    return f"{text} [photo: {turn['blip_caption']}]" if turn.get("blip_caption") else text


def conversation_sessions(sample: dict[str, Any]) -> list[Session]:
    """LoCoMo sessions as our sessions: one chat per session, speaker A is the owner."""
    conv = sample["conversation"]
    speaker_a = conv["speaker_a"]
    messages: list[Message] = []
    ids: dict[str, str] = {}
    for key, turns in conv.items():
        m = re.fullmatch(r"session_(\d+)", key)
        if not m or not isinstance(turns, list):
            continue
        n = int(m.group(1))
        chat = f"{sample.get('sample_id', 'conv')}-D{n}"
        ids[chat] = f"D{n}"
        start = session_time(str(conv.get(f"{key}_date_time", "")))
        for turn in turns:
            who = OWNER_ID if turn["speaker"] == speaker_a else f"person:{turn['speaker']}"
            messages.append(
                Message(
                    platform="locomo",
                    chat_id=chat,
                    chat_kind="direct",
                    msg_id=str(turn["dia_id"]),
                    speaker=who,
                    speaker_name=str(turn["speaker"]),
                    text=turn_body(turn),
                    time=start,
                    source="locomo",
                )
            )
    return build_sessions(messages, session_ids=ids)


class PlainBm25:
    """Okapi BM25 exactly as rank-bm25's BM25Okapi (negative IDF floored at eps * mean IDF)."""

    def __init__(self, docs: Sequence[str], k1: float = 1.5, b: float = 0.75, eps: float = 0.25) -> None:
        corpus = [_TOKEN.findall(d.lower()) for d in docs]
        self.k1, self.b = k1, b
        self.tf = [Counter(d) for d in corpus]
        self.dl = np.array([len(d) for d in corpus], dtype=np.float64)
        self.avg = float(self.dl.mean()) if len(corpus) else 0.0
        df = Counter(w for d in corpus for w in set(d))
        n = len(corpus)
        idf = {w: math.log(n - c + 0.5) - math.log(c + 0.5) for w, c in df.items()}
        floor = eps * (sum(idf.values()) / len(idf)) if idf else 0.0
        self.idf = {w: v if v >= 0 else floor for w, v in idf.items()}

    def rank(self, query: str) -> list[int]:
        scores = np.zeros(len(self.tf))
        norm = self.k1 * (1 - self.b + self.b * self.dl / self.avg)
        for w in _TOKEN.findall(query.lower()):
            if w not in self.idf:
                continue
            f = np.array([t.get(w, 0) for t in self.tf], dtype=np.float64)
            scores += self.idf[w] * f * (self.k1 + 1) / (f + norm)
        return [int(i) for i in np.argsort(-scores, kind="stable")]


class Scores:
    """Running Recall@k sums, overall and per category."""

    def __init__(self) -> None:
        self.n = 0
        self.session = dict.fromkeys(KS, 0.0)
        self.turn = dict.fromkeys(KS, 0.0)
        self.cat: dict[int, Scores] = {}

    def add(
        self, category: int | None, sessions: list[str], turns: list[str], gold_s: set[str], gold_t: set[str]
    ) -> None:
        self.n += 1
        for k in KS:
            self.session[k] += len(gold_s & set(sessions[:k])) / len(gold_s)
            self.turn[k] += len(gold_t & set(turns[:k])) / len(gold_t)
        if category is not None:
            self.cat.setdefault(category, Scores()).add(None, sessions, turns, gold_s, gold_t)

    def report(self) -> dict[str, Any]:
        n = self.n or 1
        out: dict[str, Any] = {
            "session_recall": {str(k): round(v / n, 4) for k, v in self.session.items()},
            "turn_recall": {str(k): round(v / n, 4) for k, v in self.turn.items()},
            "n": self.n,
        }
        if self.cat:
            out["per_category"] = {str(c): s.report() for c, s in sorted(self.cat.items())}
        return out


def dense_only(config: RetrievalConfig) -> RetrievalConfig:
    return replace(config, turn_sparse_weight=0.0, session_sparse_weight=0.0, date_weight=0.0)


async def run_locomo(
    path: Path, embedder: Embedder, config: RetrievalConfig | None = None, conversations: int | None = None
) -> dict[str, Any]:
    import json

    data = json.loads(path.read_text(encoding="utf-8"))[:conversations]
    config = config or RetrievalConfig()
    configs = {"hybrid": config, "dense": dense_only(config)}
    totals = {name: Scores() for name in (*configs, "bm25_plain")}
    timing = {"ingest_s": 0.0, "embed_questions_s": 0.0, "query_s": 0.0, "turns": 0, "sessions": 0}
    for sample in data:
        sessions = conversation_sessions(sample)
        questions = [
            q for q in sample["qa"] if q.get("category") in CATEGORIES and evidence_pairs(q.get("evidence", []))
        ]
        with tempfile.TemporaryDirectory(prefix="epmem-locomo-") as tmp:
            store = EdgeStore(Path(tmp) / "qdrant", str(sample.get("sample_id", "owner")))
            try:
                memory = await Conversations(store, embedder).open()
                t0 = time.perf_counter()
                await memory.add(sessions)
                timing["ingest_s"] += time.perf_counter() - t0
                timing["turns"] += sum(len(s.turns) for s in sessions)
                timing["sessions"] += len(sessions)
                retrievers = {name: Retriever(store, embedder, memory, c, facts=False) for name, c in configs.items()}
                t0 = time.perf_counter()
                vectors = retrievers["hybrid"].embed_many([str(q["question"]) for q in questions])
                timing["embed_questions_s"] += time.perf_counter() - t0
                turn_ids = {t.id: t.msg_id for s in sessions for t in s.turns}
                plain_sessions = PlainBm25([" ".join(f"{t.speaker_name}: {t.text}" for t in s.turns) for s in sessions])
                flat = [t for s in sessions for t in s.turns]
                plain_turns = PlainBm25([f"{t.speaker_name}: {t.text}" for t in flat])
                for q, vec in zip(questions, vectors, strict=True):
                    pairs = evidence_pairs(q["evidence"])
                    gold_s = {f"D{a}" for a, _ in pairs}
                    gold_t = {f"D{a}:{b}" for a, b in pairs}
                    for name, retriever in retrievers.items():
                        t0 = time.perf_counter()
                        got = await retriever.retrieve(str(q["question"]), limit=10, dense=vec)
                        if name == "hybrid":
                            timing["query_s"] += time.perf_counter() - t0
                        totals[name].add(
                            int(q["category"]),
                            [s.session_id for s in got.sessions],
                            [turn_ids[t.turn_id] for t in got.turns],
                            gold_s,
                            gold_t,
                        )
                    s_rank = [sessions[i].id for i in plain_sessions.rank(str(q["question"]))]
                    t_rank = [flat[i].msg_id for i in plain_turns.rank(str(q["question"]))]
                    totals["bm25_plain"].add(int(q["category"]), s_rank, t_rank, gold_s, gold_t)
            finally:
                await store.close()
    reports = {name: s.report() for name, s in totals.items()}
    default = reports["hybrid"]

    def ratio(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
        return {k: round(a[k] / b[k], 3) if b[k] else 0.0 for k in a}

    return {
        "dataset": str(path),
        "embedder": embedder.name,
        "config": {k: getattr(config, k) for k in config.__dataclass_fields__},
        "session_recall": default["session_recall"],
        "turn_recall": default["turn_recall"],
        "per_category": default.get("per_category", {}),
        "n": default["n"],
        "retrievers": reports,
        "ratios": {
            f"hybrid_vs_{other}": {
                "session_recall": ratio(default["session_recall"], reports[other]["session_recall"]),
                "turn_recall": ratio(default["turn_recall"], reports[other]["turn_recall"]),
            }
            for other in ("bm25_plain", "dense")
        },
        "timing": {
            **{k: round(v, 2) if isinstance(v, float) else v for k, v in timing.items()},
            "query_ms_mean": round(1000 * timing["query_s"] / max(default["n"], 1), 2),
        },
    }
