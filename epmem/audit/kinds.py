"""One model per audit record kind: what each record's body holds, typed.

The writers (the agent, owner commands, the scheduler, the connector host, erasure) build one of
these and hand it to :meth:`epmem.audit.AuditLog.write`; the readers (the audit page,
``epmem audit show``/``list``, the JSON export, /audit) read a record's :attr:`entry`, the same
model parsed back from the stored body. A mistyped field on the way in fails the write; a body on
the way out that no model reads (a kind this version does not know, an old body of another shape)
is shown as it was stored, never dropped.

The record's kind is a column of its own, not a key of the body (an ``undelivered`` body has a
``kind`` of its own: the kind of message that did not arrive), so each model names its kind in a
class-level ``Literal``. The chain covers the stored JSON body (:mod:`epmem.audit.sealing`);
these models only read it, so records written before them verify as they always did. Every model
allows fields it does not declare: older bodies carry fields that later versions stopped writing.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class Entry(BaseModel):
    """A record's body. ``kind`` is the record's kind (the ``audit.kind`` column)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    kind: ClassVar[str] = ""

    def body(self) -> dict[str, Any]:
        """The body as stored: the fields the writer set (and any extra ones), nothing defaulted."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    def headline(self) -> str:
        """A line for lists: the question asked, else the owner's action, else the kind."""
        extra = self.model_extra or {}
        for name in ("question", "action"):
            value = getattr(self, name, None) or extra.get(name)
            if isinstance(value, str):
                return value
        return ""


class Chat(Entry):
    """Where a message came from (absent for records of the owner's own doing)."""

    platform: str | None = None
    chat: str | None = None
    chat_kind: str | None = None
    sender: str | None = None
    contact: str | None = None
    #: how the reply would go out as the owner ("business", "mention", ...), when it would.
    delegation: str | None = None


class Unanswered(Chat):
    """A message the delegate did not answer from memory; ``reply`` is the note it sent, if any."""

    reply: str | None = None


class Paused(Unanswered):
    kind: ClassVar[Literal["paused"]] = "paused"


class DelegateSilent(Unanswered):
    kind: ClassVar[Literal["delegate_silent"]] = "delegate_silent"


class RateLimited(Unanswered):
    kind: ClassVar[Literal["rate_limited"]] = "rate_limited"


class NonText(Unanswered):
    kind: ClassVar[Literal["non_text"]] = "non_text"
    non_text: str | None = None


class Empty(Unanswered):
    kind: ClassVar[Literal["empty"]] = "empty"


class Rejected(Unanswered):
    kind: ClassVar[Literal["rejected"]] = "rejected"
    reason: str = ""
    chars: int = 0


class Decision(Chat):
    """A question judged by the privacy engine (``epmem.reply.Answer.audit_body``): every
    candidate's verdict, what was disclosed, how the reply was written."""

    audience: list[str] = Field(default_factory=list)
    question: str | None = None
    candidates: list[dict[str, Any]] = Field(default_factory=list)
    disclosed: list[str] = Field(default_factory=list)
    deflected: bool = False
    reply: str | None = None
    backend: str | None = None
    latency_ms: float | None = None
    notes: list[str] = Field(default_factory=list)
    relevance: dict[str, Any] | None = None
    held_back: list[dict[str, Any]] | None = None
    closed_would_answer: list[str] | None = None
    composer: str | None = None
    llm: dict[str, Any] | None = None
    postcheck: dict[str, Any] | None = None
    masked: list[str] | None = None
    #: why a reply was decided but not sent (a deflection from the owner's own account).
    unsent: str | None = None


class Reply(Decision):
    kind: ClassVar[Literal["reply"]] = "reply"


class AttemptedCommand(Decision):
    """Someone other than the owner typed a command: answered as a question."""

    kind: ClassVar[Literal["attempted_command"]] = "attempted_command"


class Held(Decision):
    """A draft waiting for the owner's approval; nothing disclosed until it is sent."""

    kind: ClassVar[Literal["held"]] = "held"
    would_disclose: list[str] = Field(default_factory=list)
    draft: str | None = None
    approval: str = ""


class Followup(Decision):
    """The answer sent after the owner answered a consultation."""

    kind: ClassVar[Literal["followup"]] = "followup"
    consultation: str = ""
    reply_audit: str | None = None


class Preview(Decision):
    """What these people would be told (/preview); nothing is sent."""

    kind: ClassVar[Literal["preview"]] = "preview"
    preview_ms: float | None = None


class Approval(Chat):
    """The owner decided a held reply: approved, edited or rejected."""

    kind: ClassVar[Literal["approval"]] = "approval"
    approval: str = ""
    held_audit: str | None = None
    question: str | None = None
    reply: str | None = None
    by: str | None = None
    decision: str | None = None
    draft: str | None = None


class ApprovalExpired(Chat):
    kind: ClassVar[Literal["approval_expired"]] = "approval_expired"
    approval: str = ""
    held_audit: str | None = None
    question: str | None = None
    reply: str | None = None


class Consultation(Chat):
    """The owner is asked whether closed facts may answer a question."""

    kind: ClassVar[Literal["consultation"]] = "consultation"
    consultation: str = ""
    question: str | None = None
    event: str | None = None
    facts: list[str] = Field(default_factory=list)
    reply_audit: str | None = None
    joined: str | None = None


class ConsultationExpired(Chat):
    kind: ClassVar[Literal["consultation_expired"]] = "consultation_expired"
    consultation: str = ""
    question: str | None = None
    event: str | None = None
    facts: list[str] = Field(default_factory=list)


class Delivery(Chat):
    """A reply reached its reader (or may have: ``outcome`` "unknown")."""

    kind: ClassVar[Literal["delivery"]] = "delivery"
    of: str | None = None
    delivered: bool = True
    attempts: int | None = None
    outcome: str | None = None
    resent: str | None = None
    by: str | None = None


class Undelivered(Chat):
    """A message that did not reach its reader, kept for /resend."""

    kind: ClassVar[Literal["undelivered"]] = "undelivered"
    of: str | None = None
    #: the kind of message ("reply", "owner_note", ...), stored under the body's own ``kind``.
    message_kind: str = Field("reply", alias="kind")
    delivered: bool = False
    outcome: str | None = None
    attempts: int | None = None
    error: str | None = None
    undelivered: str | None = None


class DeliveryFailed(Entry):
    """Sending an approved reply or a follow-up failed."""

    kind: ClassVar[Literal["delivery_failed"]] = "delivery_failed"
    audit: str | None = None
    approval: str | None = None
    consultation: str | None = None
    error: str | None = None
    outcome: str | None = None


class PolicyChange(Entry):
    """A change the owner made (or the scheduler made for them); the rest of the body says what."""

    kind: ClassVar[Literal["policy_change"]] = "policy_change"
    action: str | None = None
    by: str | None = None


class Digest(Entry):
    kind: ClassVar[Literal["digest"]] = "digest"
    since: str | None = None
    until: str | None = None
    messages: int = 0
    people: int = 0
    waiting_review: int = 0
    sent: bool = False


class Erasure(Entry):
    """/forget erased these records' texts (:mod:`epmem.audit.erase`)."""

    kind: ClassVar[Literal["erasure"]] = "erasure"
    action: str = "erase texts"
    facts: list[str] = Field(default_factory=list)
    records: list[str] = Field(default_factory=list)
    by: str | None = None
    texts: int = 0


class AuditMigration(Entry):
    """The seal over format-1 records (:mod:`epmem.audit.schema`)."""

    kind: ClassVar[Literal["audit_migration"]] = "audit_migration"
    action: str | None = None
    sealed: int = 0
    seal: str | None = None
    first_bad: str | None = None


class LedgerSeal(Entry):
    """The seal over the disclosure ledger's rows written before it was chained."""

    kind: ClassVar[Literal["ledger_seal"]] = "ledger_seal"
    action: str | None = None
    upto: int = 0
    rows: int = 0
    digest: str | None = None


class Unread(Entry):
    """A stored body no model reads: a kind this version does not know, or one whose body does
    not fit its model (``problem`` says why). Shown as stored."""

    kind: ClassVar[str] = "?"
    problem: str = Field("", exclude=True)


MODELS: dict[str, type[Entry]] = {m.kind: m for m in (
    Paused, DelegateSilent, RateLimited, NonText, Empty, Rejected, Reply, AttemptedCommand, Held, Followup,
    Preview, Approval, ApprovalExpired, Consultation, ConsultationExpired, Delivery, Undelivered, DeliveryFailed,
    PolicyChange, Digest, Erasure, AuditMigration, LedgerSeal,
)}
#: what a record's kind may be.
KINDS = tuple(MODELS)


def entry_for(kind: str, body: dict[str, Any]) -> Entry:
    """The model of a body about to be written: an unknown kind or a mistyped field is an error."""
    model = MODELS.get(kind)
    if model is None:
        raise ValueError(f"unknown audit record kind {kind!r} (one of: {', '.join(KINDS)})")
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise ValueError(f"audit record {kind!r}: {_first_error(exc)}") from None


def read_entry(kind: str, body: dict[str, Any]) -> Entry:
    """The model of a stored body; never fails (what does not fit is :class:`Unread`)."""
    model = MODELS.get(kind)
    if model is None:
        return Unread.model_validate({**body, "problem": f"unknown kind {kind!r}"})
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        return Unread.model_validate({**body, "problem": _first_error(exc)})


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(body)"
    return f"field {where}: {first['msg']}"
