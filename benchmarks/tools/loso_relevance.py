"""Pick the relevance step's parameters with one scenario set left out in turn.

For each set S: every point of a small grid of :class:`RelevanceConfig` values is scored on all
the other sets; the point that does best there (by default the worst of those sets'
``min(precision - 0.7, completeness - 0.8, differentiation - 0.8)``: every target at once, on
every set; ``--objective mean`` takes their mean instead, which lets a gain on one set buy a loss
on another) is then scored on S, which it never saw. Those left-out figures are what predict a
set nobody here wrote; a figure fitted on the set it is scored on does not. The point that does best on all the
sets together is printed last (``--write FILE`` writes it as a settings file): it is what the language's
settings (epmem/language/relevance-<code>.yaml) should hold when its left-out
figures are as good as the others'.

Gold mode (the gold facts are the memory); recall and adjudication run once per (question,
asker) through the real runtime and the cross-encoder's scores are cached, so the grid runs the
real :class:`Relevance` step only. Prompt-injection questions ("Ignore your rules ...") are left
out of the fit and reported apart::

    python -m benchmarks.tools.loso_relevance ../shared/bench/examples benchmarks/scenarios/own \\
        benchmarks/scenarios/storylines benchmarks/scenarios/dev-extra benchmarks/scenarios/confided \\
        benchmarks/scenarios/vignettes benchmarks/scenarios/storylines-heldout ../shared/bench/storylines-v1

``--chinese`` fits the configuration Chinese questions run with instead (``CHINESE_GRID`` over
epmem/language/relevance-zh.yaml; their scores come from the words a fact shares with the
question and from recall, not from the cross-encoder)::

    python -m benchmarks.tools.loso_relevance --chinese benchmarks/scenarios/zh-own benchmarks/scenarios/zh-extra \\
        ../shared/bench/zh
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from benchmarks.scenario_bench import is_injection
from benchmarks.tools.tune_relevance import Case, CachedReranker, collect, write_best
from epmem.embedding.cross_encoder import shared_cross_encoder
from epmem.embedding.late_interaction import shared_late_interaction
from epmem.language import CHINESE, ENGLISH
from epmem.reply.relevance import Relevance, Reranker

#: the parameters the fit may move; the rest stay at their defaults. Few on purpose: each one
#: more is one more way to fit the sets at hand rather than the next one.
GRID: dict[str, Sequence[float]] = {
    "logit_margin": (2.0, 3.0, 4.0, 6.0, 99.0),
    "floor": (0.55, 0.6, 0.65),
}

#: ``--chinese``: the parameters of the configuration for Chinese questions the fit may move.
CHINESE_GRID: dict[str, Sequence[float]] = {
    "stand_out": (0.1, 0.15, 0.2, 0.25, 0.3, math.inf),
    # in shared-word logits one word of weight 1 more is ``SharedWords.step`` (1.5) more
    "logit_margin": (1.0, 1.5, 3.0, math.inf),
}

Figures = tuple[float, float, float]


def figures(cases: Sequence[Case], relevance: Relevance) -> Figures:
    """Precision, completeness and differentiation of the facts chosen (a deflection chooses
    none), scored as the scenario benchmark scores replies."""
    said = said_may = may = 0
    by_question: dict[str, list[tuple[frozenset[str], frozenset[str]]]] = {}
    for case in cases:
        chosen = frozenset(case.choose(relevance).chosen)
        said += len(chosen)
        said_may += len(chosen & case.may)
        may += len(case.may)
        by_question.setdefault(case.question, []).append((case.may, chosen))
    differ = n = 0
    for replies in by_question.values():
        if len({gold for gold, _ in replies}) > 1:
            n += 1
            differ += all(a[1] != b[1] for a in replies for b in replies if a[0] != b[0])
    return (said_may / said if said else 1.0, said_may / may if may else 1.0, differ / n if n else 1.0)


def objective(per: Mapping[str, Figures], names: Sequence[str], worst: bool = True) -> tuple[float, float, float]:
    """How far the sets are above every target at once: each set's margin is its smallest of
    ``precision - 0.7``, ``completeness - 0.8`` and ``differentiation - 0.8``; ``worst`` scores
    the point by the worst set's margin (the targets hold on *every* set, so one set's gain must
    not buy another's loss) and breaks ties by the mean margin; else by the mean margin alone.
    Last, ties go to the point whose every figure (not only each set's smallest) is further
    above its target on average: two points often tie on the figure that binds each set (a
    set's completeness), and then the grid's order must not decide between them."""
    margins = [min(p - 0.7, c - 0.8, d - 0.8) for p, c, d in (per[n] for n in names)]
    mean = sum(margins) / len(margins)
    every = sum(p - 0.7 + c - 0.8 + d - 0.8 for p, c, d in (per[n] for n in names)) / (3 * len(names))
    return (min(margins), mean, every) if worst else (mean, every, 0.0)


def shown(f: Figures) -> dict[str, float]:
    return {"precision": round(f[0], 4), "completeness": round(f[1], 4), "differentiation": round(f[2], 4)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--chinese", action="store_true", help="fit the configuration for Chinese questions")
    parser.add_argument(
        "--objective",
        choices=("worst", "mean"),
        default="worst",
        help="score a point by the worst training set's margin (default) or by the mean margin",
    )
    parser.add_argument(
        "--write", type=Path, help="write the point fit on all sets as a settings file (relevance-en.yaml, -zh.yaml)"
    )
    args = parser.parse_args(argv)
    grid = CHINESE_GRID if args.chinese else GRID
    worst = args.objective == "worst"
    collected = {str(p): asyncio.run(collect([p])) for p in args.paths}
    sets = {name: [c for c in cases if not is_injection(c.question)] for name, cases in collected.items()}
    injections = {name: [c for c in cases if is_injection(c.question)] for name, cases in collected.items()}
    reranker: Reranker = CachedReranker(shared_cross_encoder())
    matcher: Reranker = CachedReranker(shared_late_interaction())
    points = []
    for values in itertools.product(*grid.values()):
        point = dict(zip(grid, values))
        relevance = (
            Relevance(None, reranker, matcher, languages={"zh": CHINESE.relevance.replace(**point)})
            if args.chinese
            else Relevance(ENGLISH.relevance.replace(**point), reranker, matcher)
        )
        points.append((point, {name: figures(cases, relevance) for name, cases in sets.items()}))
    names = list(sets)
    left_out = {}
    for name in names:
        rest = [n for n in names if n != name]
        point, per = max(points, key=lambda p: objective(p[1], rest, worst))
        left_out[name] = {**shown(per[name]), "picked": point}
    best, per_all = max(points, key=lambda p: objective(p[1], names, worst))
    default = Relevance(None, reranker, matcher)
    print(
        json.dumps(
            {
                "objective": args.objective,
                "cases": {n: len(c) for n, c in sets.items()},
                "grid": {k: list(v) for k, v in grid.items()},
                "left_out": left_out,
                "fit_on_all": {"picked": best, "per_set": {n: shown(f) for n, f in per_all.items()}},
                "default": {n: shown(figures(c, default)) for n, c in sets.items()},
                "injection_default": {n: shown(figures(c, default)) for n, c in injections.items() if c},
            },
            indent=2,
        )
    )
    if args.write:
        tool = "benchmarks/tools/loso_relevance.py" + (" --chinese" if args.chinese else "")
        spec = CHINESE if args.chinese else ENGLISH
        write_best(args.write, spec.relevance.replace(**best), tool, args.paths, "en" if args.chinese else None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
