"""Each rule of the calculus, by example, with the reason it reports."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from epmem.policy.calculus import STRANGER, Gate, Recipient, Rulebook, allowed_set, ceiling, judge, judge_composite
from epmem.memory.facts import Fact
from epmem.policy.model import Category, Contact, Policy, PolicyException

ANA = Recipient("ana", 2, "life")
BEN = Recipient("ben", 2, "work")
KIM = Recipient("kim", 3, "work")


def test_rules_fire_in_order_and_say_why() -> None:
    assert judge(Gate("f", 4, None, never_share=True, allow={"ana": "whitelist:ana"}), ANA).rule == 0
    blacklisted = judge(Gate("f", 4, None, allow={"ana": "whitelist:fam"}, deny={"ana": "blacklist:ana"}), ANA)
    assert (blacklisted.allowed, blacklisted.rule, blacklisted.exception) == (False, 1, "blacklist:ana")
    assert judge(Gate("f", 0, None), ANA) == judge(Gate("f", 0, None), ANA)
    assert not judge(Gate("f", 0, None), ANA).allowed
    opened = judge(Gate("f", 0, None, allow={"ana": "whitelist:family"}), ANA)
    assert (opened.allowed, opened.rule, opened.exception) == (True, 2, "whitelist:family")
    assert (judge(Gate("f", 4, "work"), ANA).allowed, judge(Gate("f", 4, "work"), ANA).rule) == (False, 3)
    assert judge(Gate("f", 4, "work"), BEN).allowed
    assert (judge(Gate("f", 2, None), KIM).allowed, judge(Gate("f", 2, None), KIM).rule) == (False, 4)
    assert judge(Gate("f", 3, None), KIM).allowed and judge(Gate("f", 3, None), KIM).rule == 5
    assert "rule 4" in judge(Gate("f", 2, None), KIM).explain()


def test_strangers_have_no_domain_and_level_four() -> None:
    assert judge(Gate("f", 4, None), STRANGER).allowed
    assert not judge(Gate("f", 4, "life"), STRANGER).allowed
    assert not judge(Gate("f", 3, None), STRANGER).allowed


def test_composite_ceiling() -> None:
    assert ceiling([Gate("a", 3, "work"), Gate("b", 4, None)]) == (3, "work")
    assert ceiling([Gate("a", 3, "work"), Gate("b", 4, "life")]) == (0, None)
    # f5 (L3 work) + f6 (L4): Ben and Kim pass, the life neighbour and the stranger do not
    gates = [Gate("f5", 3, "work"), Gate("f6", 4, None)]
    raj = Recipient("raj", 4, "life")
    assert allowed_set(gates, [BEN, KIM, raj, STRANGER]) == {"ben", "kim"}
    # L0 ceiling: whitelisted on one fact only is not enough
    leo = Recipient("leo", 1, "life")
    half = [Gate("f1", 2, "life"), Gate("f3", 0, None, allow={"leo": "whitelist:family"})]
    assert not judge_composite(half, leo).allowed
    both = [Gate("f1", 2, "life", allow={"leo": "x"}), Gate("f3", 0, None, allow={"leo": "y"})]
    assert judge_composite(both, leo).allowed
    with pytest.raises(ValueError):
        judge_composite([], leo)


def _policy() -> Policy:
    return Policy(
        contacts={
            "leo": Contact(name="Leo", level=1, domain="life"),
            "grace": Contact(name="Grace", level=1, domain="life"),
            "ben": Contact(name="Ben", level=2, domain="work"),
        },
        groups={"family": ["leo", "grace"]},
        categories={"finances": Category(level=0), "pw": Category(level=0, never_share=True)},
        default_category="finances",
    )


def test_rulebook_expands_groups_and_applies_exceptions_until_they_expire() -> None:
    now = datetime(2026, 6, 1, tzinfo=timezone.utc)
    fact = Fact(
        id="f4",
        text="deposit",
        event_id="e",
        category="finances",
        level=0,
        state="owner-set",
        whitelist=["family", "ben"],
        blacklist=["grace"],
    )
    book = Rulebook(_policy(), now=now)
    gate = book.gate(fact)
    assert {r for r in ("leo", "grace", "ben") if judge(gate, book.recipient(r)).allowed} == {"leo", "ben"}
    deny_ben = PolicyException(effect="deny", who=["ben"], category="finances", until=now + timedelta(days=1))
    assert not judge(Rulebook(_policy(), [deny_ben], now).gate(fact), book.recipient("ben")).allowed
    later = Rulebook(_policy(), [deny_ben], now + timedelta(days=2))
    assert judge(later.gate(fact), book.recipient("ben")).allowed
    reason = judge(Rulebook(_policy(), [deny_ben], now).gate(fact), book.recipient("ben")).exception
    assert reason is not None and reason.startswith("exception:")


def test_an_allow_on_a_truth_lets_its_readers_hear_its_cover_and_nothing_else() -> None:
    """The owner's ``/allow f1 to ben`` after Ben heard the cover: the cover must not then hold
    the truth back (epmem/reply/cumulative.py); a deny, and other facts, are unchanged."""
    now = datetime(2026, 6, 1, tzinfo=timezone.utc)
    truth = Fact(id="f1", text="tax debt", event_id="e", category="finances", level=0, state="owner-set")
    cover = Fact(
        id="f2",
        text="saving for a kitchen",
        event_id="e",
        version="cover",
        covers="f1",
        category="finances",
        level=2,
        domain="life",
        state="owner-set",
    )
    other = cover.model_copy(update={"id": "f3", "covers": "f9"})
    ben = Rulebook(_policy()).recipient("ben")
    assert not judge_composite([Rulebook(_policy(), now=now).gate(f) for f in (truth, cover)], ben).allowed
    opened = Rulebook(_policy(), [PolicyException(effect="allow", who=["ben"], fact="f1")], now)
    assert judge_composite([opened.gate(f) for f in (truth, cover)], ben).allowed
    assert not judge(opened.gate(other), ben).allowed
    closed = Rulebook(_policy(), [PolicyException(effect="deny", who=["leo"], fact="f1")], now)
    assert judge(closed.gate(cover), closed.recipient("leo")).allowed
