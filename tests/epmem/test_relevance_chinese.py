"""A Chinese question that shares no word with the fact that answers it (``stand_out``), with
the real runtime: the bilingual embedder's recall, the real adjudication, and the shared-words
stand-in for the cross-encoder (benchmarks/scenarios/zh-own/zh_own_01.yaml, gold mode)."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest

from benchmarks.tools.tune_relevance import Case, collect
from epmem.language import CHINESE, ENGLISH
from epmem.reply.relevance import Relevance

SCENARIO = Path(__file__).resolve().parents[2] / "benchmarks" / "scenarios" / "zh-own" / "zh_own_01.yaml"
APPETITE = "陈静最近胃口怎么样？上次聚餐看她什么都没吃"  # answered by her stomach (cover) or pregnancy
BONUS = "陈静今年年终奖拿了多少？"


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    return asyncio.run(collect([SCENARIO]))


def chosen(case: Case, stand_out: float = CHINESE.relevance.stand_out) -> set[str]:
    relevance = Relevance(languages={"zh": CHINESE.relevance.replace(stand_out=stand_out)})
    return set(relevance.choose(case.question, case.events, case.storyline, case.owner).chosen)


def test_the_event_recall_puts_well_above_the_rest_answers_when_no_word_is_shared(cases: list[Case]) -> None:
    asked = [c for c in cases if c.question == APPETITE and c.may]
    assert len(asked) == 3
    for case in asked:
        assert chosen(case) == case.may
        assert chosen(case, stand_out=math.inf) == set()  # words alone: "胃口" is in no fact


def test_no_event_standing_out_is_still_a_deflection(cases: list[Case]) -> None:
    # askers who may not know the bonus: recall's best allowed event (her offer) is not far
    # enough above the rest to stand out, so nothing is said
    asked = [c for c in cases if c.question == BONUS and not c.may]
    assert asked
    for case in asked:
        assert chosen(case) == set()
    # and an asker with one event allowed gets no answer from it: nothing to stand out from
    alone = [c for c in cases if c.question == APPETITE and not c.may]
    assert alone and all(len({d.fact.event_id for d in c.storyline.used}) == 1 for c in alone)
    assert all(chosen(c) == set() for c in alone)


def test_english_questions_do_not_stand_out() -> None:
    assert ENGLISH.relevance.stand_out == math.inf and math.isfinite(CHINESE.relevance.stand_out)
