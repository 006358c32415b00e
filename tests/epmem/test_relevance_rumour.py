"""A rumour put as a question is answered only by what speaks to its claim (epmem/reply/rumour.py).
The cross-encoder is scripted to say every fact answers, as the real one did for the knee
operation against the heart-surgery rumour: the rule after it is what is under test."""

from __future__ import annotations

import pytest

from epmem.language import ENGLISH
from epmem.reply.relevance import Relevance, asks_yes_or_no
from epmem.reply.rumour import claim_words, is_rumour, speaks_to
from tests.epmem.test_relevance_veto import Scripted, storyline


@pytest.mark.parametrize(
    ("question", "rumour"),
    [
        ("Is it true Marcus is having heart surgery over the summer? Someone said he saw a cardiologist.", True),
        ("Madam, people are saying you want to sell the Surulere house. Is it true?", True),
        ("Is that true about the house?", True),
        ("Is it true Cel is leaving for abroad? What's the plan?", False),  # a second question of its own
        ("Is Marcus having surgery?", False),
        ("How true is the forecast?", False),
    ],
)
def test_a_rumour_is_a_claim_put_up_for_confirmation_and_nothing_else(question: str, rumour: bool) -> None:
    assert is_rumour(question, asks_yes_or_no) is rumour


def test_the_claim_is_its_common_words_not_who_said_it_or_when() -> None:
    claim = claim_words(
        "Is it true Jonas and Linnea are secretly renewing their wedding vows that weekend? Karl mentioned a celebrant."
    )
    assert claim == {"renew", "wedd", "vow", "celebrant"}
    assert claim_words("Is it true you're putting solar panels on the north 80?") >= {"solar", "north", "80"}


def test_a_shared_stem_speaks_to_the_claim_and_a_near_topic_does_not() -> None:
    heart = claim_words("Is it true Marcus is having heart surgery? Someone said he sees a cardiologist.")
    assert not speaks_to(heart, ["Marcus is having a minor keyhole knee operation on 22 May."])
    assert speaks_to(heart, ["Marcus has surgery on his heart valve in July."])
    pregnant = claim_words("Is it true Chloe is pregnant and that's why the engagement ended?")
    assert speaks_to(pregnant, ["Chloe told her sister about the pregnancy."])
    assert not speaks_to(pregnant, ["Chloe and Josh have called off their wedding."])


def test_a_false_rumour_gets_the_deflection_and_the_audit_says_why() -> None:
    events, proj = storyline(
        ("f1", "e1", "Marcus is having a minor keyhole knee operation on 22 May.", 0.8),
        ("f2", "e2", "Marcus had a week off sick in March.", 0.6),
    )
    relevance = Relevance(ENGLISH.relevance, Scripted({"knee": 3.0, "sick": 1.0}))
    question = "Is it true Marcus is having heart surgery over the summer? Someone said he saw a cardiologist."
    choice = relevance.choose(question, events, proj)
    assert choice.chosen == ()
    assert choice.left_out["f1"] == "a rumour: shares no word of its claim"
    # the same fact answers the same subject asked plainly: only the rumour is held to its claim
    assert "f1" in relevance.choose("Is Marcus having an operation?", events, proj).chosen


def test_a_true_rumour_is_answered_by_the_event_that_says_so() -> None:
    events, proj = storyline(
        ("f1", "e1", "Dale and Barb agreed to lease the north 80 acres to Prairie Sun for a solar farm.", 0.7),
        ("f2", "e2", "Dale is replacing the grain dryer on the south quarter.", 0.65),
    )
    relevance = Relevance(ENGLISH.relevance, Scripted({"solar": 4.0, "dryer": 3.5}))
    choice = relevance.choose("Is it true you're putting solar panels on the north 80?", events, proj, owner="Dale")
    assert choice.chosen == ("f1",) and "f2" in choice.left_out
