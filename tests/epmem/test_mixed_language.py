"""A question that mixes CJK with English is read by both models: the English one reads its
English words, the CJK one the whole of it, and a fact is found by whichever reads it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from epmem.embedding.base import readings
from epmem.embedding.bilingual import BilingualEmbedder, UseEmbedder, is_mixed
from epmem.embedding.minilm import default_embedder
from epmem.memory.facts import Fact
from epmem.memory.recall import ACROSS, FACTS, FactMemory, SubjectNormalizer
from epmem.store.base import OWNER_FIELD
from epmem.store.edge import EdgeStore

from tests.epmem.test_ingest_zh import _Fixed

MIXED = "지우 how's your halmeoni doing? you're still going down to Suwon every weekend right?"


def test_only_a_question_with_enough_english_beside_its_cjk_is_mixed() -> None:
    assert is_mixed(MIXED)
    assert is_mixed("are Ji-woo and Seo-jun 선배 dating?? Yuna swears she saw them")
    assert not is_mixed("HR说offer下周发")  # a Chinese question naming two English words
    assert not is_mixed("how is Ji-woo doing?")  # no CJK: English alone reads it
    assert not is_mixed("林苏这个周末有什么安排？")


def test_a_mixed_question_gets_one_reading_per_model_and_the_english_one_without_its_cjk() -> None:
    en, cjk = _Fixed("en", 4, 1.0), _Fixed("cjk", 3, 1.0)
    emb = BilingualEmbedder(en, cjk)
    rows = readings(emb, MIXED)
    assert rows.shape == (2, 8)
    assert en.seen[0] == "how's your halmeoni doing? you're still going down to Suwon every weekend right?"
    assert np.allclose(rows[0, 4:], 0.0) and np.allclose(rows[1, :4], 0.0)  # each in its own half
    assert np.allclose(rows[1], emb.embed([MIXED])[0])  # the CJK reading is the one embed gives
    one = readings(emb, "how is Ji-woo doing?")
    assert one.shape == (1, 8) and np.allclose(one[0], emb.embed(["how is Ji-woo doing?"])[0])


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[FactMemory]:
    store = EdgeStore(tmp_path / "qdrant", "owner")
    embedder = BilingualEmbedder(default_embedder(), UseEmbedder())
    mem = await FactMemory(store, embedder, SubjectNormalizer(["Ji-woo Kim"])).open()
    try:
        yield mem
    finally:
        await store.close()


def _fact(fid: str, text: str) -> Fact:
    return Fact(id=fid, text=text, event_id=f"e-{fid}", session_id="s1", category="family", level=1, state="annotated")


async def test_an_english_fact_is_recalled_for_a_question_mixing_korean_and_english(memory: FactMemory) -> None:
    await memory.add(
        [
            _fact("f1", "Ji-woo spends her Saturdays in Suwon looking after her grandmother."),
            _fact("f2", "Ji-woo's brother starts his military service on 7 July."),
        ]
    )
    events = await memory.recall(MIXED)
    assert events and events[0].event_id == "e-f1"  # read as CJK alone, it found nothing (0 for English)
    assert await memory.recall("林苏这个周末有什么安排？") == []  # Chinese against English facts: still nothing


def test_a_question_not_plainly_english_is_read_across_languages() -> None:
    from epmem.embedding.bilingual import reads_across

    for question in (
        "¿Cuándo es la boda de Fer?",
        "Krzysiek, czy referendum strajkowe 15 czerwca nadal jest aktualne?",
        "Como foi a cirurgia da sua mãe?",
        "Wie geht es deiner Mutter?",
        MIXED,
        "林苏这个周末有什么安排？",
    ):
        assert reads_across(question), question
    for question in (
        "Is Coach Washington coming back next season?",  # names are not counted
        "Has Harbour Coffee paid Liam yet?",
        "re the thing we talked about, when do we get the keys?",
        "ok?",  # too short to tell
    ):
        assert not reads_across(question), question


async def test_an_english_fact_is_recalled_for_a_question_in_spanish_and_forgotten_there_too(
    memory: FactMemory, tmp_path: Path
) -> None:
    await memory.add(
        [
            _fact("f1", "Fernanda is getting married at a hacienda in Tlaquepaque on 5 December."),
            _fact("f2", "The sale price of the building is 14.5 million pesos, 30% paid at signing."),
        ]
    )
    events = await memory.recall("¿Cuándo es la boda de Fer?")
    assert events and events[0].event_id == "e-f1"
    english = await memory.recall("when is the building sale?")  # English is read as it always was
    assert english and english[0].event_id == "e-f2"
    await memory.forget(["f1"])
    assert await memory.store.count(ACROSS) == 1
    assert all(ev.event_id != "e-f1" for ev in await memory.recall("¿Cuándo es la boda de Fer?"))
    await memory.clear()
    assert await memory.store.count(ACROSS) == 0


async def test_a_memory_stored_before_the_second_collection_gets_it_at_open(tmp_path: Path) -> None:
    embedder = BilingualEmbedder(default_embedder(), UseEmbedder())
    store = EdgeStore(tmp_path / "qdrant", "owner")
    try:
        old = await FactMemory(store, default_embedder(), SubjectNormalizer(["Rosa"])).open()  # no ``across``
        await old.add([_fact("f1", "Fernanda is getting married at a hacienda in Tlaquepaque on 5 December.")])
        await store.drop_collection(FACTS)
        plain = await FactMemory(store, embedder, SubjectNormalizer(["Rosa"])).open()
        await plain.add([_fact("f1", "Fernanda is getting married at a hacienda in Tlaquepaque on 5 December.")])
        await store.delete_where(ACROSS, {OWNER_FIELD: "owner"})  # as a folder from before: facts, no across
        reopened = await FactMemory(store, embedder, SubjectNormalizer(["Rosa"])).open()
        assert await store.count(ACROSS) == 1
        assert [ev.event_id for ev in await reopened.recall("¿Cuándo es la boda de Fer?")][:1] == ["e-f1"]
    finally:
        await store.close()
