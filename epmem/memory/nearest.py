"""One session's nearest-fact look-ups, each asked of the store once.

Ingesting a session asks the memory for the neighbours of its facts several times: the finalizer
for retold covers and event links, the distiller for twin news and word-for-word duplicates
(epmem/ingest/extract.py, epmem/ingest/distill.py). Often two of them ask the very same
question (the session's truths, the same limit), and each answer cost an embedding pass and one
exact search per text, the larger part of an import's time.

:class:`NearestOnce` answers from earlier answers, and only while nothing was written through
the memory since (``FactMemory.generation``), so the answer is the one the store would give
again. Inside an embedding scope (epmem/embedding/once.py, every import) a text has one vector
wherever it is asked, and the memory orders ties by fact id, so each text's answer stands on its
own and a shorter one is the start of a longer one: a text asked before with at least the limit
asked now is answered from then, whatever else the question holds. Outside a scope only the
very same question (the same texts in the same order, the same limit) is answered again: a
text's vector differs in the last bits with the batch it is embedded in. Make one per session
and drop it after: it holds that session's answers only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from epmem.embedding.once import active
from epmem.memory.facts import Fact
from epmem.memory.recall import FactMemory

Rows = list[list[tuple[Fact, float]]]


class FindsSimilar(Protocol):
    async def similar(self, texts: Sequence[str], limit: int = 5) -> Rows: ...


class NearestOnce:
    def __init__(self, memory: FactMemory) -> None:
        self.memory = memory
        self._rows: dict[tuple[tuple[str, ...], int], Rows] = {}
        #: inside an embedding scope: each text's answer, and the limit it was asked with.
        self._by_text: dict[str, tuple[int, list[tuple[Fact, float]]]] = {}
        self._generation: int | None = None
        #: questions answered from earlier answers (tests and benchmarks read it).
        self.reused = 0

    def _current(self) -> int | None:
        """The memory's generation; what was kept from another one is dropped."""
        now = self.memory.generation
        if now is None or now != self._generation:
            self._rows.clear()
            self._by_text.clear()
            self._generation = now
        return now

    async def similar(self, texts: Sequence[str], limit: int = 5) -> Rows:
        if active() is not None:
            return await self._per_text(texts, limit)
        key = (tuple(texts), limit)
        before = self._current()
        if before is not None and key in self._rows:
            self.reused += 1
            return [list(row) for row in self._rows[key]]
        rows = await self.memory.similar(texts, limit)
        if before is not None and self._current() == before:
            self._rows[key] = [list(row) for row in rows]
        return rows

    def _known(self, text: str, limit: int) -> bool:
        asked, row = self._by_text.get(text, (0, []))
        return text in self._by_text and (asked >= limit or len(row) < asked)

    async def _per_text(self, texts: Sequence[str], limit: int) -> Rows:
        """Each text has one vector in the scope, and the memory orders ties by id, so a text's
        answer is the start of its answer to a longer question: a text asked before with at
        least this limit is answered from then, the others are asked of the store together."""
        before = self._current()
        missing = list(dict.fromkeys(t for t in texts if before is None or not self._known(t, limit)))
        if not missing:
            self.reused += 1
        fresh: dict[str, list[tuple[Fact, float]]] = {}
        if missing:
            fresh = dict(zip(missing, await self.memory.similar(missing, limit)))
            if before is not None and self._current() == before:
                self._by_text.update((t, (limit, row)) for t, row in fresh.items())
        return [list(fresh[t]) if t in fresh else self._by_text[t][1][:limit] for t in texts]
