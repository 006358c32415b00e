"""What the models answer: the structured outputs the prompts ask for, validated on arrival."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class ExtractedFact(BaseModel):
    """One event-level fact as the extraction model proposes it (before any owner review)."""

    model_config = ConfigDict(extra="ignore")

    text: str = Field(min_length=1, max_length=1000, description="third-person, event-level statement")
    category: str = Field(min_length=1, max_length=64, description="one of the policy categories")
    level: int = Field(ge=0, le=4, description="privacy level 0 (nobody) .. 4 (public)")
    domain: Literal["work", "life"] | None = None
    event_id: str = Field(min_length=1, max_length=80, description="an existing event id or a new short slug")
    version: Literal["truth", "cover"] = "truth"
    covers: int | None = Field(default=None, description="for a cover: index of its truth fact in this list")
    source_turns: list[int] = Field(default_factory=list)
    whitelist: list[str] = Field(default_factory=list, description="contact ids that may know despite the level")
    blacklist: list[str] = Field(default_factory=list, description="contact ids that must never know")

    @field_validator("text", "category", "event_id", mode="before")
    @classmethod
    def _strip(cls, v: Any) -> Any:
        return v.strip() if isinstance(v, str) else v

    @field_validator("level", mode="before")
    @classmethod
    def _level(cls, v: Any) -> Any:
        # models like to write "L2" or "2"
        if isinstance(v, str):
            m = re.fullmatch(r"\s*[lL]?\s*([0-4])\s*", v)
            if m:
                return int(m.group(1))
        return v

    @field_validator("domain", mode="before")
    @classmethod
    def _domain(cls, v: Any) -> Any:
        if v is None:
            return None
        if isinstance(v, str):
            s = v.strip().lower()
            return None if s in ("", "null", "none", "any", "n/a") else s
        return v

    @field_validator("version", mode="before")
    @classmethod
    def _version(cls, v: Any) -> Any:
        return v.strip().lower() if isinstance(v, str) else v

    @field_validator("whitelist", "blacklist", mode="before")
    @classmethod
    def _ids(cls, v: Any) -> Any:
        if v is None:
            return []
        if isinstance(v, list):
            return [str(x) if isinstance(x, int) and not isinstance(x, bool) else x for x in v]
        return v

    @field_validator("source_turns", mode="before")
    @classmethod
    def _turns(cls, v: Any) -> Any:
        return [] if v is None else v

    @field_validator("source_turns")
    @classmethod
    def _turns_non_negative(cls, v: list[int]) -> list[int]:
        if any(t < 0 for t in v):
            raise ValueError("source_turns must be >= 0")
        return v


class ExtractionResult(BaseModel):
    """The whole answer of ``extract_annotate``.

    Cover facts must name their truth fact: ``covers`` is the index of a ``truth`` fact in
    ``facts`` (not itself); anything else fails validation, so the caller keeps the session's
    facts pending (fail closed) rather than store a cover that is not tied to its secret. A
    cover takes its truth's ``event_id``; a truth's ``covers`` is cleared.
    """

    model_config = ConfigDict(extra="ignore")

    facts: list[ExtractedFact] = Field(default_factory=list)

    @model_validator(mode="after")
    def _link_covers(self) -> ExtractionResult:
        for i, fact in enumerate(self.facts):
            if fact.version == "truth":
                fact.covers = None
                continue
            j = fact.covers
            if j is None or not 0 <= j < len(self.facts) or j == i:
                raise ValueError(f"facts[{i}] is a cover without a valid 'covers' index")
            truth = self.facts[j]
            if truth.version != "truth":
                raise ValueError(f"facts[{i}].covers points at a fact that is not a truth")
            fact.event_id = truth.event_id
        return self


class ChosenFacts(BaseModel):
    """The whole answer of ``choose``: the ids (``F1``...) of the offered facts that answer the
    message, best first; empty when none does. Strict: nothing else, no other types; the caller
    checks the ids against what was offered (epmem/reply/model_choice.py)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    facts: list[str]
