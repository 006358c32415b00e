"""The languages the delegate speaks: one seam, one registry, English and Chinese registered.

Each language is a :class:`LanguageSpec` (epmem/language/spec.py): detection, question kinds,
the owner addressed as "you", question parts, the relevance settings (a data file per
language), a reranker stand-in where the cross-encoder cannot read it, and the phrases the
delegate says. English (epmem/language/english.py) and Chinese (epmem/language/chinese.py) are
registered here; ``register`` adds another (CONTRIBUTING.md, "Adding a language").
"""

from __future__ import annotations

from typing import Literal, get_args

from epmem.language.chinese import CHINESE, han_count, is_chinese
from epmem.language.english import ENGLISH, FRAME
from epmem.language.settings import Provenance, RelevanceConfig, SettingsError, load_settings, write_settings
from epmem.language.spec import (
    DEFAULT,
    LanguageSpec,
    QuestionKind,
    Reranker,
    detect,
    get,
    of,
    register,
    registered,
    unregister,
)
from epmem.language.script import ENDS, choose, frame_words, join_sentences, say, sentence

#: a registered language's code ("en", "zh"; what :func:`choose` returns and :func:`say` takes).
Language = str
#: the languages shipped, which a policy may name for a contact or the owner (the policy's
#: JSON schema lists them: bot/examples/policy.schema.json).
Shipped = Literal["en", "zh"]
LANGUAGES: tuple[Shipped, ...] = get_args(Shipped)
#: English words of the delegate's own frames (kept under its old name).
ENGLISH_FRAME = FRAME

register(ENGLISH)
register(CHINESE)

__all__ = [
    "CHINESE",
    "DEFAULT",
    "ENDS",
    "ENGLISH",
    "ENGLISH_FRAME",
    "LANGUAGES",
    "Language",
    "LanguageSpec",
    "Provenance",
    "QuestionKind",
    "RelevanceConfig",
    "Reranker",
    "SettingsError",
    "Shipped",
    "choose",
    "detect",
    "frame_words",
    "get",
    "han_count",
    "is_chinese",
    "join_sentences",
    "load_settings",
    "of",
    "register",
    "registered",
    "say",
    "sentence",
    "unregister",
    "write_settings",
]
