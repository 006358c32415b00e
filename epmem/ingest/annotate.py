"""Annotation: which policy category a statement belongs to, and how strict it may be made.

Three things live here, all deterministic and used by both backends:

* :func:`classify` (keywords only) and :class:`CategoryClassifier` (keywords, then similarity
  of the statement to each category's name, description and keywords with the offline
  embedder). When several categories fit, the deepest one wins: a statement that touches
  finances and hobbies is a finances statement as far as disclosure goes. Fail closed.
* :func:`clamp`: the rule that a model may only make a fact stricter, never looser. It is code,
  not a prompt instruction, so no model output can widen an audience the policy set.
* :class:`ContactNames`: resolving the names people use in chat ("Mamma", "Tara", "the family")
  to contact and group ids, for the exception cues in epmem/ingest/extract_rules.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from epmem.embedding.base import Embedder
from epmem.policy.model import Domain, Policy


@dataclass(frozen=True, slots=True)
class Annotation:
    category: str
    level: int
    domain: Domain | None
    matched: tuple[str, ...]
    #: how the category was chosen: keywords, similarity, or the policy default.
    basis: str = "keywords"


@lru_cache(maxsize=4096)
def _keyword_pattern(keyword: str) -> re.Pattern[str]:
    return re.compile(r"\b" + re.escape(keyword.casefold()) + r"\w*", re.IGNORECASE)


def _keyword_hits(text: str, policy: Policy) -> list[tuple[int, str, tuple[str, ...]]]:
    folded = text.casefold()
    hits: list[tuple[int, str, tuple[str, ...]]] = []
    for name, cat in policy.categories.items():
        matched = tuple(k for k in cat.keywords if k.strip() and _keyword_pattern(k.strip()).search(folded))
        if matched:
            hits.append((cat.level, name, matched))
    return hits


def classify(text: str, policy: Policy) -> Annotation:
    """Keywords only: the deepest category with a keyword in the text, else the default."""
    hits = _keyword_hits(text, policy)
    if hits:
        level, name, matched = min(hits, key=lambda h: (h[0], -len(h[2]), h[1]))
        return Annotation(name, level, policy.categories[name].domain, matched)
    name = policy.default_category
    cat = policy.categories[name]
    return Annotation(name, cat.level, cat.domain, (), "default")


class CategoryClassifier:
    """Keywords first; without a keyword, similarity to the categories' profiles.

    Similarity is only trusted when it is clear: the best category must reach ``floor`` (MiniLM
    cosines between a sentence and a category profile are small: 0.2-0.35 for a plain match, under
    0.15 for none, measured on hand-written sentences, not on the benchmark's). Every
    category within ``margin`` of the best is a plausible reading, and the deepest plausible
    reading is the one taken, so an ambiguous statement is annotated as strictly as any of its
    readings. Below the floor the statement is about nothing the policy names, and the default
    category applies (the policy's own answer to "everything else").
    """

    def __init__(self, policy: Policy, embedder: Embedder | None = None,
                 floor: float = 0.2, margin: float = 0.05) -> None:
        self.policy = policy
        self.embedder = embedder
        self.floor = floor
        self.margin = margin
        self._names = sorted(policy.categories)
        self._vectors: np.ndarray | None = None
        if embedder is not None and self._names:
            profiles = [
                policy.categories[n].profile(n)
                for n in self._names
            ]
            self._vectors = embedder.embed(profiles)

    def classify(self, text: str) -> Annotation:
        return self.classify_many([text])[0]

    def classify_many(self, texts: list[str]) -> list[Annotation]:
        out: list[Annotation | None] = [None] * len(texts)
        todo: list[int] = []
        for i, text in enumerate(texts):
            ann = classify(text, self.policy)
            if ann.basis == "keywords" or self._vectors is None or self.embedder is None:
                out[i] = ann
            else:
                todo.append(i)
        if todo and self._vectors is not None and self.embedder is not None:
            sims = self.embedder.embed([texts[i] for i in todo]) @ self._vectors.T
            for row, i in enumerate(todo):
                out[i] = self._by_similarity(sims[row])
        return [a for a in out if a is not None]

    def _by_similarity(self, sims: np.ndarray) -> Annotation:
        best = float(sims.max())
        if best < self.floor:
            return classify("", self.policy)
        plausible = [self._names[j] for j in range(len(self._names)) if sims[j] >= best - self.margin]
        cats = self.policy.categories
        name = min(plausible, key=lambda n: (cats[n].level, -float(sims[self._names.index(n)]), n))
        return Annotation(name, cats[name].level, cats[name].domain, (), "similarity")


# --------------------------------------------------------------------------- stricter only


@dataclass(frozen=True, slots=True)
class Clamped:
    category: str
    level: int
    domain: Domain | None
    #: what the clamp changed, for logs and the owner's /pending view.
    notes: tuple[str, ...] = ()


def clamp(policy: Policy, category: str | None, level: int | None, domain: str | None,
          fallback: Annotation) -> Clamped:
    """Apply the stricter-only rule to a model's (or a cue's) annotation.

    - an unknown category is replaced by ``fallback`` (the rules classification of the text);
    - level = min(proposed level, the category's level); never-share categories are level 0;
    - the category's domain is never dropped or swapped: a model may add a domain to a
      domain-free category (narrower audience), nothing else.
    Only the owner (state ``owner-set``) may loosen an annotation.
    """
    notes: list[str] = []
    cat_name = category if category in policy.categories else None
    if cat_name is None:
        if category is not None:
            notes.append(f"unknown category {category!r} -> {fallback.category}")
        cat_name = fallback.category
    cat = policy.categories[cat_name]
    proposed = cat.level if level is None else level
    final_level = min(proposed, cat.level)
    if proposed > cat.level:
        notes.append(f"level {proposed} looser than category {cat_name} (L{cat.level}) -> L{cat.level}")
    if cat.never_share:
        final_level = 0
    final_domain: Domain | None
    if cat.domain is not None:
        final_domain = cat.domain
        if domain is not None and domain != cat.domain:
            notes.append(f"domain {domain} ignored: category {cat_name} is {cat.domain}")
    else:
        final_domain = domain if domain in ("work", "life") else None  # type: ignore[assignment]
    return Clamped(cat_name, final_level, final_domain, tuple(notes))


# --------------------------------------------------------------------------- names


#: relationship words people use in chat, mapped to words found in relationship labels.
_KIN = {
    "mum": "mother", "mom": "mother", "mother": "mother", "mamma": "mother", "mama": "mother",
    "dad": "father", "father": "father", "papa": "father", "wife": "wife", "husband": "husband",
    "partner": "partner", "fiance": "fianc", "fiancé": "fianc", "fiancee": "fianc", "fiancée": "fianc",
    "boss": "manager", "manager": "manager", "sister": "sister", "brother": "brother",
    "lawyer": "lawyer", "neighbour": "neighbour", "neighbor": "neighbour",
}


class ContactNames:
    """Names, first names, aliases, ids, group ids and relationship words -> contact/group ids."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        index: dict[str, set[str]] = {}

        def add(key: str, cid: str) -> None:
            key = key.casefold().strip()
            if key:
                index.setdefault(key, set()).add(cid)

        for cid, c in policy.contacts.items():
            add(cid, cid)
            add(c.name, cid)
            add(c.name.split()[0], cid)
            for alias in c.aliases:
                add(alias, cid)
            for word in re.findall(r"\w+", c.relationship.casefold()):
                for kin, label in _KIN.items():
                    if label in word:
                        add(kin, cid)
        for gid in policy.groups:
            add(gid, gid)
            add(gid.replace("_", " "), gid)
        # an ambiguous first name ("Lin" twice) resolves to nobody rather than to a guess
        self._index = {k: next(iter(v)) for k, v in index.items() if len(v) == 1}
        longest = sorted(self._index, key=len, reverse=True)
        self._pattern = (
            re.compile(r"(?<!\w)(?:(?:my|our|the|his|her)\s+)?(" + "|".join(map(re.escape, longest)) + r")(?!\w)",
                       re.IGNORECASE)
            if longest else None
        )

    def find(self, text: str) -> list[str]:
        """Every contact or group named in ``text``, in order, without repeats."""
        if self._pattern is None:
            return []
        found: list[str] = []
        for m in self._pattern.finditer(text):
            cid = self._index.get(m.group(1).casefold())
            if cid is not None and cid not in found:
                found.append(cid)
        return found

    def name_of(self, cid: str) -> str:
        contact = self.policy.contacts.get(cid)
        return contact.name.split()[0] if contact else cid
