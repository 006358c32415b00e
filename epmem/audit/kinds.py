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

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError


class RecordBody(BaseModel):
    """A record's body. ``kind`` is the record's kind (the ``audit.kind`` column)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    kind: ClassVar[str] = ""

    def body(self) -> dict[str, Any]:
        """The body as stored: the fields the writer set (and any extra ones), nothing defaulted."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    #: the record is something the owner (or the scheduler for them) did: a list shows the action.
    owner_action: ClassVar[bool] = False

    def get(self, name: str, default: Any = None) -> Any:
        """A field, declared or not (an older body's), else ``default``."""
        if name in type(self).model_fields:
            value = getattr(self, name)
            return default if value is None else value
        return (self.model_extra or {}).get(name, default)

    def asked(self) -> bool:
        """The record is about a question someone asked (its text may since have been erased)."""
        return "question" in self.model_fields_set or "question" in (self.model_extra or {})

    def headline(self) -> str:
        """A line for lists (``epmem audit list``, /audit): the question asked, else the action."""
        return str(self.get("question", self.get("action", "")))

    def summary(self) -> str:
        """A line for the audit page's timeline: the question, or what the owner or scheduler
        did, or why a message was not answered."""
        if self.asked():
            return str(self.get("question", ""))
        if self.owner_action:
            bits = [str(self.get("action", self.kind))]
            bits += [
                f"{k} {self.get(k)}"
                for k in ("target", "fact", "facts", "contact", "level", "to")
                if self.get(k) is not None
            ]
            return " ".join(bits)
        return str(self.get("non_text") or self.get("reason") or self.get("decision") or "")

    def disclosed_facts(self) -> list[str]:
        """The facts the record says were told (none for most kinds)."""
        return [str(f) for f in self.get("disclosed", [])]


class ChatRecord(RecordBody):
    """Where a message came from (absent for records of the owner's own doing)."""

    platform: str | None = None
    chat: str | None = None
    chat_kind: str | None = None
    sender: str | None = None
    contact: str | None = None
    #: how the reply would go out as the owner ("business", "mention", ...), when it would.
    delegation: str | None = None


class UnansweredRecord(ChatRecord):
    """A message the delegate did not answer from memory; ``reply`` is the note it sent, if any."""

    reply: str | None = None


class PausedRecord(UnansweredRecord):
    kind: ClassVar[Literal["paused"]] = "paused"


class DelegateSilentRecord(UnansweredRecord):
    kind: ClassVar[Literal["delegate_silent"]] = "delegate_silent"


class RateLimitedRecord(UnansweredRecord):
    kind: ClassVar[Literal["rate_limited"]] = "rate_limited"


class NonTextRecord(UnansweredRecord):
    kind: ClassVar[Literal["non_text"]] = "non_text"
    non_text: str | None = None


class EmptyRecord(UnansweredRecord):
    kind: ClassVar[Literal["empty"]] = "empty"


class RejectedRecord(UnansweredRecord):
    kind: ClassVar[Literal["rejected"]] = "rejected"
    reason: str = ""
    chars: int = 0


class DecisionRecord(ChatRecord):
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


class ReplyRecord(DecisionRecord):
    kind: ClassVar[Literal["reply"]] = "reply"


class AttemptedCommandRecord(DecisionRecord):
    """Someone other than the owner typed a command: answered as a question."""

    kind: ClassVar[Literal["attempted_command"]] = "attempted_command"


class HeldRecord(DecisionRecord):
    """A draft waiting for the owner's approval; nothing disclosed until it is sent."""

    kind: ClassVar[Literal["held"]] = "held"
    would_disclose: list[str] = Field(default_factory=list)
    draft: str | None = None
    approval: str = ""


class FollowupRecord(DecisionRecord):
    """The answer sent after the owner answered a consultation."""

    kind: ClassVar[Literal["followup"]] = "followup"
    consultation: str = ""
    reply_audit: str | None = None


class PreviewRecord(DecisionRecord):
    """What these people would be told (/preview); nothing is sent."""

    kind: ClassVar[Literal["preview"]] = "preview"
    preview_ms: float | None = None


class ApprovalRecord(ChatRecord):
    """The owner decided a held reply: approved, edited or rejected."""

    kind: ClassVar[Literal["approval"]] = "approval"
    approval: str = ""
    held_audit: str | None = None
    question: str | None = None
    reply: str | None = None
    by: str | None = None
    decision: str | None = None
    draft: str | None = None


class ApprovalExpiredRecord(ChatRecord):
    kind: ClassVar[Literal["approval_expired"]] = "approval_expired"
    approval: str = ""
    held_audit: str | None = None
    question: str | None = None
    reply: str | None = None


class ConsultationRecord(ChatRecord):
    """The owner is asked whether closed facts may answer a question."""

    kind: ClassVar[Literal["consultation"]] = "consultation"
    consultation: str = ""
    question: str | None = None
    event: str | None = None
    facts: list[str] = Field(default_factory=list)
    reply_audit: str | None = None
    joined: str | None = None
    #: the owner's message that asked (one message may ask about several events of a question,
    #: each its own consultation); None in records written before messages had several.
    batch: str | None = None


class ConsultationExpiredRecord(ChatRecord):
    kind: ClassVar[Literal["consultation_expired"]] = "consultation_expired"
    consultation: str = ""
    question: str | None = None
    event: str | None = None
    facts: list[str] = Field(default_factory=list)


class FollowupSkippedRecord(ChatRecord):
    """A group follow-up not sent because someone joined the chat after the question who may
    not know what it would tell (the owner is told)."""

    kind: ClassVar[Literal["followup_skipped"]] = "followup_skipped"
    consultation: str = ""
    question: str | None = None
    joined: list[str] = Field(default_factory=list)


class ConsultationSkippedRecord(ChatRecord):
    """Closed facts would answer a question, and the owner was not asked (bot/consultations/bounds.py):
    past a bound, the same news kept private already, an expired question not due again, or the
    look after the reply failed (fail closed). The digest lists them by topic, without words."""

    kind: ClassVar[Literal["consultation_skipped"]] = "consultation_skipped"
    reason: str = ""
    #: the contact the bounds count for (all of its identities), or the stranger's identity.
    asker: str | None = None
    stranger: bool = False
    event: str | None = None
    facts: list[str] = Field(default_factory=list)
    #: the category of the fact that would have been asked about (no words of it).
    topic: str | None = None
    reply_audit: str | None = None
    error: str | None = None


class DeliveryRecord(ChatRecord):
    """A reply reached its reader (or may have: ``outcome`` "unknown")."""

    kind: ClassVar[Literal["delivery"]] = "delivery"
    of: str | None = None
    delivered: bool = True
    attempts: int | None = None
    outcome: str | None = None
    resent: str | None = None
    by: str | None = None


class UndeliveredRecord(ChatRecord):
    """A message that did not reach its reader, kept for /resend."""

    kind: ClassVar[Literal["undelivered"]] = "undelivered"
    of: str | None = None
    #: the kind of message ("reply", "owner_note", ...), stored under the body's own ``kind``.
    message_kind: str = Field(
        "reply", validation_alias=AliasChoices("kind", "message_kind"), serialization_alias="kind"
    )
    delivered: bool = False
    outcome: str | None = None
    attempts: int | None = None
    error: str | None = None
    undelivered: str | None = None


class DeliveryFailedRecord(RecordBody):
    """Sending an approved reply or a follow-up failed."""

    kind: ClassVar[Literal["delivery_failed"]] = "delivery_failed"
    audit: str | None = None
    approval: str | None = None
    consultation: str | None = None
    error: str | None = None
    outcome: str | None = None


class PolicyChangeRecord(RecordBody):
    """A change the owner made (or the scheduler made for them); the rest of the body says what."""

    kind: ClassVar[Literal["policy_change"]] = "policy_change"
    owner_action: ClassVar[bool] = True
    action: str | None = None
    by: str | None = None


class DigestRecord(RecordBody):
    kind: ClassVar[Literal["digest"]] = "digest"
    since: str | None = None
    until: str | None = None
    messages: int = 0
    people: int = 0
    waiting_review: int = 0
    sent: bool = False


class ErasureRecord(RecordBody):
    """/forget erased these records' texts (:mod:`epmem.audit.erase`)."""

    kind: ClassVar[Literal["erasure"]] = "erasure"
    owner_action: ClassVar[bool] = True
    action: str = "erase texts"
    facts: list[str] = Field(default_factory=list)
    records: list[str] = Field(default_factory=list)
    by: str | None = None
    texts: int = 0


class AuditMigrationRecord(RecordBody):
    """The seal over format-1 records (:mod:`epmem.audit.schema`)."""

    kind: ClassVar[Literal["audit_migration"]] = "audit_migration"
    owner_action: ClassVar[bool] = True
    action: str | None = None
    sealed: int = 0
    seal: str | None = None
    first_bad: str | None = None


class LedgerSealRecord(RecordBody):
    """The seal over the disclosure ledger's rows written before it was chained."""

    kind: ClassVar[Literal["ledger_seal"]] = "ledger_seal"
    action: str | None = None
    upto: int = 0
    rows: int = 0
    digest: str | None = None


class UnreadRecord(RecordBody):
    """A stored body no model reads: a kind this version does not know, or one whose body does
    not fit its model (``problem`` says why). Shown as stored."""

    kind: ClassVar[str] = "?"
    problem: str = Field("", exclude=True)


MODELS: dict[str, type[RecordBody]] = {
    m.kind: m
    for m in (
        PausedRecord,
        DelegateSilentRecord,
        RateLimitedRecord,
        NonTextRecord,
        EmptyRecord,
        RejectedRecord,
        ReplyRecord,
        AttemptedCommandRecord,
        HeldRecord,
        FollowupRecord,
        PreviewRecord,
        ApprovalRecord,
        ApprovalExpiredRecord,
        ConsultationRecord,
        ConsultationExpiredRecord,
        FollowupSkippedRecord,
        ConsultationSkippedRecord,
        DeliveryRecord,
        UndeliveredRecord,
        DeliveryFailedRecord,
        PolicyChangeRecord,
        DigestRecord,
        ErasureRecord,
        AuditMigrationRecord,
        LedgerSealRecord,
    )
}
#: what a record's kind may be.
KINDS = tuple(MODELS)


def entry_for(kind: str, body: dict[str, Any]) -> RecordBody:
    """The model of a body about to be written: an unknown kind or a mistyped field is an error."""
    model = MODELS.get(kind)
    if model is None:
        raise ValueError(f"unknown audit record kind {kind!r} (one of: {', '.join(KINDS)})")
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise ValueError(f"audit record {kind!r}: {_first_error(exc)}") from None


def read_entry(kind: str, body: dict[str, Any]) -> RecordBody:
    """The model of a stored body; never fails (what does not fit is :class:`UnreadRecord`)."""
    model = MODELS.get(kind)
    if model is None:
        return UnreadRecord.model_validate({**body, "problem": f"unknown kind {kind!r}"})
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        return UnreadRecord.model_validate({**body, "problem": _first_error(exc)})


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(body)"
    return f"field {where}: {first['msg']}"
