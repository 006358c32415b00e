"""The hash-chained record of every decision, the disclosure ledger that follows from it, and
the erasure that /forget needs (texts go, the chain stays verifiable)."""

from epmem.audit.erase import Erasure, compact, erase_facts
from epmem.audit.log import AuditCorrupted, AuditLog, AuditRecord, Disclosure, export
from epmem.audit.schema import MESSAGE_OUTCOMES, outcome
from epmem.audit.sealing import Erased
from epmem.audit.verify import ChainStatus, check

__all__ = ["MESSAGE_OUTCOMES", "AuditCorrupted", "AuditLog", "AuditRecord", "ChainStatus", "Disclosure", "Erased",
           "Erasure", "check", "compact", "erase_facts", "export", "outcome"]
