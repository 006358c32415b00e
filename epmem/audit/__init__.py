"""The hash-chained record of every decision, the disclosure ledger that follows from it, and
the erasure that /forget needs (texts go, the chain stays verifiable)."""

from epmem.audit.delivery import DELIVERED, DISCARD_ACTION, DISCARDED, POSSIBLY, REFUSED, UNKNOWN, Ledger
from epmem.audit.erase import Erasure, compact, erase_facts
# one model per record kind (the writers build them, every reader reads them)
from epmem.audit.kinds import (
    RecordBody,
    ChatRecord,
    UnansweredRecord,
    PausedRecord,
    DelegateSilentRecord,
    RateLimitedRecord,
    NonTextRecord,
    EmptyRecord,
    RejectedRecord,
    DecisionRecord,
    ReplyRecord,
    AttemptedCommandRecord,
    HeldRecord,
    FollowupRecord,
    PreviewRecord,
    ApprovalRecord,
    ApprovalExpiredRecord,
    ConsultationRecord,
    ConsultationExpiredRecord,
    DeliveryRecord,
    UndeliveredRecord,
    DeliveryFailedRecord,
    PolicyChangeRecord,
    DigestRecord,
    ErasureRecord,
    AuditMigrationRecord,
    LedgerSealRecord,
    UnreadRecord,
    KINDS,
)
from epmem.audit.log import AuditCorrupted, AuditLog, AuditRecord, Disclosure, export
from epmem.audit.register import MIGRATIONS as FACT_REGISTER_MIGRATIONS
from epmem.audit.register import FactRegister
from epmem.audit.schema import MESSAGE_OUTCOMES, outcome
from epmem.audit.sealing import Erased
from epmem.audit.verify import ChainStatus, check

__all__ = [
    "ApprovalExpiredRecord", "ApprovalRecord", "AttemptedCommandRecord", "AuditCorrupted", "AuditLog",
    "AuditMigrationRecord", "AuditRecord", "ChainStatus", "ChatRecord", "ConsultationExpiredRecord",
    "ConsultationRecord", "DELIVERED", "DISCARDED", "DISCARD_ACTION", "DecisionRecord", "DelegateSilentRecord",
    "DeliveryFailedRecord", "DeliveryRecord", "DigestRecord", "Disclosure", "EmptyRecord", "Erased", "Erasure",
    "ErasureRecord", "FACT_REGISTER_MIGRATIONS", "FactRegister", "FollowupRecord", "HeldRecord", "KINDS", "Ledger",
    "LedgerSealRecord", "MESSAGE_OUTCOMES", "NonTextRecord", "POSSIBLY", "PausedRecord", "PolicyChangeRecord",
    "PreviewRecord", "REFUSED", "RateLimitedRecord", "RecordBody", "RejectedRecord", "ReplyRecord", "UNKNOWN",
    "UnansweredRecord", "UndeliveredRecord", "UnreadRecord", "check", "compact", "erase_facts", "export", "outcome",
]
