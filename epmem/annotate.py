"""Offline annotation: which policy category a statement belongs to.

Keyword matching against the policy's own per-category keywords. When several categories
match, the deepest one wins: a statement that touches finances and hobbies is a finances
statement as far as disclosure goes. Fail closed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from epmem.policy import Domain, Policy


@dataclass(frozen=True, slots=True)
class Annotation:
    category: str
    level: int
    domain: Domain | None
    matched: tuple[str, ...]


@lru_cache(maxsize=4096)
def _keyword_pattern(keyword: str) -> re.Pattern[str]:
    return re.compile(r"\b" + re.escape(keyword.casefold()) + r"\w*", re.IGNORECASE)


def classify(text: str, policy: Policy) -> Annotation:
    folded = text.casefold()
    hits: list[tuple[int, str, tuple[str, ...]]] = []
    for name, cat in policy.categories.items():
        matched = tuple(k for k in cat.keywords if k.strip() and _keyword_pattern(k.strip()).search(folded))
        if matched:
            hits.append((cat.level, name, matched))
    if hits:
        level, name, matched = min(hits, key=lambda h: (h[0], -len(h[2]), h[1]))
        return Annotation(name, level, policy.categories[name].domain, matched)
    name = policy.default_category
    cat = policy.categories[name]
    return Annotation(name, cat.level, cat.domain, ())
