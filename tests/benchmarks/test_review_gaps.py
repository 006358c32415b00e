"""The ideal owner of ``review_gaps --bound``: the most permit tasks a question budget can fix."""

from __future__ import annotations

from benchmarks.tools.review_gaps import Task, classify, ideal_owner, most_fixable, needed, permit_tasks
from epmem.memory.facts import Fact
from epmem.policy.calculus import STRANGER, Rulebook
from epmem.policy.model import STRANGER_ID
from epmem.scenario import load_scenario
from testkit.runtime import OWN_SCENARIOS

SCENARIO = load_scenario(OWN_SCENARIOS / "medical_leave.yaml")


def task(*needs: str, exact: bool = False, fixable: bool = True) -> Task:
    return Task(exact, frozenset(needs), fixable)


def test_a_question_shared_by_several_tasks_is_asked_first() -> None:
    tasks = [task(exact=True), task("p", "q"), task("p"), task("q"), task("r", "s", "t")]
    assert ideal_owner(tasks, 2) == (4, 2)
    assert ideal_owner(tasks, 1) == (2, 1)
    assert ideal_owner(tasks, 0) == (1, 0)
    assert ideal_owner(tasks, 5) == (5, 5)
    # the ceiling counts each answer for every task that needs it: p and q complete three tasks
    # together but are each needed twice, so two answers may reach no more than 1 + 2 + 2
    assert most_fixable(tasks, 2) == 5
    assert most_fixable(tasks, 0) == 1
    for budget in range(6):
        assert ideal_owner(tasks, budget)[0] <= most_fixable(tasks, budget)


def test_a_task_no_answer_can_fix_is_never_counted() -> None:
    tasks = [task("a", fixable=False), task("b")]
    assert ideal_owner(tasks, 10) == (1, 1)
    assert needed(tasks, 0.5, 4) == 25.0
    assert needed(tasks, 0.9, 4) is None


def test_the_questions_needed_are_the_fewest_that_reach_the_target() -> None:
    tasks = [task(exact=True), task("p", "q"), task("p"), task("q"), task("r", "s", "t")]
    assert needed(tasks, 0.8, 10) == 20.0
    assert needed(tasks, 1.0, 10) == 50.0
    assert needed(tasks, 0.2, 10) == 0.0


def test_a_task_too_dear_for_the_budget_does_not_block_cheaper_ones() -> None:
    tasks = [task("a", "b", "c"), task("d"), task("e")]
    assert ideal_owner(tasks, 2) == (2, 2)


def kinds_of(facts: list[Fact]) -> dict[str, str]:
    policy = SCENARIO.effective_policy()
    rulebook = Rulebook(policy)
    people = [STRANGER, *(rulebook.recipient(c) for c in policy.contacts if c != STRANGER_ID)]
    return {g.id: classify(g, facts, rulebook, people)[0] for g in SCENARIO.facts}


def test_gold_facts_as_memory_leave_nothing_to_fix() -> None:
    facts = [g.to_fact() for g in SCENARIO.facts]
    kinds = kinds_of(facts)
    assert set(kinds.values()) == {"right"}
    tasks = permit_tasks(SCENARIO, facts, kinds)
    assert tasks and all(t.exact and not t.needs for t in tasks)
    assert ideal_owner(tasks, 0) == (len(tasks), 0)


def test_a_fact_kept_from_everyone_makes_its_tasks_need_it() -> None:
    gold = SCENARIO.fact("f1")
    facts = [
        g.to_fact()
        if g.id != gold.id
        else g.to_fact().model_copy(update={"level": 0, "whitelist": [], "state": "annotated"})
        for g in SCENARIO.facts
    ]
    kinds = kinds_of(facts)
    assert kinds["f1"] == "never-asked"
    tasks = permit_tasks(SCENARIO, facts, kinds)
    broken = [t for t in tasks if not t.exact]
    # every task it broke needs it (a composite nobody may hear stays exact without it)
    assert broken and all(t.needs == {"medical-leave:f1"} for t in broken)
    assert ideal_owner(tasks, 1) == (len(tasks), 1)
    assert ideal_owner(tasks, 0) == (len(tasks) - len(broken), 0)
