"""The four medians that put the multilingual model's similarity on the cross-encoder's scale
(epmem/reply/relevance/multilingual.py).

Gold mode (the gold facts are the memory), every English set given: for each (question,
asker) and each fact the asker may know that recall offers, the best over the question's parts
of the multilingual model's cosine similarity and of the cross-encoder's logit; the medians of
each over the facts that answer (in the asker's gold) and over the rest. Prompt-injection
questions are left out, as in the relevance tools::

    python -m benchmarks.tools.calibrate_multilingual ../shared/bench/examples ../shared/bench/cumulative \\
        ../shared/bench/storylines-v1 ../shared/bench/storylines-v2 benchmarks/scenarios/own \\
        benchmarks/scenarios/storylines benchmarks/scenarios/dev-extra benchmarks/scenarios/confided \\
        benchmarks/scenarios/vignettes benchmarks/scenarios/storylines-heldout
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

import numpy as np

from benchmarks.scenario_bench import is_injection
from benchmarks.tools.tune_relevance import collect
from epmem.embedding.bilingual import shared_use
from epmem.embedding.cross_encoder import shared_cross_encoder
from epmem.language.english import question_parts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    args = parser.parse_args(argv)
    cases = [c for c in asyncio.run(collect(args.paths)) if not is_injection(c.question)]
    use, ce = shared_use(), shared_cross_encoder()
    similarity: dict[bool, list[float]] = {True: [], False: []}
    logit: dict[bool, list[float]] = {True: [], False: []}
    for case in cases:
        parts = question_parts(case.question, 6)
        texts = [d.fact.text for d in case.storyline.used]
        if not texts:
            continue
        vectors = use.embed([*parts, *texts])
        sims = vectors[len(parts) :] @ vectors[: len(parts)].T
        logits = np.array([ce.score(p, texts) for p in parts]).T
        for i, d in enumerate(case.storyline.used):
            answers = d.fact.id in case.may
            similarity[answers].append(float(sims[i].max()))
            logit[answers].append(float(logits[i].max()))
    print(
        json.dumps(
            {
                "pairs": {"answers": len(similarity[True]), "unrelated": len(similarity[False])},
                "ANSWERS_SIMILARITY": round(float(np.median(similarity[True])), 3),
                "UNRELATED_SIMILARITY": round(float(np.median(similarity[False])), 3),
                "ANSWERS_LOGIT": round(float(np.median(logit[True])), 2),
                "UNRELATED_LOGIT": round(float(np.median(logit[False])), 2),
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
