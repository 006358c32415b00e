"""Which language to answer a message in, and sentences finished and joined in their script.

Everything the delegate writes itself (the rules composer's frame, the deflection, its notes to
contacts, what it tells the owner) is said in the language of the message it answers; the
facts are said as stored, and only the frame around them changes. The language is the one that
claims the message (epmem/language/spec.py: detection is by script, not by a statistical
model); no letters at all ("?", "👍") says nothing, and the caller's fallback decides: the
contact's language from the policy, then the owner's (``owner.language``), then English. The
choice depends on the message and the policy alone, never on the memory: a deflection reads the
same whether a secret exists or not, in every language.
"""

from __future__ import annotations

from epmem.language import spec
from epmem.language.chinese import han_count, is_chinese
from epmem.language.english import FRAME

#: sentence ends of either script; a Chinese sentence ends with full-width punctuation.
ENDS = (".", "!", "?", "。", "！", "？", "…", "~", "～")


def choose(text: str | None, *fallbacks: str | None) -> str:
    """The language to answer ``text`` in: its own, else the first fallback the delegate speaks
    (the contact's language, then the owner's), else the default (English)."""
    found = spec.detect(text) if text else None
    if found is not None:
        return found
    for lang in fallbacks:
        if lang is not None and lang in spec.registered():
            return lang
    return spec.DEFAULT


def sentence(text: str, lang: str = "en") -> str:
    """``text`` as one finished sentence: a full stop in the text's own script, never a second
    one ("已经辞职了。." was the old bug)."""
    text = text.strip()
    if text.endswith(ENDS) or not text:
        return text
    return text + ("。" if is_chinese(text) or (lang == "zh" and han_count(text)) else ".")


def join_sentences(sentences: list[str]) -> str:
    """Sentences run together: no space after a Chinese full stop, one after a Latin one."""
    out = ""
    for s in sentences:
        if out and not out.endswith(("。", "！", "？", "…")):
            out += " "
        out += s
    return out


def say(key: str, lang: str = "en", **values: str) -> str:
    """The phrase ``key`` in ``lang`` (in English where the language has no such phrase, or is
    not registered)."""
    registered = spec.registered()
    phrases = spec.get(lang).phrases if lang in registered else {}
    form = phrases.get(key) or spec.get(spec.DEFAULT).phrases[key]
    return form.format(**values)


def frame_words(reply: str) -> list[str]:
    """The delegate's English frame phrases in ``reply`` (for checks of replies in another
    language)."""
    return [m.group(0) for m in FRAME.finditer(reply)]
