"""The hash-chained record of every decision, the disclosure ledger that follows from it, and
the erasure that /forget needs (texts go, the chain stays verifiable)."""

from epmem.audit.delivery import DELIVERED, DISCARD_ACTION, DISCARDED, POSSIBLY, REFUSED, UNKNOWN, Ledger
from epmem.audit.erase import Erasure, compact, erase_facts
from epmem.audit.log import AuditCorrupted, AuditLog, AuditRecord, Disclosure, export
from epmem.audit.register import MIGRATIONS as FACT_REGISTER_MIGRATIONS
from epmem.audit.register import FactRegister
from epmem.audit.schema import MESSAGE_OUTCOMES, outcome
from epmem.audit.sealing import Erased
from epmem.audit.verify import ChainStatus, check

__all__ = ["DELIVERED", "DISCARDED", "DISCARD_ACTION", "FACT_REGISTER_MIGRATIONS", "MESSAGE_OUTCOMES", "POSSIBLY",
           "REFUSED", "UNKNOWN", "AuditCorrupted", "Ledger", "AuditLog", "AuditRecord", "ChainStatus", "Disclosure", "Erased",
           "Erasure", "FactRegister", "check", "compact", "erase_facts", "export", "outcome"]
