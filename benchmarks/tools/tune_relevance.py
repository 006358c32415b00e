"""Pick the relevance step's parameters on development scenarios, and only on those.

For every (question, asker) of the given scenario files (gold mode: the gold facts are the
memory), recall and adjudication run once through the real runtime; the cross-encoder's scores
are cached; then every point of a small grid of :class:`RelevanceConfig` values is run through
the real :class:`Relevance` step, and scored like the scenario benchmark scores replies (a fact
said counts for precision when it is in the asker's ``may`` set; completeness over ``may``).
The points are ranked by the worst, over the given paths (each a set), of
``min(precision - 0.8, completeness - 0.9)``: both targets at once, on every set.

Run it on the development sets only (storylines, dev-extra, own, the shared examples); the
held-out sets (confided, vignettes, storylines-heldout) are for reporting, never for this. The
whole grid is large; ``--only`` varies a few parameters around the defaults::

    python -m benchmarks.tools.tune_relevance benchmarks/scenarios/storylines benchmarks/scenarios/dev-extra \\
        benchmarks/scenarios/own ../shared/bench/examples --only veto floor event_margin --top 10

``--ceiling`` asks the opposite question: fitted to each set alone (the set it is then scored
on, which is never how parameters are picked), how complete can the replies be at precision
0.8, and how close does any grid point come to both targets on that set? Both are optimistic
ceilings of what these signals can do by their parameters alone.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bot.config import Settings
from bot.runtime import Runtime, embedder_from_settings, load_scenario_memory
from epmem.embedding.cross_encoder import shared_cross_encoder
from epmem.embedding.late_interaction import shared_late_interaction
from epmem.memory.recall import RecalledEvent
from epmem.policy.calculus import STRANGER
from epmem.policy.model import STRANGER_ID
from epmem.reply.projection import Projection, project
from epmem.language import ENGLISH, Provenance, RelevanceConfig, get, write_settings
from epmem.reply.relevance import Choice, Relevance, Reranker
from epmem.scenario import asker_members, load_scenario, scenario_files

GRID: dict[str, Sequence[float]] = {
    "min_recall": (0.3, 0.35, 0.4),
    "rerank_weight": (0.25, 0.5, 1.0),
    "floor": (0.55, 0.6, 0.65),
    "answers": (-1.0, 0.0, 1.0),
    "event_margin": (0.2, 0.3, 0.4),
    "veto": (-6.0, -5.0, -4.0),
    "open_veto": (-10.5, -10.0),
    "open_veto_recall": (0.5, 0.6),
    "relative_cut": (0.7, 0.8, 0.9),
    "state_veto": (-10.5, -8.0, -6.0),
    "rescue_recall": (0.2, 0.3, 0.4),
    "rescue_logit": (1.0, 2.0, 3.0),
    "complete_events": (False, True),
    "match_weight": (0.0, 1.0, 2.0, 3.0),
}

#: ``--ceiling``: the parameters that decide what is left out, over a wider range than the
#: tuning grid (a veto of -12 is no veto: the cross-encoder's logits stay above -11.4).
CEILING_GRID: dict[str, Sequence[float]] = {
    "min_recall": (0.2, 0.3, 0.4),
    "floor": (0.4, 0.5, 0.6, 0.7),
    "answers": (-2.0, 0.0, 2.0),
    "veto": (-12.0, -8.0, -6.0, -4.0),
    "open_veto": (-12.0, -10.5, -8.0),
    "state_veto": (-12.0, -10.5, -8.0),
    "rerank_weight": (0.25, 1.0),
}


class CachedReranker:
    """The cross-encoder, each (question, text) scored once for the whole grid."""

    def __init__(self, inner: Reranker) -> None:
        self.inner = inner
        self.name = inner.name
        self.cache: dict[tuple[str, str], float] = {}

    def score(self, question: str, texts: Sequence[str], events: Sequence[str] | None = None) -> np.ndarray:
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
    owner: str = ""
    #: each question of a message that asks several, with what recall found for it alone.
    asked: Mapping[str, Sequence[RecalledEvent]] = field(default_factory=dict)
    #: each contact's name and aliases (the relevance step names them as the facts do).
    people: Sequence[Sequence[str]] = ()

    def choose(self, relevance: Relevance) -> Choice:
        """The relevance step's choice for this case, as the engine makes it."""
        return relevance.choose(self.question, self.events, self.storyline, self.owner, self.asked, self.people)


async def collect(paths: Sequence[Path]) -> list[Case]:
    """Recall (as the runtime does it) and adjudication, once per (question, asker)."""
    embedder = embedder_from_settings()
    cases: list[Case] = []
    for path in scenario_files(list(paths)):
        scenario = load_scenario(path)
        with tempfile.TemporaryDirectory(prefix="epmem-tune-") as tmp:
            runtime = await Runtime.open(
                Settings(data_dir=Path(tmp), reranker="off"), policy=scenario.effective_policy(), embedder=embedder
            )
            try:
                await load_scenario_memory(runtime, scenario)
                rulebook = await runtime.engine.rulebook()
                for item in scenario.tasks.answer:
                    events, asked = await runtime.engine.recall(item.question)
                    for asker, gold in item.askers.items():
                        audience = [
                            STRANGER if m == STRANGER_ID else rulebook.recipient(m) for m in asker_members(asker)
                        ]
                        cases.append(
                            Case(
                                item.question,
                                events,
                                project(events, rulebook, audience),
                                frozenset(gold.may),
                                scenario.owner.name,
                                asked,
                                [(c.name, *c.aliases) for c in runtime.policy.contacts.values()],
                            )
                        )
            finally:
                await runtime.close()
    return cases


def score(cases: Sequence[Case], relevance: Relevance) -> tuple[float, float]:
    said = said_may = may = 0
    for case in cases:
        chosen = set(case.choose(relevance).chosen)
        said += len(chosen)
        said_may += len(chosen & case.may)
        may += len(case.may)
    return (said_may / said if said else 1.0), (said_may / may if may else 1.0)


def ceiling(
    cases: Sequence[Case], grid: Mapping[str, Sequence[float]], reranker: Reranker, matcher: Reranker
) -> dict[str, object]:
    """The best point of ``grid`` for ``cases`` alone: the most complete at precision >= 0.8, and
    the one nearest both targets (``min(precision - 0.8, completeness - 0.9)``)."""
    best: tuple[float, float, dict[str, float]] | None = None
    nearest: tuple[float, float, float, dict[str, float]] | None = None
    points = 0
    for values in itertools.product(*grid.values()):
        points += 1
        point = dict(zip(grid, values))
        config = ENGLISH.relevance.replace(**point)
        p, c = score(cases, Relevance(config, reranker, matcher))
        if p >= 0.8 and (best is None or c > best[1]):
            best = (p, c, point)
        gap = min(p - 0.8, c - 0.9)
        if nearest is None or gap > nearest[0]:
            nearest = (gap, p, c, point)
    assert nearest is not None
    return {
        "points": points,
        "at_precision_0.8": None
        if best is None
        else {"precision": round(best[0], 4), "completeness": round(best[1], 4), "config": best[2]},
        "nearest_both": {"precision": round(nearest[1], 4), "completeness": round(nearest[2], 4), "config": nearest[3]},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--only", nargs="*", default=(), help="vary only these parameters (others at default)")
    parser.add_argument(
        "--ceiling", action="store_true", help="per set, fitted to that set alone: the best it can do at precision 0.8"
    )
    parser.add_argument(
        "--write", type=Path, help="write the best point as a settings file (epmem/language/relevance-en.yaml)"
    )
    args = parser.parse_args(argv)
    sets = {str(path): asyncio.run(collect([path])) for path in args.paths}
    grid = {k: v for k, v in GRID.items() if not args.only or k in args.only}
    if args.ceiling and not args.only:
        grid = dict(CEILING_GRID)
    reranker = CachedReranker(shared_cross_encoder())
    matcher = CachedReranker(shared_late_interaction())

    def figures(config: RelevanceConfig) -> dict[str, tuple[float, float]]:
        return {name: score(cases, Relevance(config, reranker, matcher)) for name, cases in sets.items()}

    if args.ceiling:
        print(json.dumps({name: ceiling(cases, grid, reranker, matcher) for name, cases in sets.items()}, indent=2))
        return 0

    results = []
    for values in itertools.product(*grid.values()):
        config = ENGLISH.relevance.replace(**dict(zip(grid, values)))
        per = figures(config)
        worst = min(min(p - 0.8, c - 0.9) for p, c in per.values())
        results.append((worst, per, dict(zip(grid, values))))
    results.sort(key=lambda r: -r[0])

    def shown(per: dict[str, tuple[float, float]]) -> dict[str, dict[str, float]]:
        return {name: {"precision": round(p, 4), "completeness": round(c, 4)} for name, (p, c) in per.items()}

    print(
        json.dumps(
            {
                "cases": {name: len(cases) for name, cases in sets.items()},
                "default": shown(figures(ENGLISH.relevance)),
                "best": [{"per_set": shown(per), "config": cfg} for _, per, cfg in results[: args.top]],
            },
            indent=2,
        )
    )
    if args.write and results:
        write_best(
            args.write, ENGLISH.relevance.replace(**results[0][2]), "benchmarks/tools/tune_relevance.py", args.paths
        )
    return 0


def write_best(
    path: Path, config: RelevanceConfig, tool: str, sets: Sequence[Path], extends: str | None = None
) -> None:
    """``config`` as a language's settings file, with where it came from: ``tool``, the commit
    checked out, the ``sets`` it was picked on; with ``extends``, only what differs from that
    language's settings."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
    provenance = Provenance(tool=tool, commit=head.stdout.strip() or "unknown", sets=tuple(str(s) for s in sets))
    write_settings(path, config, provenance, (extends, get(extends).relevance) if extends else None)
    print(f"wrote {path}")


if __name__ == "__main__":
    raise SystemExit(main())
