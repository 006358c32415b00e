"""Where ``--consult`` loses what an asker may know (benchmarks/tools/consult_gaps.py)."""

from __future__ import annotations

from collections import Counter

from epmem.memory.facts import Fact
from epmem.reply.engine import Answer, ClosedCandidates
from epmem.reply.projection import FactDecision, Projection
from epmem.scenario import load_scenario

from benchmarks.tools.consult_gaps import CLASSES, classify, main, pair_kind
from epmem.embedding.minilm import default_embedder
from testkit.runtime import example

FILES = [example("quitting_job.yaml"), example("house_and_bonus.yaml")]


def _fact(fid: str, closed: bool = True) -> Fact:
    return Fact(id=fid, text=f"text of {fid}", event_id=f"e-{fid}", closed=closed)


def _answer(decisions: list[tuple[Fact, bool, bool]]) -> Answer:
    projection = Projection(tuple(FactDecision(f, 0.5, allowed, (), used) for f, allowed, used in decisions))
    return Answer("", False, projection, "rules", 0.0)


NONE = ClosedCandidates()


def test_each_gold_fact_falls_in_the_class_of_the_first_step_that_lost_it() -> None:
    told, shut, other = _fact("a", closed=False), _fact("b"), _fact("c")
    answer = _answer([(told, True, True), (shut, False, False), (other, False, False)])
    closed = ClosedCandidates(("c",))
    assert classify([], {"a"}, answer, closed) == "no-carrier"
    assert classify([told], {"a", "b"}, answer, closed) == "told"
    assert classify([shut], {"a"}, answer, closed) == "not-recalled"
    assert classify([shut], {"a", "b"}, answer, closed) == "other-consulted"
    assert classify([shut], {"b"}, _answer([(shut, False, False)]), NONE) == "not-consulted"
    assert classify([shut, other], {"b", "c"}, answer, closed) == "consulted"
    unused = _answer([(told, True, False)])
    assert classify([told], {"a"}, unused, NONE) == "open-not-chosen"
    decided = Fact(id="d", text="text of d", event_id="e-d", state="owner-set", level=0)
    assert classify([decided], {"d"}, _answer([(decided, False, False)]), NONE) == "kept"


def test_pairs_are_one_contact_a_group_or_the_stranger() -> None:
    assert [pair_kind(a) for a in ("ana", "ana+raj", "stranger")] == ["one", "group", "stranger"]


async def test_every_gold_fact_an_asker_may_know_is_classed_once_and_aim_asks_only_about_them() -> None:
    may = sum(len(g.may) for f in FILES for item in load_scenario(f).tasks.answer for g in item.askers.values())
    plain = await main(FILES, aim=False, embedder=default_embedder(), pairs=True)
    aimed = await main(FILES, aim=True, embedder=default_embedder())
    for run in (plain, aimed):
        assert run["may"] == may == sum(run["classes"].values())
        assert set(run["classes"]) <= set(CLASSES)
        assert run["answer"]["leak_rate"] == 0 and run["answer"]["any_fact_leaks"] == 0
    # aimed by the gold, every consultation shows a fact the asker may know
    assert aimed["consult"]["asked"] > 0 and aimed["consult"]["useful"] == aimed["consult"]["asked"]
    assert plain["classes"].get("told", 0) > 0 and plain["classes"].get("consulted", 0) > 0
    # each pair's first reply once, its facts' classes adding up to the counts
    assert len({(p["scenario"], p["question"], p["asker"]) for p in plain["pairs"]}) == len(plain["pairs"])
    by_class = Counter(c for p in plain["pairs"] for c in p["may"].values())
    assert dict(by_class) == plain["classes"] and "pairs" not in aimed
    for p in plain["pairs"]:
        assert ("told" in p["may"].values()) <= bool(p["told"])
        assert ("consulted" in p["may"].values() or "other-consulted" in p["may"].values()) <= bool(p["consult"])
