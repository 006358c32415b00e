"""``loso_pipeline``: the relevance step fitted on what the extractor made of the chats."""

from __future__ import annotations

import asyncio

import pytest

from benchmarks.tools.loso_pipeline import collect, figures, ranked
from benchmarks.tools.tune_relevance import CachedReranker
from epmem.embedding import cross_encoder, late_interaction
from epmem.language import ENGLISH
from epmem.reply.relevance import Relevance
from testkit.runtime import OWN_SCENARIOS

pytestmark = pytest.mark.skipif(
    not (cross_encoder.available() and (late_interaction.model_dir() / "model.onnx").is_file()),
    reason="the relevance models are not installed",
)


def test_a_point_that_cuts_nothing_tells_more_and_answers_less_of_what_it_tells() -> None:
    cases = asyncio.run(collect(OWN_SCENARIOS / "team_reorg.yaml"))
    assert cases
    # what is open to each asker in pipeline mode is what they heard said: every carried may
    # fact counted once, never more than the asker may know
    reranker = CachedReranker(cross_encoder.shared_cross_encoder())
    matcher = CachedReranker(late_interaction.shared_late_interaction())
    default = figures(cases, Relevance(ENGLISH.relevance, reranker, matcher))
    loose = ENGLISH.relevance.replace(floor=0.0, veto=-99.0, min_recall=0.2, open_veto=-99.0, state_veto=-99.0)
    everything = figures(cases, Relevance(loose, reranker, matcher))
    hits, may, _, said, said_may = default
    assert 0 <= hits <= may and said_may <= said
    assert everything[0] >= hits and everything[3] >= said  # nothing cut: at least as much told
    per = {"default": default, "everything": everything}
    # a point that loses the settings' precision ranks below one that keeps it, whatever it tells
    floor = said_may / said
    assert everything[4] / everything[3] < floor  # what the cuts leave out is mostly not an answer
    assert ranked({"s": everything}, ["s"], floor) < ranked({"s": default}, ["s"], floor)
    assert ranked(per, ["default"], floor)[0]  # the settings keep their own precision
