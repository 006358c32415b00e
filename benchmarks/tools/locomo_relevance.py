"""Do the relevance step's signals rank answering facts first on a corpus we never tuned on?

LoCoMo (shared/datasets/locomo) has, per conversation, *observations* (one-sentence facts, each
with the dialogue turn it came from) and questions with their evidence turns: a question's
answering facts are the observations of its evidence turns. For each question (categories 1-4;
5 is unanswerable), the MiniLM embedder's top ``--candidates`` observations are the candidates,
as recall would give them; each signal then ranks them, and the tool prints, averaged over the
questions with both answering and other candidates, the AUC (an answering fact above another)
and hit@1 (the first is an answering fact):

- ``cosine``: the embedder alone;
- ``cosine+maxsim``: plus ``match_weight * (MaxSim - median MaxSim of the candidates)`` (the
  late-interaction model, as open and state questions hear it; relevance-en.yaml's weight);
- ``maxsim``, ``cross-encoder``: each alone;
- ``cosine+cross-encoder``: plus ``rerank_weight * sigmoid(logit / rerank_temperature)``, as
  other questions hear it.

It checks signals, not thresholds: LoCoMo's questions are not our scenarios' (nearly all ask
for one detail) and its observations carry no policy. Usage::

    python -m benchmarks.tools.locomo_relevance ../shared/datasets/locomo/locomo10.json --questions 600
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable
from pathlib import Path

import numpy as np

from epmem.embedding import make_embedder, shared_cross_encoder, shared_late_interaction
from epmem.language import ENGLISH

Signals = dict[str, np.ndarray]


def _auc(scores: np.ndarray, answering: np.ndarray) -> float:
    pos, neg = scores[answering][:, None], scores[~answering][None, :]
    return float(((pos > neg).sum() + 0.5 * (pos == neg).sum()) / pos.size / neg.size)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("locomo", type=Path)
    parser.add_argument("--questions", type=int, default=600, help="a random sample of this many (seeded)")
    parser.add_argument("--candidates", type=int, default=16)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    data = json.loads(args.locomo.read_text(encoding="utf-8"))
    asked: list[tuple[dict[str, object], list[tuple[str, str]]]] = []
    for conversation in data:
        observations = [
            (str(text), str(turn))
            for per_session in conversation["observation"].values()
            for items in per_session.values()
            for text, turn in items
        ]
        asked += [(q, observations) for q in conversation["qa"] if q["category"] in (1, 2, 3, 4) and q.get("evidence")]
    random.Random(args.seed).shuffle(asked)
    embedder, reranker, matcher = make_embedder("minilm"), shared_cross_encoder(), shared_late_interaction()
    c = ENGLISH.relevance
    combine: dict[str, Callable[[Signals], np.ndarray]] = {
        "cosine": lambda s: s["cos"],
        "cosine+maxsim": lambda s: s["cos"] + c.match_weight * (s["sim"] - np.median(s["sim"])),
        "maxsim": lambda s: s["sim"],
        "cross-encoder": lambda s: s["logit"],
        "cosine+cross-encoder": lambda s: s["cos"] + c.rerank_weight / (1 + np.exp(-s["logit"] / c.rerank_temperature)),
    }
    vectors: dict[str, np.ndarray] = {}
    auc: dict[str, list[float]] = {k: [] for k in combine}
    hits = dict.fromkeys(combine, 0)
    for question, observations in asked[: args.questions]:
        texts = [t for t, _ in observations]
        new = [t for t in dict.fromkeys(texts) if t not in vectors]
        if new:
            vectors.update(zip(new, embedder.embed(new)))
        cos = np.array([vectors[t] for t in texts]) @ embedder.embed([str(question["question"])])[0]
        top = np.argsort(-cos)[: args.candidates]
        evidence = {str(e) for e in question["evidence"]}  # type: ignore[attr-defined]
        answering = np.array([bool(evidence & {p.strip() for p in observations[i][1].split(";")}) for i in top])
        if answering.all() or not answering.any():
            continue
        candidates = [texts[i] for i in top]
        signals = {
            "cos": cos[top],
            "sim": matcher.score(str(question["question"]), candidates),
            "logit": reranker.score(str(question["question"]), candidates),
        }
        for name, f in combine.items():
            scores = f(signals)
            auc[name].append(_auc(scores, answering))
            hits[name] += bool(answering[int(np.argmax(scores))])
    n = len(auc["cosine"])
    print(
        json.dumps(
            {
                "questions": n,
                "candidates": args.candidates,
                "signals": {
                    k: {"auc": round(float(np.mean(v)), 4), "hit_at_1": round(hits[k] / n, 4)} for k, v in auc.items()
                },
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
