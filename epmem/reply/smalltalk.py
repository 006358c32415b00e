"""Small talk: a message that is nothing but a greeting, thanks or goodbye is answered in kind.

"hi" is not a question about the owner, so it gets no deflection ("I'll let Sam know you
asked" would say there was something to ask). Only a whole message made of such words counts:
"hi, is Sam back?" is a question and goes the usual way. The reply depends on the message
alone, never on the memory or the policy's facts, so it tells nothing; it is audited like any
reply, opens no consultation and counts as no deflection.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

Talk = Literal["greeting", "thanks", "farewell"]

#: the words that make a message small talk, by what it is (English, lowercase).
_CORE: dict[Talk, frozenset[str]] = {
    "thanks": frozenset({"thanks", "thank", "thx", "ty", "cheers", "appreciated", "appreciate", "merci", "danke"}),
    "farewell": frozenset({"bye", "goodbye", "byebye", "cya", "night", "goodnight", "ciao", "farewell"}),
    "greeting": frozenset(
        {"hi", "hello", "hey", "heya", "hiya", "howdy", "yo", "greetings", "morning", "afternoon", "evening", "hallo"}
    ),
}
#: words that may go with them without making the message about anything.
_FILLER = frozenset(
    {"good", "there", "all", "everyone", "again", "you", "so", "much", "a", "lot", "very", "for", "it", "that",
     "oh", "ok", "okay", "great", "the", "help", "see", "soon", "later", "and", "dear", "many", "to", "have",
     "nice", "day", "talk", "bot", "delegate", "assistant", "folks", "guys", "team", "hii", "heyy", "anyway"}
)  # fmt: skip
_WORD = re.compile(r"[a-z]+")
_ZH: dict[Talk, re.Pattern[str]] = {
    "thanks": re.compile(r"^(谢谢|多谢|谢了|感谢|谢啦)(你|您|啦|了|哈|呀)*$"),
    "farewell": re.compile(r"^(再见|拜拜|晚安|回头见)(啦|了|哈|呀)*$"),
    "greeting": re.compile(r"^(你好|您好|嗨|哈喽|早上好|早安|上午好|中午好|下午好|晚上好|大家好|在吗)(啊|呀|哈|呢)*$"),
}
_NOT_ZH_TEXT = re.compile(r"[\s\W_]+", re.UNICODE)


def small_talk(text: str, names: Iterable[str] = ()) -> Talk | None:
    """What ``text`` is when it is only small talk (``names``: the owner's, which may be in a
    greeting: "hi Sam"); None when it says or asks anything else."""
    compact = _NOT_ZH_TEXT.sub("", text)
    if not compact or len(text) > 80:
        return None
    for talk, pattern in _ZH.items():
        if pattern.match(compact):
            return talk
    lowered = text.lower().replace("'", "").replace("\u2019", "")
    words = _WORD.findall(lowered)
    if not words or not _only_ascii_words(lowered):
        return None
    if "?" in text and not _only_greeting_question(words):
        return None
    allowed = _FILLER | {w for n in names for w in _WORD.findall(n.lower())}
    found = [t for t in _CORE if any(w in _CORE[t] for w in words)]
    if not found or any(w not in allowed and not any(w in c for c in _CORE.values()) for w in words):
        return None
    return found[0]


def _only_greeting_question(words: list[str]) -> bool:
    """ "hi?" or "hello there?" is still a greeting; any other question is a question."""
    return all(w in _CORE["greeting"] or w in {"there", "anyone"} for w in words)


def _only_ascii_words(lowered: str) -> bool:
    """Letters, spaces and punctuation only (an emoji is fine): no digits, no other script."""
    return not re.search(r"[0-9]", lowered) and all(ch.isascii() or not ch.isalpha() for ch in lowered)
