"""Each text embedded once in a scope (epmem/embedding/once.py), and ties ordered by fact id
(FactMemory.similar), so the answers an import's decisions depend on are the same in every run."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from epmem.embedding.base import Embedder, Vectors
from epmem.embedding.once import active, embed, embedding_once
from epmem.memory.facts import Fact
from epmem.memory.nearest import NearestOnce
from epmem.memory.recall import FactMemory, SubjectNormalizer
from epmem.store.edge import EdgeStore
from testkit.house import shared_embedder


class Counting:
    """The real embedder, counting every text it is asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.asked: Counter[str] = Counter()

    def embed(self, texts: list[str]) -> Vectors:
        self.asked.update(texts)
        return self.inner.embed(texts)


@pytest.fixture
def counting() -> Counting:
    return Counting(shared_embedder())


@pytest.fixture
async def memory(tmp_path: Path, counting: Counting) -> AsyncIterator[FactMemory]:
    store = EdgeStore(tmp_path / "qdrant", "tenant")
    mem = await FactMemory(store, counting, SubjectNormalizer(["Ana Diaz"])).open()
    try:
        yield mem
    finally:
        await store.close()


def _fact(fid: str, text: str, session: str = "s1") -> Fact:
    return Fact(id=fid, text=text, event_id=f"e-{fid}", session_id=session, category="work", level=2, state="annotated")


def test_a_scope_embeds_each_text_once_and_gives_it_one_vector(counting: Counting) -> None:
    texts = ["Ana got the Bergen offer", "The kitchen is being redone"]
    plain = embed(counting, texts)
    assert counting.asked == Counter(texts)
    with embedding_once() as cache:
        first = embed(counting, texts)
        again = embed(counting, [texts[1], "A new text", texts[0], texts[1]])
        with embedding_once() as inner:  # nested: the same cache
            assert inner is cache
            embed(counting, texts)
    assert counting.asked == Counter({texts[0]: 2, texts[1]: 2, "A new text": 1})
    assert (cache.embedded, cache.reused) == (3, 5)
    assert np.array_equal(again[0], first[1]) and np.array_equal(again[3], first[1])
    assert np.array_equal(again[2], first[0])
    assert np.allclose(first, plain, atol=1e-6)
    again[0] += 1.0  # a caller's array is its own
    with embedding_once():
        pass
    assert active() is None
    embed(counting, texts)  # outside a scope: embedded again
    assert counting.asked[texts[0]] == 3


async def test_a_scope_is_the_opening_tasks_and_its_threads_only(counting: Counting) -> None:
    seen: list[object] = []

    async def elsewhere() -> None:
        seen.append(active())

    with embedding_once() as cache:
        other = asyncio.create_task(elsewhere())  # copies the context: sees the scope
        await other
        in_thread = await asyncio.to_thread(active)
    late = asyncio.create_task(elsewhere())  # started after the scope ended
    await late
    assert seen == [cache, None] and in_thread is cache


async def test_ties_are_ordered_and_cut_by_fact_id(memory: FactMemory) -> None:
    """Six facts with the same words from six sessions, stored in no particular order: the store
    lists equals in an order of its own, the memory by id, and a limit keeps the lowest ids."""
    text = "Ana got the Bergen offer"
    order = ["s4-f1", "s2-f1", "s6-f1", "s1-f1", "s5-f1", "s3-f1"]
    with embedding_once():  # one vector for the text: its copies tie exactly
        for fid in order:
            await memory.add([_fact(fid, text, fid.split("-")[0])])
        await memory.add([_fact("s9-f1", "The kitchen is being redone", "s9")])
        for limit in (1, 3, 5, 7):
            rows = await memory.similar([text, "Ana got an offer from Bergen"], limit=limit)
            for row in rows:
                ids = [f.id for f, _ in row]
                assert ids == sorted(order)[:limit] + (["s9-f1"] if limit == 7 else []), (limit, ids)
                assert len({score for _, score in row[: min(limit, 6)]}) == 1


async def test_in_a_scope_a_text_asked_again_is_answered_from_its_longer_answer(
    memory: FactMemory, counting: Counting
) -> None:
    await memory.add(
        [
            _fact("f1", "Ana got the Bergen offer"),
            _fact("f2", "The kitchen is being redone"),
            _fact("f3", "Ana starts in Bergen in May"),
        ]
    )
    texts = ["Ana got the offer from Bergen", "The kitchen gets new tiles", "Ana moves in May"]
    with embedding_once():
        near = NearestOnce(memory)
        wide = await near.similar(texts, limit=3)
        assert near.reused == 0
        # fewer texts, another order, a shorter limit: the start of the earlier answers
        short = await near.similar([texts[2], texts[0]], limit=2)
        assert near.reused == 1
        assert short == [wide[2][:2], wide[0][:2]] == await memory.similar([texts[2], texts[0]], limit=2)
        # a longer limit than asked before goes to the store
        await near.similar([texts[0]], limit=5)
        assert near.reused == 1
        # and a write makes every earlier answer stale
        await memory.add([_fact("f4", "Ana got the offer from Bergen")])
        after = await near.similar([texts[0]], limit=1)
        assert near.reused == 1 and after[0][0][0].id == "f4"
    assert max(counting.asked[t] for t in texts) == 1
