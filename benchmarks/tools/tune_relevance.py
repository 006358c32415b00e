"""Pick the relevance step's parameters on development scenarios, and only on those.

For every (question, asker) of the given scenario files (gold mode: the gold facts are the
memory), recall and adjudication run once through the real runtime; the cross-encoder's scores
are cached; then every point of a small grid of :class:`RelevanceConfig` values is run through
the real :class:`Relevance` step, and scored like the scenario benchmark scores replies (a fact
said counts for precision when it is in the asker's ``may`` set; completeness over ``may``).
The points are ranked by ``min(precision - 0.8, completeness - 0.9)``: both targets at once.

Run it on the development sets only (storylines, own, the shared examples); the held-out sets
(confided, vignettes) are for reporting, never for this::

    python -m benchmarks.tools.tune_relevance benchmarks/scenarios/storylines benchmarks/scenarios/own \\
        ../shared/bench/examples --top 10
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import itertools
import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bot.config import Settings
from bot.runtime import Runtime, embedder_from_settings, load_scenario_memory
from epmem.embedding.cross_encoder import shared_cross_encoder
from epmem.memory.recall import RecalledEvent
from epmem.policy.calculus import STRANGER
from epmem.policy.model import STRANGER_ID
from epmem.reply.projection import Projection, project
from epmem.reply.relevance import Relevance, RelevanceConfig, Reranker
from epmem.scenario import asker_members, load_scenario, scenario_files

GRID: dict[str, Sequence[float]] = {
    "min_recall": (0.3, 0.4, 0.5),
    "rerank_weight": (0.0, 0.25, 0.5, 1.0),
    "rerank_temperature": (2.0, 4.0),
    "floor": (0.5, 0.6, 0.7, 0.8),
    "event_margin": (0.05, 0.15, 0.3),
    "open_relative_cut": (0.6, 0.75, 0.9),
    "open_min_recall": (0.0, 0.2, 0.3, 0.4),
}


class CachedReranker:
    """The cross-encoder, each (question, text) scored once for the whole grid."""

    def __init__(self, inner: Reranker) -> None:
        self.inner = inner
        self.name = inner.name
        self.cache: dict[tuple[str, str], float] = {}

    def score(self, question: str, texts: Sequence[str]) -> np.ndarray:
        todo = [t for t in texts if (question, t) not in self.cache]
        if todo:
            for t, s in zip(todo, self.inner.score(question, todo)):
                self.cache[(question, t)] = float(s)
        return np.array([self.cache[(question, t)] for t in texts], dtype=np.float32)


@dataclass(frozen=True)
class Case:
    question: str
    events: list[RecalledEvent]
    storyline: Projection
    may: frozenset[str]


async def collect(paths: Sequence[Path], floor: float) -> list[Case]:
    """Recall (with the lowest floor of the grid) and adjudication, once per (question, asker)."""
    embedder = embedder_from_settings()
    cases: list[Case] = []
    for path in scenario_files(list(paths)):
        scenario = load_scenario(path)
        with tempfile.TemporaryDirectory(prefix="epmem-tune-") as tmp:
            runtime = await Runtime.open(Settings(data_dir=Path(tmp), reranker="off"),
                                         policy=scenario.effective_policy(), embedder=embedder)
            try:
                await load_scenario_memory(runtime, scenario)
                runtime.memory.config = dataclasses.replace(runtime.memory.config, min_relevance=floor)
                rulebook = await runtime.engine.rulebook()
                for item in scenario.tasks.answer:
                    events = await runtime.memory.recall(item.question)
                    for asker, gold in item.askers.items():
                        audience = [STRANGER if m == STRANGER_ID else rulebook.recipient(m)
                                    for m in asker_members(asker)]
                        cases.append(Case(item.question, events, project(events, rulebook, audience),
                                          frozenset(gold.may)))
            finally:
                await runtime.close()
    return cases


def score(cases: Sequence[Case], relevance: Relevance) -> tuple[float, float]:
    said = said_may = may = 0
    for case in cases:
        chosen = set(relevance.choose(case.question, case.events, case.storyline).chosen)
        said += len(chosen)
        said_may += len(chosen & case.may)
        may += len(case.may)
    return (said_may / said if said else 1.0), (said_may / may if may else 1.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--only", nargs="*", default=(), help="vary only these parameters (others at default)")
    args = parser.parse_args(argv)
    cases = asyncio.run(collect(args.paths, min(GRID["min_recall"])))
    grid = {k: v for k, v in GRID.items() if not args.only or k in args.only}
    reranker = CachedReranker(shared_cross_encoder())
    results = []
    for values in itertools.product(*grid.values()):
        config = dataclasses.replace(RelevanceConfig(), **dict(zip(grid, values)))  # type: ignore[arg-type]
        precision, completeness = score(cases, Relevance(config, reranker))
        results.append((min(precision - 0.8, completeness - 0.9), precision, completeness, dict(zip(grid, values))))
    results.sort(key=lambda r: -r[0])
    default = score(cases, Relevance(RelevanceConfig(), reranker))
    print(json.dumps({"cases": len(cases), "default": {"precision": round(default[0], 4),
                                                         "completeness": round(default[1], 4)},
                      "best": [{"precision": round(p, 4), "completeness": round(c, 4), "config": cfg}
                               for _, p, c, cfg in results[: args.top]]}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
