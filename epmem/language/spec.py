"""What a language brings to the delegate, and the one registry that holds the languages it speaks.

A :class:`LanguageSpec` is everything that differs between languages on the reply side: how a
message is told to be in it (``claims``, tried from the highest ``priority`` down), the kind of a
question asked in it, how the owner addressed as "you" is named for the models
(``addressed_to``), how a question splits into the parts the cross-encoder reads one at a time,
the reranker stand-in where the shipped cross-encoder cannot read it, the relevance settings
(a data file per language, epmem/language/relevance-<code>.yaml) and the phrases the delegate
says in it. English and Chinese are its two implementations (epmem/language/english.py,
epmem/language/chinese.py); a third is one module plus its data file (CONTRIBUTING.md,
"Adding a language"). The rest of the code asks :func:`of` or :func:`get` instead of testing
for a language.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np

from epmem.language.settings import RelevanceConfig

QuestionKind = Literal["open", "state", "yesno", "when", "where", "who", "what"]


class Reranker(Protocol):
    name: str

    def score(self, question: str, texts: Sequence[str], events: Sequence[str] | None = None) -> np.ndarray:
        """A relevance logit per text (higher: answers the question better). ``events``: the
        event of each text (a cover and its truth are one event told two ways), for a model that
        weighs a word by how many texts hold it."""
        ...


@dataclass(frozen=True)
class LanguageSpec:
    #: the code a policy, a contact and :func:`epmem.language.say` name it by ("en", "zh").
    code: str
    name: str
    #: whether a message is written in this language (tried from the highest priority down; the
    #: first language that claims a message is its language).
    claims: Callable[[str], bool]
    #: a question's kind (open, state, yesno, when, where, who, what).
    kind: Callable[[str], QuestionKind]
    #: the question with the owner, addressed as "you", named as the facts name them.
    addressed_to: Callable[[str, str], str]
    #: the whole question, then the parts that ask something of their own (at most ``limit``).
    parts: Callable[[str, int], list[str]]
    #: the relevance step's settings for a question in this language (loaded from its data file).
    relevance: RelevanceConfig
    #: what the delegate says, by key ({owner}, {body} filled in); a key missing here is said in
    #: English. More keys may be added: every reply and note reads this one catalogue.
    phrases: Mapping[str, str] = field(default_factory=dict)
    #: where the shipped cross-encoder cannot read the language: a stand-in built per reply from
    #: the owner's name (Chinese: the words a fact shares with the question). None: the model.
    stand_in: Callable[[str], Reranker] | None = None
    priority: int = 0
    #: whether a question points back to an earlier chat with the asker ("the thing we talked
    #: about"): recall then reads what the asker heard or said (epmem/memory/recall.py).
    refers_back: Callable[[str], bool] = lambda question: False
    #: the questions a message asks, each on its own (a message with one gives itself): each is
    #: recalled and answered as a question of its own (epmem/reply/relevance/).
    questions: Callable[[str], list[str]] = lambda message: [message.strip()]


_REGISTRY: dict[str, LanguageSpec] = {}
#: the language of a message none claims, and of a phrase a language does not have.
DEFAULT = "en"


def register(spec: LanguageSpec) -> None:
    """Speak ``spec``'s language from now on (replacing a language of the same code)."""
    _REGISTRY[spec.code] = spec


def unregister(code: str) -> None:
    """Stop speaking ``code`` (the default language cannot be removed)."""
    if code == DEFAULT:
        raise ValueError(f"the default language {DEFAULT!r} cannot be unregistered")
    _REGISTRY.pop(code, None)


def registered() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def get(code: str) -> LanguageSpec:
    """The language ``code`` (KeyError naming it when it is not registered)."""
    try:
        return _REGISTRY[code]
    except KeyError:
        raise KeyError(f"language {code!r} is not registered (registered: {', '.join(_REGISTRY)})") from None


def detect(text: str) -> str | None:
    """The code of the language ``text`` is written in, or None when no language claims it
    (no letters to tell by: "?", "👍")."""
    for spec in sorted(_REGISTRY.values(), key=lambda s: -s.priority):
        if spec.claims(text):
            return spec.code
    return None


def of(text: str) -> LanguageSpec:
    """The language of ``text``, the default one when none claims it."""
    return _REGISTRY[detect(text) or DEFAULT]
