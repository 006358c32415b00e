"""NearestOnce answers a repeated question from its earlier answer only while the facts stand
still: the answer must be the one the store would give again (an import's decisions depend on it)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from epmem.embedding.minilm import default_embedder
from epmem.memory.facts import Fact
from epmem.memory.nearest import NearestOnce
from epmem.memory.recall import FactMemory, SubjectNormalizer
from epmem.store.edge import EdgeStore


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[FactMemory]:
    store = EdgeStore(tmp_path / "qdrant", "tenant")
    mem = await FactMemory(store, default_embedder(), SubjectNormalizer(["Ana Diaz"])).open()
    try:
        yield mem
    finally:
        await store.close()


def _fact(fid: str, text: str) -> Fact:
    return Fact(id=fid, text=text, event_id=f"e-{fid}", session_id="s1", category="work", level=2, state="annotated")


def _ids(rows: list[list[tuple[Fact, float]]]) -> list[list[tuple[str, float]]]:
    return [[(f.id, score) for f, score in row] for row in rows]


async def test_a_question_asked_again_is_answered_once_until_a_write(memory: FactMemory) -> None:
    await memory.add([_fact("f1", "Ana got the Bergen offer"), _fact("f2", "The kitchen is being redone")])
    near = NearestOnce(memory)
    texts = ["Ana got the offer from Bergen", "The kitchen gets new tiles"]
    first = await near.similar(texts, limit=2)
    again = await near.similar(texts, limit=2)
    assert near.reused == 1 and _ids(again) == _ids(first) == _ids(await memory.similar(texts, limit=2))
    # another limit, or the same texts in another order, is another question: asked of the store
    await near.similar(texts, limit=1)
    await near.similar(list(reversed(texts)), limit=2)
    assert near.reused == 1
    # a write through the memory: the next answer comes from the store and sees the new fact
    await memory.add([_fact("f3", "Ana got the offer from Bergen")])
    after = await near.similar(texts, limit=2)
    assert near.reused == 1
    assert after[0][0][0].id == "f3" and _ids(after) == _ids(await memory.similar(texts, limit=2))
    await memory.forget(["f3"])
    assert "f3" not in {f.id for f, _ in (await near.similar(texts, limit=2))[0]}
    assert near.reused == 1


async def test_a_write_under_way_stops_reuse(memory: FactMemory) -> None:
    await memory.add([_fact("f1", "Ana got the Bergen offer")])
    near = NearestOnce(memory)
    await near.similar(["Bergen offer"], limit=1)
    with memory._write():  # as during an add: no answer from before it is trusted
        assert memory.generation is None
        await near.similar(["Bergen offer"], limit=1)
    assert near.reused == 0
    await near.similar(["Bergen offer"], limit=1)
    await near.similar(["Bergen offer"], limit=1)
    assert near.reused == 1
