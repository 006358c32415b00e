"""What the owner remembers: F2 facts, F0 turns and F3 sessions in the vector store, and recall.

Recall is privacy-blind on purpose (see ``recall``): it finds what is relevant; the reply stage
decides what is allowed.
"""

from epmem.memory.facts import Fact
from epmem.memory.recall import FactMemory, RecallConfig, Recalled, RecalledEvent, SubjectNormalizer

__all__ = ["Fact", "FactMemory", "RecallConfig", "Recalled", "RecalledEvent", "SubjectNormalizer"]
