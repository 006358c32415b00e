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
    #: closed until the owner says (docs/DESIGN.md sec. 6.5): a fact that came from a
    #: conversation is told to nobody but the owner and the people the owner's own words named
    #: (its ``whitelist``), whatever its category suggests, until the owner decides about this
    #: fact or its event (a consultation, /review, /allow, /level ...). Its category, level and
    #: domain are then only the suggestion shown to the owner; a category-wide exception does
    #: not open it. Facts the owner wrote with their annotations are not closed.
    closed: bool = False
    #: who stated it, when not the owner: the contact id (or a stranger's identity) whose words
    #: it came from (an import, a live chat). A contact's words never widen who may know it
    #: (epmem/ingest/review.py ``_suggested``), and the owner is shown "X said:" before them.
    #: None: the owner's own words, or facts the owner wrote.
    stated_by: str | None = None
    #: heard it from you (docs/DESIGN.md sec. 3): the contacts who were there when it was said
    #: (the other party of a direct chat; in a group, who was present), and where ("the chat
    #: of 2026-03-01"). While the fact is undecided, telling them what they heard reveals
    #: nothing: the calculus lets them in (never on a never-share category or against a deny).
    #: Only a truth is heard: whoever heard the owner describe a cover story knows the truth.
    heard_by: list[str] = Field(default_factory=list)
    heard_in: str | None = None
    #: the question it answers, when someone else asked one just before it in the chat ("what's
    #: the new pay like?" before "Base goes from 92k to 118k."; epmem.ingest.asked): an answer's
    #: words often name neither who nor what, which its question does. Read with the fact's own
    #: words by recall and the relevance step (:attr:`found_by`); never told, never shown to a model.
    context: str | None = None

    @property
    def found_by(self) -> str:
        """The words a question finds it by: its own, after the question it answers where it
        has one (:attr:`context`). Never what is told."""
        return self.text if not self.context else f"{self.context} {self.text}"

    def effective_level(self) -> int:
        """Pending, closed or level-less facts count as L0: until settled, nobody may hear them
        but the people whitelisted on the fact itself."""
        if self.state == "pending" or self.closed or self.level is None:
            return 0
        return self.level

    @property
    def settled_open(self) -> bool:
        """Whether exceptions by category reach this fact: only an open, annotated fact's."""
        return not self.closed and self.state != "pending"

    @property
    def undecided(self) -> bool:
        """Closed and the owner has not decided about it yet: what a consultation asks about."""
        return self.closed and self.state != "owner-set"
