"""What the review queue asks and what it takes: the questions, their options and the answers.

Answers (:class:`ReviewAnswer`), one tap each on a platform; ``ReviewAnswer.from_key(fact_id, key)`` maps an
:class:`Option` key back to an answer, so a button needs only ``(fact_id, key)``:

- ``accept``: the suggestion as shown (category, level, domain, who may know);
- ``category``: one of the alternatives (key ``c:<category>``): that category's level and domain;
- ``private``: keep private (level 0, nobody whitelisted; the category is kept);
- ``set``: everything explicit (the "who may know" picker, /level-style edits, the oracle):
  category and optionally level, domain, whitelist and blacklist;
- ``skip``: ask again later; nothing changes.

The queue itself (which facts to ask about, applying an answer) is :mod:`epmem.ingest.review`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from epmem.errors import EpmemError
from epmem.memory.facts import Fact
from epmem.policy.model import Domain

AnswerKind = Literal["accept", "category", "private", "set", "skip"]
OptionKind = Literal["accept", "category", "private", "who", "skip"]


class ReviewError(EpmemError, ValueError):
    """An answer that cannot be applied (unknown fact, category or contact); nothing changed."""


@dataclass(frozen=True, slots=True)
class ReviewConfig:
    #: questions per batch: what fits on one screen and one sitting.
    batch: int = 5
    #: alternatives offered besides the suggestion.
    alternatives: int = 3
    #: a fact this similar to the reviewed one (same version) gets the same answer.
    same_information: float = 0.9
    #: a stranger counts as this many people when ranking by exposure (anyone at all may ask).
    stranger_weight: int = 10
    #: how many questions the delegate asks unprompted after an import (:meth:`ReviewQueue.budget`):
    #: this share of the events in memory (one question settles an event). The owner's patience
    #: is the scarce thing; /review on demand asks on. Chosen on the development scenarios only
    #: (benchmarks/tools/review_gaps.py): about 20-26 questions per 100 facts a person would count.
    share: float = 0.16
    #: and at most this many per conversation the facts came from: a chat the rules cut into many
    #: small facts is not more news (events per news differ by author and chat style, 1.3-2.1 on
    #: the development scenarios, conversations per news much less: about 1.5 news each, so this
    #: cap binds near 27 questions per 100 facts).
    per_conversation: float = 0.4


@dataclass(frozen=True, slots=True)
class ReviewChoice:
    """One possible annotation: what a tap would set."""

    category: str
    level: int
    domain: Domain | None
    whitelist: tuple[str, ...] = ()
    blacklist: tuple[str, ...] = ()

    def describe(self) -> str:
        where = f" {self.domain}" if self.domain else ""
        lists = ""
        if self.whitelist:
            lists += f", also {', '.join(self.whitelist)}"
        if self.blacklist:
            lists += f", not {', '.join(self.blacklist)}"
        return f"{self.category} (L{self.level}{where}{lists})"


@dataclass(frozen=True, slots=True)
class Option:
    """One button. ``key`` is short (it travels in callback data) and stable for the fact."""

    key: str
    kind: OptionKind
    label: str
    choice: ReviewChoice | None = None


@dataclass(frozen=True, slots=True)
class Question:
    fact_id: str
    text: str
    version: str
    #: for a cover: the text of the truth it stands in for, if known.
    covers_text: str | None
    state: str
    suggested: ReviewChoice
    confidence: float | None
    #: why the delegate suggests what it suggests (the fact's evidence).
    reasons: tuple[str, ...]
    alternatives: tuple[ReviewChoice, ...]
    #: contacts and groups to offer under "who may know", the likeliest first.
    people: tuple[str, ...]
    #: how many people the suggestion would let know (a stranger counts ReviewConfig.stranger_weight).
    exposure: int
    #: other facts the answer will also settle: the rest of the message, the same news in other
    #: chats (the question shows them: the owner answers for all of them at once).
    also: tuple[str, ...]
    options: tuple[Option, ...]
    #: the texts of ``also``, in the same order.
    also_text: tuple[str, ...] = ()
    #: how much the delegate thinks is at stake (:func:`~epmem.ingest.review_rank.stakes`).
    stakes: float = 0.0
    #: who stated the fact, and each of ``also``, when not the owner (``Fact.stated_by``).
    stated_by: str | None = None
    also_stated_by: tuple[str | None, ...] = ()

    @property
    def applies_to(self) -> int:
        """How many facts one answer settles."""
        return 1 + len(self.also)


@dataclass(frozen=True, slots=True)
class ReviewAnswer:
    fact_id: str
    kind: AnswerKind
    category: str | None = None
    level: int | None = None
    domain: Domain | None = None
    whitelist: tuple[str, ...] | None = None
    blacklist: tuple[str, ...] | None = None
    #: the owner's "this is what I say instead of ...": the truth fact this one is the cover
    #: story of. The fact (and the facts of its event) become covers of that truth, in its
    #: event: whoever may know the truth is told the truth, the others the cover, and nobody
    #: both (a cover stored on its own, unlinked, is an ordinary fact, so the one reader who may
    #: know the truth would be told the story and then the truth).
    covers: str | None = None

    def covering(self, truth_id: str) -> ReviewAnswer:
        """The same answer, and the fact is the cover story of ``truth_id``."""
        return replace(self, covers=truth_id)

    @classmethod
    def accept(cls, fact_id: str) -> ReviewAnswer:
        return cls(fact_id, "accept")

    @classmethod
    def choose(cls, fact_id: str, category: str) -> ReviewAnswer:
        return cls(fact_id, "category", category=category)

    @classmethod
    def private(cls, fact_id: str) -> ReviewAnswer:
        return cls(fact_id, "private")

    @classmethod
    def skip(cls, fact_id: str) -> ReviewAnswer:
        return cls(fact_id, "skip")

    @classmethod
    def set(
        cls,
        fact_id: str,
        category: str,
        level: int | None = None,
        domain: Domain | None = None,
        whitelist: Sequence[str] | None = None,
        blacklist: Sequence[str] | None = None,
    ) -> ReviewAnswer:
        """Everything explicit; ``level``/``domain`` default to the category's."""
        return cls(
            fact_id,
            "set",
            category,
            level,
            domain,
            tuple(whitelist) if whitelist is not None else None,
            tuple(blacklist) if blacklist is not None else None,
        )

    @classmethod
    def from_key(cls, fact_id: str, key: str) -> ReviewAnswer:
        """The answer an :class:`Option` key stands for ("who" opens a picker: not an answer)."""
        if key == "ok":
            return cls.accept(fact_id)
        if key == "private":
            return cls.private(fact_id)
        if key == "skip":
            return cls.skip(fact_id)
        if key.startswith("c:") and len(key) > 2:
            return cls.choose(fact_id, key[2:])
        raise ReviewError(f"unknown review answer {key!r}")


@dataclass(frozen=True, slots=True)
class Applied:
    #: the reviewed fact first, then the facts the answer also settled.
    facts: tuple[Fact, ...]
    #: the body of the audit record (a policy change by the owner).
    audit: dict[str, Any]
    #: one line for the owner.
    message: str
