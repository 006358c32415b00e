"""The hash-chained record of every decision, and the disclosure ledger that follows from it."""

from epmem.audit.log import AuditCorrupted, AuditLog, AuditRecord, Disclosure, export

__all__ = ["AuditCorrupted", "AuditLog", "AuditRecord", "Disclosure", "export"]
