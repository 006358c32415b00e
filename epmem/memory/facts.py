"""F2 facts: the unit of disclosure.

A fact is one third-person statement about one real-world event. Everything the privacy engine
decides is decided per fact, so a fact carries its own annotations (category, level, domain,
whitelist, blacklist) and the link to the session and turns it came from.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from epmem.policy.model import Domain, InfoLevel

AnnotationState = Literal["pending", "annotated", "owner-set"]
Version = Literal["truth", "cover"]


class Fact(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    text: str = Field(min_length=1)
    event_id: str
    session_id: str | None = None
    version: Version = "truth"
    covers: str | None = Field(default=None, description="id of the truth fact this cover stands in for")
    category: str | None = None
    level: InfoLevel | None = None
    domain: Domain | None = None
    whitelist: list[str] = Field(default_factory=list)
    blacklist: list[str] = Field(default_factory=list)
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    state: AnnotationState = "pending"
    source_turns: list[str] = Field(default_factory=list)
    #: how sure the annotator was, 0..1 (None: a person set it, or nobody measured it).
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    #: why the annotation is what it is ("keyword:salary", "cue:between us", "told-by:nadia"):
    #: shown to the owner in review and kept in the audit.
    evidence: list[str] = Field(default_factory=list)
    #: who the suggestion would let know (a pending fact, or one kept private by contextual
    #: integrity). Only shown to the owner in review: the
    #: calculus never reads it, so a guess opens nothing until the owner confirms it.
    proposed_whitelist: list[str] = Field(default_factory=list)

    def effective_level(self) -> int:
        """Pending or level-less facts count as L0: until annotated, nobody may hear them."""
        if self.state == "pending" or self.level is None:
            return 0
        return self.level
