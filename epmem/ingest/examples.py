"""The owner's answers as labelled examples: how this owner files facts like this one.

Every review answer (epmem/ingest/review.py) and every fact the owner set by hand is a labelled
example: the text, and the category, level and domain the owner chose (or "keep private"). The
classifier (epmem/ingest/annotate.py) reads the nearest examples first: a later fact that says
nearly the same thing as a confirmed one is filed the same way, because the owner already said
how. Only the label travels, never the exceptions: who may know one fact is that fact's business.

The bank is rebuilt from memory at start (owner-set facts are the examples), so it needs no
storage of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from epmem.embedding.base import Embedder
from epmem.memory.facts import Fact
from epmem.policy.model import Domain


@dataclass(frozen=True, slots=True)
class Label:
    category: str
    level: int
    domain: Domain | None
    #: the owner said "keep private": facts like this one stay at level 0 too.
    private: bool = False


@dataclass(frozen=True, slots=True)
class Example:
    fact_id: str
    text: str
    label: Label


def label_of(fact: Fact) -> Label | None:
    """The label an owner-set fact teaches, or None if it carries no category and level."""
    if fact.category is None or fact.level is None:
        return None
    private = fact.level == 0 and not fact.whitelist
    return Label(fact.category, fact.level, fact.domain, private)


class ExampleBank:
    """Labelled examples with their embeddings; nearest first."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._examples: list[Example] = []
        self._vectors = np.zeros((0, embedder.dim), dtype=np.float32)

    def __len__(self) -> int:
        return len(self._examples)

    def __iter__(self) -> Iterable[Example]:
        return iter(list(self._examples))

    @classmethod
    def from_facts(cls, facts: Iterable[Fact], embedder: Embedder) -> ExampleBank:
        """Every owner-set fact with a category and level (the owner's confirmed annotations)."""
        bank = cls(embedder)
        chosen = [(f, label) for f in facts if f.state == "owner-set" for label in [label_of(f)] if label]
        bank.add_many([(f.id, f.text, label) for f, label in chosen])
        return bank

    def add(self, fact_id: str, text: str, label: Label) -> None:
        self.add_many([(fact_id, text, label)])

    def add_many(self, items: Sequence[tuple[str, str, Label]]) -> None:
        """Add examples; an example for a fact already in the bank replaces the old one."""
        if not items:
            return
        ids = {fid for fid, _, _ in items}
        self.remove(ids)
        vectors = self.embedder.embed([text for _, text, _ in items])
        self._examples += [Example(fid, text, label) for fid, text, label in items]
        self._vectors = np.vstack([self._vectors, np.asarray(vectors, dtype=np.float32)])

    def remove(self, fact_ids: Iterable[str]) -> None:
        gone = set(fact_ids)
        keep = [i for i, e in enumerate(self._examples) if e.fact_id not in gone]
        if len(keep) != len(self._examples):
            self._examples = [self._examples[i] for i in keep]
            self._vectors = self._vectors[keep]

    def nearest(self, vectors: np.ndarray, k: int = 3) -> list[list[tuple[Example, float]]]:
        """For each (normalised) vector, the ``k`` most similar examples with their cosine."""
        if not self._examples or len(vectors) == 0:
            return [[] for _ in range(len(vectors))]
        sims = np.asarray(vectors, dtype=np.float32) @ self._vectors.T
        out: list[list[tuple[Example, float]]] = []
        for row in sims:
            order = np.argsort(-row)[:k]
            out.append([(self._examples[j], float(row[j])) for j in order])
        return out
