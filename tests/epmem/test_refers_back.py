"""A question that points back to an earlier chat ("the thing we talked about") is read against
what this asker heard said or said themselves: recall offers those facts, the nearest first,
and the calculus still decides what may be told. Real store, embedder and engine."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from epmem.embedding.minilm import default_embedder
from epmem.language import CHINESE, ENGLISH
from epmem.memory.facts import Fact
from epmem.memory.recall import FactMemory, SubjectNormalizer
from epmem.policy.calculus import Rulebook
from epmem.policy.overlay import MIGRATIONS as OVERLAY
from epmem.policy.overlay import Overlay
from epmem.reply.engine import PrivacyEngine
from epmem.reply.respond import RulesResponder
from epmem.sqlite import open_database
from epmem.store.edge import EdgeStore

from tests.epmem.test_extract_rules import POLICY

BACK = "any news on the thing we talked about?"


def _fact(fid: str, text: str, heard_by: list[str] | None = None, stated_by: str | None = None, level: int = 4) -> Fact:
    return Fact(
        id=fid,
        text=text,
        event_id=f"e-{fid}",
        session_id="s1",
        category="misc",
        level=level,
        state="owner-set",
        heard_by=heard_by or [],
        stated_by=stated_by,
    )


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[FactMemory]:
    store = EdgeStore(tmp_path / "qdrant", "owner")
    mem = await FactMemory(store, default_embedder(), SubjectNormalizer(["Sam Reed"])).open()
    await mem.add(
        [
            _fact("f1", "Sam and Kira pick up the keys to the new flat on 3 May.", heard_by=["kira"]),
            _fact("f2", "Sam's team moved the product launch to October.", heard_by=["tom"]),
            _fact("f3", "Sam adopted a rescue greyhound called Biscuit.", stated_by="owen"),
            _fact("f4", "Sam's surgery is on 9 June.", heard_by=["tom"], level=0),
        ]
    )
    try:
        yield mem
    finally:
        await store.close()


def test_which_questions_point_back() -> None:
    assert ENGLISH.refers_back("re the thing we talked about, when do we get the keys?")
    assert ENGLISH.refers_back("Any news on what we discussed?")
    assert ENGLISH.refers_back("like I said, is it still on?")
    assert not ENGLISH.refers_back("What did you talk about with Tom?")
    assert CHINESE.refers_back("我们上次聊的那件事怎么样了？")
    assert not CHINESE.refers_back("林苏这个周末有什么安排？")


async def test_recall_reads_what_the_asker_heard_or_said(memory: FactMemory) -> None:
    assert [ev.event_id for ev in await memory.recall(BACK, asker="kira")] == ["e-f1"]
    assert [ev.event_id for ev in await memory.recall(BACK, asker="owen")] == ["e-f3"]
    assert {ev.event_id for ev in await memory.recall(BACK, asker="tom")} == {"e-f2", "e-f4"}
    nearest = await memory.recall("re the thing we talked about, is the launch still in October?", asker="tom")
    assert nearest[0].event_id == "e-f2" and nearest[0].score == pytest.approx(1.0)
    # someone who heard and said nothing stored: the words alone, as for any question
    assert len(await memory.recall(BACK, asker="vic")) == len(await memory.recall(BACK))


async def test_the_engine_answers_each_asker_from_their_own_earlier_chat(memory: FactMemory, tmp_path: Path) -> None:
    db = await open_database(tmp_path / "state.sqlite", [OVERLAY])
    try:
        engine = PrivacyEngine(POLICY, Overlay(db), memory, RulesResponder())
        rulebook = Rulebook(POLICY)
        kira, tom = rulebook.recipient("kira"), rulebook.recipient("tom")
        told_kira = (await engine.answer(BACK, [kira], kira)).reply
        assert "keys to the new flat" in told_kira and "launch" not in told_kira
        told_tom = (await engine.answer(BACK, [tom], tom)).reply
        assert "launch" in told_tom and "keys" not in told_tom
        assert "surgery" not in told_tom  # heard it, but a level-0 fact: the calculus still decides
    finally:
        await db.close()
