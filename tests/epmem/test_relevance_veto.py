"""The relevance step fails closed: what the cross-encoder says does not answer is left out,
and the audit names it with the reason. The reranker here is scripted (it stands for the
model, whose real scores are exercised in test_reply_choice.py): the rules around it are
what is under test."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from epmem.language import ENGLISH
from epmem.memory.facts import Fact
from epmem.memory.recall import Recalled, RecalledEvent
from epmem.reply.projection import FactDecision, Projection
from epmem.reply.relevance import Relevance


class Scripted:
    """A reranker whose logit for a text is looked up by a word in it (0 when none matches)."""

    name = "scripted"

    def __init__(self, logits: dict[str, float]) -> None:
        self.logits = logits
        self.read: list[str] = []

    def score(self, question: str, texts: Sequence[str], events: Sequence[str] | None = None) -> np.ndarray:
        self.read.extend(texts)
        return np.array([next((v for k, v in self.logits.items() if k in t), 0.0) for t in texts], dtype=np.float32)


def storyline(*rows: tuple[str, str, str, float]) -> tuple[list[RecalledEvent], Projection]:
    """(fact id, event id, text, recall score) for facts the audience may all know."""
    facts = [
        (Fact(id=f, text=t, event_id=e, category="daily_life", level=3, state="owner-set"), s) for f, e, t, s in rows
    ]
    events = [
        RecalledEvent(
            e, max(s for f, s in facts if f.event_id == e), tuple(Recalled(f, s) for f, s in facts if f.event_id == e)
        )
        for e in dict.fromkeys(f.event_id for f, _ in facts)
    ]
    return events, Projection(tuple(FactDecision(f, s, True, (), used=True) for f, s in facts))


def test_a_fact_the_cross_encoder_says_does_not_answer_is_left_out_and_named() -> None:
    events, proj = storyline(
        ("f1", "e1", "The school sports day moved to 5 June.", 0.75), ("f2", "e2", "Book club meets on the 12th.", 0.45)
    )
    relevance = Relevance(ENGLISH.relevance, Scripted({"sports": -9.8, "Book": -10.4}))
    choice = relevance.choose("Is the school amalgamating with the boys' school?", events, proj)
    assert choice.kind == "yesno" and choice.chosen == ()
    assert set(choice.left_out) == {"f1", "f2"} and "does not answer" in choice.left_out["f1"]
    assert {"fact": "f1", "why": choice.left_out["f1"]} in choice.audit()["left_out"]  # type: ignore[operator]


def test_a_fact_that_answers_is_kept_and_a_weaker_event_is_not() -> None:
    events, proj = storyline(
        ("f1", "e1", "Kenji is closing the lunch service on Saturday.", 0.97),
        ("f2", "e2", "The sanma delivery is on the 20th.", 0.45),
    )
    relevance = Relevance(ENGLISH.relevance, Scripted({"lunch": 6.7, "sanma": -2.0}))
    choice = relevance.choose("Are you open for lunch on Saturday?", events, proj)
    assert choice.chosen == ("f1",) and not choice.left_out


def test_below_the_floor_nothing_is_said_and_the_audit_says_why() -> None:
    events, proj = storyline(("f1", "e1", "Nora joined a sailing club.", 0.45))
    choice = Relevance(ENGLISH.relevance, Scripted({"sailing": -0.4})).choose(
        "Did Nora get a promotion at work?", events, proj
    )
    assert choice.chosen == () and "floor" in choice.left_out["f1"]


def test_a_state_question_keeps_what_is_near_and_drops_what_the_model_is_sure_is_not() -> None:
    events, proj = storyline(
        ("f1", "e1", "Sean got a job at the Home Depot, starting Monday.", 0.58),
        ("f2", "e2", "Sean's tomatoes are finally red.", 0.52),
        ("f3", "e3", "Sean's mother's knee operation is on April 2.", 0.70),
    )
    relevance = Relevance(ENGLISH.relevance, Scripted({"Home Depot": -1.3, "tomatoes": -11.2, "knee": -11.0}))
    choice = relevance.choose("How's Sean getting on?", events, proj)
    assert choice.kind == "state"
    # f3: the model says no, but its recall is strong; f2: weak recall and a sure no
    assert set(choice.chosen) == {"f3", "f1"} and set(choice.left_out) == {"f2"}


def test_without_a_cross_encoder_nothing_is_vetoed() -> None:
    events, proj = storyline(("f1", "e1", "Kenji is closing the lunch service on Saturday.", 0.97))
    choice = Relevance(ENGLISH.relevance, None).choose("Are you open for lunch on Saturday?", events, proj)
    assert choice.chosen == ("f1",) and choice.reranked == 0 and not choice.left_out


def test_the_cross_encoder_reads_at_most_rerank_limit_facts() -> None:
    rows = [(f"f{i}", f"e{i}", f"Fact number {i} about lunch.", 0.9 - i * 0.01) for i in range(12)]
    events, proj = storyline(*rows)
    model = Scripted({})
    Relevance(ENGLISH.relevance.replace(rerank_limit=5), model).choose("Is lunch on?", events, proj)
    assert len(model.read) == 5


def test_a_fact_the_cross_encoder_says_answers_passes_a_low_recall_floor() -> None:
    """Recall 0.45 with a positive logit: its relevance is under the floor, but it answers."""
    events, proj = storyline(
        ("f1", "e1", "Hana is off on 17-18 April for a family memorial service in Kyoto.", 0.45),
        ("f2", "e2", "Hana passed her kyudo 2nd dan grading.", 0.41),
    )
    relevance = Relevance(ENGLISH.relevance, Scripted({"memorial": 0.7, "kyudo": -11.0}))
    choice = relevance.choose("Where will you be that weekend?", events, proj)  # no day named: the logit alone
    assert choice.scores["f1"] < ENGLISH.relevance.floor and choice.chosen == ("f1",)
    assert "f2" in choice.left_out


def test_a_fact_far_from_the_question_is_said_only_when_the_cross_encoder_is_sure() -> None:
    """Below the kind's least recall, a fact is rescued by a sure logit; an unsure one is left
    out and named (recall's floor lets both through; relevance decides)."""
    events, proj = storyline(
        ("f1", "e1", "Elif is doing a third IVF cycle, with the egg retrieval on 22 May.", 0.33),
        ("f2", "e2", "Elif's cousin is visiting in May.", 0.30),
        ("f3", "e3", "Elif repainted the kitchen.", 0.10),
    )
    config = ENGLISH.relevance.replace(rescue_recall=0.2, rescue_logit=2.0)
    model = Scripted({"IVF": 4.5, "cousin": 1.0, "kitchen": 9.0})
    choice = Relevance(config, model).choose("Why is Elif off on 22-23 May?", events, proj)
    assert choice.chosen == ("f1",)
    assert "recall 0.30" in choice.left_out["f2"] and "not sure" in choice.left_out["f2"]
    assert "f3" not in choice.left_out and not any("kitchen" in t for t in model.read)  # below rescue_recall
    off = Relevance(ENGLISH.relevance.replace(rescue_recall=0.4), Scripted({"IVF": 4.5})).choose(
        "Why is Elif off on 22-23 May?", events, proj
    )
    assert off.chosen == ()


def test_a_state_question_tells_the_rest_of_an_event_it_tells() -> None:
    """f2 is under the relative cut, but it is the same event as f1, which is told."""
    events, proj = storyline(
        ("f1", "e1", "Mateus owes two months of rent.", 0.80),
        ("f2", "e1", "The landlord gave Mateus until the 30th.", 0.45),
        ("f3", "e2", "Mateus bought a new bike.", 0.45),
    )
    model = Scripted({})
    whole = Relevance(ENGLISH.relevance.replace(complete_events=True), model).choose("Is Mateus okay?", events, proj)
    assert whole.kind == "state" and set(whole.chosen) == {"f1", "f2"}
    part = Relevance(ENGLISH.relevance.replace(complete_events=False), model).choose("Is Mateus okay?", events, proj)
    assert part.chosen == ("f1",)


def _cover_and_truth(*others: tuple[str, str, str, float]) -> tuple[list[RecalledEvent], Projection]:
    """A secret hearing (f1, which the asker may not know) covered by a dentist visit (f2), and
    ``others`` the asker may know."""
    truth = Fact(
        id="f1",
        text="Thaís gave evidence at the hearing about the missing ampoules.",
        event_id="e1",
        category="work",
        level=1,
        state="owner-set",
    )
    cover = Fact(
        id="f2",
        text="Thaís had root canal treatment at the dentist on 14 April.",
        event_id="e1",
        category="work",
        level=3,
        state="owner-set",
        version="cover",
        covers="f1",
    )
    told, proj = storyline(*others)
    e1 = RecalledEvent("e1", 0.9, (Recalled(truth, 0.9), Recalled(cover, 0.4)))
    return [e1, *told], Projection((FactDecision(cover, 0.4, True, (), used=True), *proj.decisions))


def test_a_cover_stands_in_for_its_truth_not_for_an_answer_the_asker_may_be_told() -> None:
    model = Scripted({"evidence": 6.0, "reported": 3.0, "dentist": -8.0})
    relevance = Relevance(ENGLISH.relevance, model)
    question = "Is it true Thaís went to the police about the missing ampoules?"
    # nothing else answers: the cover is the owner's answer to a question about the secret
    events, proj = _cover_and_truth()
    assert relevance.choose(question, events, proj).chosen == ("f2",)
    # a fact the asker may know answers by its own words: the cover, which does not, is not told
    events, proj = _cover_and_truth(("f3", "e2", "Thaís reported Karla over the missing ampoules.", 0.7))
    choice = relevance.choose(question, events, proj)
    assert choice.chosen == ("f3",), choice.left_out
    assert "f2" in choice.left_out


def test_a_fact_that_only_repeats_the_question_is_no_answer_and_sets_no_cut() -> None:
    """A question "How is Chloé? She looked thin at Sunday lunch." is not answered by "Chloé looked so thin
    at Sunday lunch." (the asker's own words, stored when they said them): told back it says
    nothing, and as the question's nearest fact it set the cut of a state question, under which
    what does answer it fell. The audit names why it was left out."""
    events, proj = storyline(
        ("f1", "e1", "Chloé looked so thin at Sunday lunch.", 0.95),
        ("f2", "e2", "Chloé is tired from a growth spurt, the doctor says it is normal.", 0.70),
    )
    choice = Relevance(ENGLISH.relevance, Scripted({})).choose(
        "How is Chloé? She looked thin at Sunday lunch.", events, proj
    )
    assert choice.chosen == ("f2",)
    assert "says nothing" in choice.left_out["f1"]
    # a yes/no question is answered by the fact that repeats it; what the asker stated is not
    events, proj = storyline(
        ("f1", "e1", "Marcus is moving to Leeds in May.", 0.95), ("f2", "e2", "Marcus got a new job.", 0.60)
    )
    choice = Relevance(ENGLISH.relevance, Scripted({"Leeds": 4.0, "job": 1.0})).choose(
        "Is Marcus moving to Leeds in May?", events, proj
    )
    assert "f1" in choice.chosen and "f1" not in choice.left_out
    choice = Relevance(ENGLISH.relevance, Scripted({"Leeds": 4.0, "job": 3.0})).choose(
        "Marcus got a new job. Is he moving to Leeds in May?", events, proj
    )
    assert choice.chosen == ("f1",) and "says nothing" in choice.left_out["f2"]
