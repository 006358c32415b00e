"""``tune_relevance --ceiling``: per set, the grid point that comes closest, fitted to that set."""

from __future__ import annotations

import asyncio

import pytest

from benchmarks.tools.tune_relevance import CachedReranker, ceiling, collect, score
from epmem.language import ENGLISH
from epmem.embedding import cross_encoder, late_interaction
from epmem.reply.relevance import Relevance
from testkit.runtime import OWN_SCENARIOS

pytestmark = pytest.mark.skipif(
    not (cross_encoder.available() and (late_interaction.model_dir() / "model.onnx").is_file()),
    reason="the relevance models are not installed",
)


def test_the_ceiling_is_the_best_point_of_its_grid() -> None:
    cases = asyncio.run(collect([OWN_SCENARIOS / "team_reorg.yaml"]))
    reranker = CachedReranker(cross_encoder.shared_cross_encoder())
    matcher = CachedReranker(late_interaction.shared_late_interaction())
    grid = {"floor": (0.6, 5.0), "veto": (-12.0, -5.0)}
    got = ceiling(cases, grid, reranker, matcher)
    figures = {}
    for floor in grid["floor"]:
        for veto in grid["veto"]:
            figures[(floor, veto)] = score(
                cases, Relevance(ENGLISH.relevance.replace(floor=floor, veto=veto), reranker, matcher)
            )
    assert got["points"] == 4
    best = max((c for p, c in figures.values() if p >= 0.8), default=None)
    reported = got["at_precision_0.8"]
    if best is None:
        assert reported is None
    else:
        assert isinstance(reported, dict) and reported["completeness"] == round(best, 4)
    nearest = max(min(p - 0.8, c - 0.9) for p, c in figures.values())
    near = got["nearest_both"]
    assert isinstance(near, dict)
    assert min(near["precision"] - 0.8, near["completeness"] - 0.9) == pytest.approx(nearest, abs=1e-3)
    # the grid's points differ, so picking the best of them is a real choice
    assert len(set(figures.values())) > 1
