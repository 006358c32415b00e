"""From a question to the words that leave: recall, adjudicate, project, compose, post-check.

``engine.PrivacyEngine`` runs the stages in their fixed order; nothing reaches a composer
(``respond``) until the calculus has allowed it for every reader (``projection``), and the
words are checked again before they leave (``compose``, ``guard``, ``desensitize``).
"""

from epmem.reply.cumulative import LedgerKnowledge
from epmem.reply.engine import Answer, ClosedCandidates, PrivacyEngine
from epmem.reply.model_choice import ChooserConfig, ModelChooser
from epmem.reply.relevance import Relevance, RelevanceConfig, asks_yes_or_no
from epmem.reply.respond import LLMResponder, ReplyContext, Responder, RulesResponder, deflection
from epmem.reply.rumour import unsaid
from epmem.reply.sanity import SanityConfig

__all__ = [
    "Answer",
    "ChooserConfig",
    "ClosedCandidates",
    "LedgerKnowledge",
    "LLMResponder",
    "ModelChooser",
    "PrivacyEngine",
    "ReplyContext",
    "Relevance",
    "RelevanceConfig",
    "Responder",
    "RulesResponder",
    "SanityConfig",
    "asks_yes_or_no",
    "deflection",
    "unsaid",
]
