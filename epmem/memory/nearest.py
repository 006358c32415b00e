"""One session's nearest-fact look-ups, each asked of the store once.

Ingesting a session asks the memory for the neighbours of its facts several times: the finalizer
for retold covers and event links, the distiller for twin news and word-for-word duplicates
(epmem/ingest/extract.py, epmem/ingest/distill.py). Often two of them ask the very same
question (the session's truths, the same limit), and each answer cost an embedding pass and one
exact search per text, the larger part of an import's time.

:class:`NearestOnce` answers a question it was asked before from that earlier answer, and only
while nothing was written through the memory since (``FactMemory.generation``), so the answer is
the one the store would give again: the same texts embedded in the same batch give the same
vectors, and the same search over the same points gives the same hits. A different question
(other texts, another order, another limit) always goes to the store: the embedder's vectors
differ in the last bits with the batch a text is embedded in, and a shorter search may keep
other members of a tie, so nothing is derived from a neighbouring answer. Make one per session
and drop it after: it holds that session's answers only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from epmem.memory.facts import Fact
from epmem.memory.recall import FactMemory

Rows = list[list[tuple[Fact, float]]]


class FindsSimilar(Protocol):
    async def similar(self, texts: Sequence[str], limit: int = 5) -> Rows: ...


class NearestOnce:
    def __init__(self, memory: FactMemory) -> None:
        self.memory = memory
        self._rows: dict[tuple[tuple[str, ...], int], Rows] = {}
        self._generation: int | None = None
        #: questions answered from an earlier answer (tests and benchmarks read it).
        self.reused = 0

    async def similar(self, texts: Sequence[str], limit: int = 5) -> Rows:
        key = (tuple(texts), limit)
        before = self.memory.generation
        if before is None or before != self._generation:
            self._rows.clear()
        elif key in self._rows:
            self.reused += 1
            return [list(row) for row in self._rows[key]]
        rows = await self.memory.similar(texts, limit)
        after = self.memory.generation
        if before is not None and before == after:
            if self._generation != before:
                self._rows.clear()
                self._generation = before
            self._rows[key] = [list(row) for row in rows]
        return rows
