"""What the owner remembers: F2 facts, F0 turns and F3 sessions in the vector store, and recall.

Recall is privacy-blind on purpose (see ``recall``): it finds what is relevant; the reply stage
decides what is allowed.
"""

from epmem.memory.conversations import SESSIONS, TURNS, Conversations, sessions_from_payloads
from epmem.memory.facts import Fact
from epmem.memory.links import MIGRATIONS as LINKS_MIGRATIONS
from epmem.memory.links import EventLinks, Matters
from epmem.memory.recall import ACROSS, FACTS, FactMemory, RecallConfig, Recalled, RecalledEvent, SubjectNormalizer
from epmem.memory.retrieval import RetrievalConfig, Retriever
from epmem.memory.sessions import Message, Session, SessionStream, build_sessions

__all__ = [
    "build_sessions",
    "Conversations",
    "EventLinks",
    "Fact",
    "FactMemory",
    "ACROSS",
    "FACTS",
    "LINKS_MIGRATIONS",
    "Matters",
    "Message",
    "RecallConfig",
    "Recalled",
    "RecalledEvent",
    "RetrievalConfig",
    "Retriever",
    "Session",
    "SESSIONS",
    "SessionStream",
    "sessions_from_payloads",
    "SubjectNormalizer",
    "TURNS",
]
