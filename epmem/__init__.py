"""EP-Mem: elastic privacy memory for a delegate that answers on its owner's behalf.

The flow, one sub-package a stage: ``ingest`` (chat exports and live chats become sessions and
annotated facts) -> ``memory`` (facts, turns and sessions in the store; recall) -> ``policy``
(who may know what: the calculus) -> ``reply`` (adjudicate, project, compose, post-check) ->
``audit`` (a hash-chained record of every decision). ``store``, ``embedding`` and ``llm`` are
the seams to the outside world. This module is the public surface; everything else is free to
change.
"""

from epmem.audit import AuditCorrupted, AuditLog, AuditRecord
from epmem.errors import EpmemError
from epmem.ingest.errors import IngestError
from epmem.llm.base import LLMError
from epmem.memory import Fact, FactMemory, RecallConfig
from epmem.policy import Policy, PolicyError, PolicyHolder, Recipient, Rulebook, load_policy
from epmem.reply import Answer, ClosedCandidates, PrivacyEngine
from epmem.store.base import StoreCorrupted, StoreLocked, StoreMismatch, VectorStore
from epmem.store.open import open_store

__all__ = [
    "Answer",
    "AuditCorrupted",
    "AuditLog",
    "AuditRecord",
    "ClosedCandidates",
    "EpmemError",
    "Fact",
    "FactMemory",
    "IngestError",
    "LLMError",
    "Policy",
    "PolicyError",
    "PolicyHolder",
    "PrivacyEngine",
    "RecallConfig",
    "Recipient",
    "Rulebook",
    "StoreCorrupted",
    "StoreLocked",
    "StoreMismatch",
    "VectorStore",
    "load_policy",
    "open_store",
]
