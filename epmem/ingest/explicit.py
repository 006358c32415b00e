"""Annotations the owner writes out (a facts file, a scenario's gold): checked and completed.

An explicit annotation is the owner's word, so it may be looser than its category (only the
owner loosens, docs/DESIGN.md sec. 6). But a field the owner left out is not a choice: it is completed
from the category, never left looser. A health fact written without ``domain:`` gets the health
category's domain; left without one it would reach a level-1 *work* contact, which the owner
never said. A field written out as null (``domain: null``) is a choice and is kept.

Every path that stores owner-written annotations calls :func:`complete_explicit`, so the rule
lives here once.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from epmem.errors import EpmemError
from epmem.policy.model import Domain, Policy


class AnnotationProblem(EpmemError, ValueError):
    """An explicit annotation the policy cannot accept; ``field`` says which part."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True, slots=True)
class Explicit:
    category: str
    level: int
    domain: Domain | None
    whitelist: tuple[str, ...]
    blacklist: tuple[str, ...]


def complete_explicit(
    policy: Policy,
    category: str,
    *,
    level: int | None,
    domain: Domain | None,
    domain_given: bool,
    whitelist: Sequence[str] = (),
    blacklist: Sequence[str] = (),
    known: Collection[str] | None = None,
) -> Explicit:
    """The owner's annotation with what they left out taken from the category.

    Raises :class:`AnnotationProblem` for an unknown category, contact or group, or a whitelist
    on a never-share category (nothing can open one). A never-share fact is level 0.
    """
    cat = policy.categories.get(category)
    if cat is None:
        raise AnnotationProblem(
            "category", f"unknown category {category!r}; categories: {', '.join(policy.categories)}"
        )
    names = set(policy.contacts) | set(policy.groups) if known is None else set(known)
    for key, people in (("whitelist", whitelist), ("blacklist", blacklist)):
        for who in people:
            if who not in names:
                raise AnnotationProblem(key, f"unknown contact or group {who!r}")
    if cat.never_share and whitelist:
        raise AnnotationProblem("whitelist", f"category {category!r} is never shared: nobody can be whitelisted")
    chosen_level = cat.level if level is None else level
    if cat.never_share:
        chosen_level = 0
    chosen_domain = domain if domain_given else cat.domain
    white = tuple(w for w in dict.fromkeys(whitelist) if w not in blacklist)
    return Explicit(category, chosen_level, chosen_domain, white, tuple(dict.fromkeys(blacklist)))
