"""Pick the relevance step's parameters on pipeline-mode memory, one scenario set left out in turn.

:mod:`benchmarks.tools.loso_relevance` fits the relevance step on gold memory: a few clean facts
per scenario. A deployed delegate never holds that. It holds what the extractor made of the
chats: greetings, asides and questions beside the news, and since "heard it from you" the facts
a contact heard said are open to them. This tool fits the same step on that memory. Each
scenario's chats go through the pipeline's ingest (rules backend, as ``--mode pipeline``);
then, once per (question, asker), recall and adjudication run through the real runtime with
the asker as the audience, and the cross-encoder's and late-interaction model's scores are
cached, so the grid runs the real :class:`Relevance` step only.

A chosen fact is scored by the gold facts it carries (their canary is in its words, as
``--mode pipeline`` counts a reply): completeness is the share of the asker's ``may`` facts
carried by what is chosen; a *leak* is a chosen fact carrying a gold fact the gold calculus does
not let every reader know; precision is the share of chosen facts that carry a ``may`` fact. For
each set S the point that keeps the precision the language's settings have on the other sets,
then has the fewest leaks there, then the highest completeness pooled over them, is scored on S,
which it never saw (a lower cut always tells more, and mostly what answers nothing: measured on
the eleven sets with English questions, floor 0.4 and veto -6.5 tell 198 facts more for 34 may
facts more, precision 0.389 -> 0.352). Prompt injections
are left out of the fit, as in loso_relevance. The composite rule and the reply's wording come
after this step and are not modelled: the figures rank points, the benchmark measures them::

    python -m benchmarks.tools.loso_pipeline ../shared/bench/examples ../shared/bench/storylines-v1 \\
        ../shared/bench/storylines-v2 benchmarks/scenarios/own benchmarks/scenarios/storylines ...
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import pickle
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks import pipeline
from benchmarks.scenario_answers import gold_readers
from benchmarks.scenario_bench import is_injection
from benchmarks.tools.tune_relevance import CachedReranker
from bot.config import Settings
from bot.runtime import Runtime, embedder_from_settings
from epmem.embedding.cross_encoder import shared_cross_encoder
from epmem.embedding.late_interaction import shared_late_interaction
from epmem.language import ENGLISH, of
from epmem.memory.recall import RecalledEvent
from epmem.policy.calculus import STRANGER
from epmem.policy.model import STRANGER_ID
from epmem.reply.projection import Projection, project
from epmem.reply.relevance import Choice, Relevance, Reranker
from epmem.scenario import asker_members, load_scenario, scenario_files

#: the parameters the fit may move: the cuts that decide how much of what recall found is said.
GRID: dict[str, Sequence[float]] = {
    "floor": (0.4, 0.5, 0.6),
    "veto": (-6.5, -5.0),
    "relative_cut": (0.7, 0.8),
}


@dataclass(frozen=True)
class PipelineCase:
    question: str
    events: list[RecalledEvent]
    storyline: Projection
    may: frozenset[str]
    #: the gold facts the readers may not know (every reader must be allowed).
    denied: frozenset[str]
    #: stored fact id -> the gold facts it carries.
    carries: Mapping[str, frozenset[str]]
    owner: str = ""
    asked: Mapping[str, Sequence[RecalledEvent]] = field(default_factory=dict)
    people: Sequence[Sequence[str]] = ()

    def choose(self, relevance: Relevance) -> Choice:
        return relevance.choose(self.question, self.events, self.storyline, self.owner, self.asked, self.people)


async def collect(path: Path) -> list[PipelineCase]:
    """Pipeline ingest, then recall and adjudication once per (question, asker)."""
    embedder = embedder_from_settings()
    cases: list[PipelineCase] = []
    for file in scenario_files([path]):
        scenario = load_scenario(file)
        may_know = gold_readers(scenario)
        with tempfile.TemporaryDirectory(prefix="epmem-loso-pipeline-") as tmp:
            settings = Settings(data_dir=Path(tmp), llm_backend="rules", model_chooses=False, reranker="off")
            runtime = await Runtime.open(settings, policy=scenario.effective_policy(), embedder=embedder)
            try:
                await pipeline.ingest(runtime, scenario, str(file))
                stored = await runtime.memory.all()
                carried: dict[str, set[str]] = {}
                for g in scenario.facts:
                    for f in pipeline.carriers(g, stored):
                        carried.setdefault(f.id, set()).add(g.id)
                carries = {f: frozenset(gs) for f, gs in carried.items()}
                rulebook = await runtime.engine.rulebook()
                people = [(c.name, *c.aliases) for c in runtime.policy.contacts.values()]
                for item in scenario.tasks.answer:
                    for asker, gold in item.askers.items():
                        members = asker_members(asker)
                        listener = members[0] if len(members) == 1 and members[0] != STRANGER_ID else None
                        events, asked = await runtime.engine.recall(item.question, listener)
                        audience = [STRANGER if m == STRANGER_ID else rulebook.recipient(m) for m in members]
                        cases.append(
                            PipelineCase(
                                item.question,
                                events,
                                project(events, rulebook, audience),
                                frozenset(gold.may),
                                frozenset(g.id for g in scenario.facts if not may_know(g.id, members)),
                                carries,
                                scenario.owner.name,
                                asked,
                                people,
                            )
                        )
            finally:
                await runtime.close()
    return cases


def cached(path: Path, folder: Path | None) -> list[PipelineCase]:
    """The set's cases, collected once per ``folder`` (ingest is most of the tool's time)."""
    if folder is None:
        return asyncio.run(collect(path))
    file = folder / (path.resolve().name + ".pickle")
    if file.exists():
        with file.open("rb") as fh:
            cases: list[PipelineCase] = pickle.load(fh)
            return cases
    cases = asyncio.run(collect(path))
    folder.mkdir(parents=True, exist_ok=True)
    with file.open("wb") as fh:
        pickle.dump(cases, fh)
    return cases


#: may facts carried, may facts, leaks, facts chosen, chosen facts that carry a may fact
Figures = tuple[int, int, int, int, int]


def figures(cases: Sequence[PipelineCase], relevance: Relevance) -> Figures:
    hits = may = leaks = said = said_may = 0
    for case in cases:
        carried: set[str] = set()
        for f in case.choose(relevance).chosen:
            carries = case.carries.get(f, frozenset())
            carried |= carries
            said += 1
            said_may += bool(carries & case.may)
        hits += len(carried & case.may)
        may += len(case.may)
        leaks += bool(carried & case.denied)
    return hits, may, leaks, said, said_may


def precision(per: Mapping[str, Figures], names: Sequence[str]) -> float:
    said = sum(per[n][3] for n in names)
    return sum(per[n][4] for n in names) / said if said else 1.0


def ranked(per: Mapping[str, Figures], names: Sequence[str], floor: float) -> tuple[bool, int, float]:
    """A point is first one that keeps the precision of the language's settings on ``names``
    (``floor``: completeness bought with facts that answer nothing is not a gain), then the one
    with the fewest leaks, then the most complete, pooled over ``names`` (by may facts)."""
    hits = sum(per[n][0] for n in names)
    may = sum(per[n][1] for n in names)
    keeps = precision(per, names) >= floor - 1e-9
    return keeps, -sum(per[n][2] for n in names), round(hits / may, 6) if may else 1.0


def moved(point: Mapping[str, float]) -> int:
    """How many parameters a point moves from the language's settings (ties go to fewer)."""
    return sum(getattr(ENGLISH.relevance, k) != v for k, v in point.items())


def shown(f: Figures) -> dict[str, float]:
    return {
        "completeness": round(f[0] / f[1], 4) if f[1] else 1.0,
        "precision": round(f[4] / f[3], 4) if f[3] else 1.0,
        "hits": f[0],
        "may": f[1],
        "leaks": f[2],
        "said": f[3],
    }


def together(per: Mapping[str, Figures], names: Sequence[str]) -> Figures:
    return tuple(sum(per[n][i] for n in names) for i in range(5))  # type: ignore[return-value]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--only", nargs="*", default=(), help="vary only these parameters of GRID")
    parser.add_argument("--cache", type=Path, help="keep the collected cases in this folder (one pickle per set)")
    parser.add_argument("--collect-only", action="store_true", help="collect (into --cache) and stop")
    args = parser.parse_args(argv)
    grid = {k: v for k, v in GRID.items() if not args.only or k in args.only}
    collected = {str(p): cached(p, args.cache) for p in args.paths}
    if args.collect_only:
        return 0
    # English questions only: the others are read with their own language's settings
    sets = {
        n: [c for c in cases if not is_injection(c.question) and of(c.question).code == ENGLISH.code]
        for n, cases in collected.items()
    }
    sets = {n: c for n, c in sets.items() if c}
    reranker: Reranker = CachedReranker(shared_cross_encoder())
    matcher: Reranker = CachedReranker(shared_late_interaction())
    points = []
    for values in itertools.product(*grid.values()):
        point = dict(zip(grid, values))
        relevance = Relevance(ENGLISH.relevance.replace(**point), reranker, matcher)
        points.append((point, {n: figures(c, relevance) for n, c in sets.items()}))
    names = list(sets)
    default = Relevance(None, reranker, matcher)
    base = {n: figures(c, default) for n, c in sets.items()}
    left_out: dict[str, dict[str, object]] = {}
    unseen: dict[str, Figures] = {}
    for name in names:
        rest = [n for n in names if n != name]
        floor = precision(base, rest)
        point, per = max(points, key=lambda p: (*ranked(p[1], rest, floor), -moved(p[0])))
        left_out[name] = {**shown(per[name]), "picked": point}
        unseen[name] = per[name]
    floor = precision(base, names)
    best, per_all = max(points, key=lambda p: (*ranked(p[1], names, floor), -moved(p[0])))
    print(
        json.dumps(
            {
                "cases": {n: len(c) for n, c in sets.items()},
                "grid": {k: list(v) for k, v in grid.items()},
                "default": {n: shown(f) for n, f in base.items()},
                "default_pooled": shown(together(base, names)),
                "left_out": left_out,
                "left_out_pooled": shown(together(unseen, names)),
                "fit_on_all": {
                    "picked": best,
                    "pooled": shown(together(per_all, names)),
                    "per_set": {n: shown(f) for n, f in per_all.items()},
                },
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
