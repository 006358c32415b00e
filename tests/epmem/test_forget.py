"""Forgetting is real: after FactMemory.forget, the fact's words are in no file of the data folder."""

from __future__ import annotations

from pathlib import Path

from epmem.embedding.minilm import default_embedder
from epmem.memory.facts import Fact
from epmem.memory.recall import FactMemory, SubjectNormalizer
from epmem.store.edge import EdgeStore


def _files_with(folder: Path, needle: bytes) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes()]


async def test_forgotten_fact_leaves_no_trace_on_disk(tmp_path: Path) -> None:
    data = tmp_path / "data"
    store = EdgeStore(data / "qdrant", "owner")
    try:
        memory = await FactMemory(store, default_embedder(), SubjectNormalizer(["Lin Su"])).open()
        keep = [Fact(id=f"k{i}", text=f"Lin went to the bakery on day {i}", event_id=f"e{i}") for i in range(30)]
        secret = Fact(id="s1", text="Lin owes Quillfeather Bank 40k", event_id="es")
        await memory.add([*keep, secret])
        await memory.update([secret.model_copy(update={"state": "annotated", "level": 0})])  # an old copy too
        assert _files_with(data, b"Quillfeather")  # the check can see it while it is there
        await memory.forget(["s1"])
        assert await memory.count() == 30
    finally:
        await store.close()
    assert _files_with(data, b"Quillfeather") == []
