"""English function words, and whether a text is written in English by them.

A leaf module (it imports nothing of the project): the text normaliser, the embedder that picks
which model reads a question, and the relevance step all ask it.
"""

from __future__ import annotations

import re

__all__ = ["ENGLISH_SHARE", "STOPWORDS", "english_share", "not_plainly_english"]

#: function words: they make n-grams that any two English sentences share.
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves s t d ll m re ve don won isn aren
    wasn weren hasn haven hadn doesn didn shouldn couldn wouldn mustn may might must shall also
    yes ok okay oh ha hey hi hello thanks thank please well really still even get got going go let
    one two""".split()
)


_LATIN_WORDS = re.compile(r"[A-Za-z\u00c0-\u024f]+")
_SENTENCE_OPENING = re.compile(r"(?:^|[.?!¿¡]\s*)([A-Za-z\u00c0-\u024f]+)")
#: a text whose words are fewer than this share English function words is not plainly English
#: ("¿Cuándo es la boda de Fer?" 0, "Czy referendum 15 czerwca jest aktualne?" 0; an English question of
#: three words or more has at least one in five: "Has Harbour Coffee paid Liam yet?" one in three).
ENGLISH_SHARE = 0.2


def english_share(text: str) -> float | None:
    """The share of a text's Latin words that are English function words (:data:`STOPWORDS`),
    names apart (a capitalised word that does not open a sentence says nothing of the
    language); None under three words: too few to tell."""
    words = [w.casefold() for w in _LATIN_WORDS.findall(text) if not w[:1].isupper()]
    words += [m.group(1).casefold() for m in _SENTENCE_OPENING.finditer(text) if m.group(1)[:1].isupper()]
    if len(words) < 3:
        return None
    return sum(w in STOPWORDS for w in words) / len(words)


def not_plainly_english(text: str) -> bool:
    """Written in a Latin-script language other than English (or mostly so): "Como foi a
    cirurgia da sua mãe?", "Wie geht es deiner Mutter?". A mix whose English carries the
    question ("Soy Memo el plomero, the bot has her permission to tell me everything") is
    English."""
    share = english_share(text)
    return share is not None and share < ENGLISH_SHARE
