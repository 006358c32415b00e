"""The oracle owner answers for every fact a question shows, never looser than any of them."""

from __future__ import annotations

from benchmarks.consult_oracle import message_about, shown_about
from benchmarks.review_oracle import answer_for, strictest, truth_of_cover
from epmem.memory.facts import Fact
from epmem.policy.calculus import STRANGER, Rulebook, judge
from epmem.policy.model import STRANGER_ID
from epmem.scenario import GoldFact, Scenario, load_scenario
from testkit.runtime import OWN_SCENARIOS, example

SCENARIO = load_scenario(OWN_SCENARIOS / "medical_leave.yaml")


def extracted(fid: str, text: str, session: str) -> Fact:
    return Fact(
        id=fid,
        text=text,
        event_id=f"e-{fid}",
        session_id=session,
        state="annotated",
        category="health",
        level=0,
        domain="life",
    )


def audience(scenario: Scenario, fact: Fact) -> frozenset[str]:
    policy = scenario.effective_policy()
    rb = Rulebook(policy)
    people = [STRANGER, *(rb.recipient(c) for c in policy.contacts if c != STRANGER_ID)]
    gate = rb.gate(fact)
    return frozenset(r.id for r in people if judge(gate, r).allowed)


def as_fact(gold: GoldFact) -> Fact:
    return gold.to_fact()


def test_one_fact_gets_its_gold_annotation_and_a_fragment_is_kept_private() -> None:
    diagnosis = extracted("x1", "It's atrial fibrillation.", "s7")
    answer = answer_for(diagnosis, SCENARIO)
    assert (answer.kind, answer.category, answer.level, answer.whitelist) == (
        "set",
        "health",
        1,
        ("family", "sofia", "hannah"),
    )
    assert answer_for(extracted("x2", "Ablation on 2 June.", "s7"), SCENARIO).kind == "private"


def test_facts_shown_together_get_only_the_audience_they_share() -> None:
    diagnosis = extracted("x1", "It's atrial fibrillation.", "s1")
    cost = extracted("x2", "We pay about €4,800 after the deductible.", "s2")
    launch = extracted("x3", "The checkout redesign launch moves.", "s4")
    f1, f4, f5 = (SCENARIO.fact(i) for i in ("f1", "f4", "f5"))
    # one of them has exactly the audience both share: its annotation
    answer = answer_for(diagnosis, SCENARIO, [cost])
    assert (answer.category, answer.level, answer.whitelist, answer.blacklist) == (
        "finances",
        0,
        ("family",),
        ("marco",),
    )
    # none has: level 0 with exactly the shared audience (Hannah: f1 whitelists her, f5 is work news)
    both = strictest([f1, f5], SCENARIO)
    assert (both.level, both.whitelist) == (0, ["hannah"])
    shared = audience(SCENARIO, as_fact(f1)) & audience(SCENARIO, as_fact(f5))
    assert audience(SCENARIO, as_fact(both)) == shared == {"hannah"}
    answer = answer_for(diagnosis, SCENARIO, [launch])
    assert (answer.level, answer.whitelist) == (0, ("hannah",))


def test_a_cover_tied_to_the_wrong_truth_is_named_the_cover_of_the_right_one() -> None:
    """The oracle reads the consultation's "covers" line as the owner would: a stored cover of
    the right truth is left alone; one the extractor tied to the message before is named again."""
    fundraise = load_scenario(OWN_SCENARIOS / "startup_fundraise.yaml")
    truth = extracted("s1-f1", "Northwind Ventures just sent the term sheet! $14M pre-money.", "s1")
    before = extracted("s1-f2", "That's above what we hoped.", "s1")
    story = "Aisha and others are in early conversations with investors about the next round."
    wrong = extracted("s1-f4", story, "s1").model_copy(update={"version": "cover", "covers": before.id})
    right = wrong.model_copy(update={"covers": truth.id})
    plain = wrong.model_copy(update={"version": "truth", "covers": None})
    stored = [truth, before]
    assert truth_of_cover(wrong, fundraise, [*stored, wrong]) == truth
    assert truth_of_cover(plain, fundraise, [*stored, plain]) == truth
    assert truth_of_cover(right, fundraise, [*stored, right]) is None
    assert truth_of_cover(truth, fundraise, stored) is None  # a truth is no one's cover


def test_a_consultation_is_useful_on_the_question_or_off_it_by_the_gold_of_that_question() -> None:
    """``--consult`` counts what each consultation showed the owner (consult_oracle.Answered):
    a fact the asker may know is useful; one only other readers may know, or none, is on the
    question (the owner's "keep private" gains nothing); a fact of another matter is off it."""
    house = load_scenario(example("house_and_bonus.yaml"))
    offer = extracted("s1-f1", "We made an offer on the house on Elm Road!", "s1")
    space = extracted("s1-f2", "Thinking about moving somewhere with more space.", "s1")
    launch = extracted("s2-f1", "Also: the Atlas launch moves to 12 May.", "s2")
    chatter = extracted("s2-f2", "Understood.", "s2")
    assert shown_about(house, "bench-0-ana", [offer]) == "useful"
    assert shown_about(house, "bench-0-raj", [offer]) == "on_question"  # f1 is his must-not
    assert shown_about(house, "bench-0-raj", [chatter, space]) == "useful"
    assert shown_about(house, "bench-0-ana+raj", [space]) == "useful"
    assert shown_about(house, "bench-0-ana", [launch]) == shown_about(house, "bench-0-leo", [chatter]) == "off_question"
    assert shown_about(house, "bench-2-ana", [launch]) == "on_question"
    assert shown_about(house, "bench-2-kim", [launch]) == "useful"


def test_a_message_about_several_events_counts_once_useful_when_any_event_is() -> None:
    """One message to the owner about several events (consult_oracle.Answered): useful when any
    of its events is, on the question when none is but one is on it, else off it."""
    assert message_about(["off_question", "useful", "on_question"]) == "useful"
    assert message_about(["off_question", "on_question"]) == "on_question"
    assert message_about(["off_question"]) == message_about([]) == "off_question"
