"""Which language a message is in, and the words the delegate says in each language it speaks.

Everything the delegate writes itself (the rules composer's frame, the deflection, its notes to
contacts, what it tells the owner) is said in the language of the message it answers: English
and Simplified Chinese. The facts are said as stored; only the frame around them changes.

Detection is by script, not by a statistical model: a message with Chinese characters is
Chinese when they outnumber its Latin words ("你的offer签了吗" is Chinese, "Did you see
子涵's post?" is English); Latin letters alone are English (the one Latin language spoken);
no letters at all ("?", "👍") says nothing, and the caller's fallback decides: the contact's
language from the policy, then the owner's (``owner.language``), then English. The choice
depends on the message and the policy alone, never on the memory: a deflection reads the same
whether a secret exists or not, in every language.
"""

from __future__ import annotations

import re
from typing import Literal, get_args

Language = Literal["en", "zh"]
LANGUAGES: tuple[Language, ...] = get_args(Language)
DEFAULT: Language = "en"

#: CJK unified ideographs (with extension A and the compatibility block).
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
#: Japanese kana and Korean hangul: not Chinese, even beside Chinese characters.
_OTHER_CJK = re.compile(r"[\u3040-\u30ff\uac00-\ud7af]")
_LATIN_WORD = re.compile(r"[A-Za-zÀ-ÖØ-öø-ÿ]+(?:['’][A-Za-z]+)?")
#: sentence ends of either script; a Chinese sentence ends with full-width punctuation.
ENDS = (".", "!", "?", "。", "！", "？", "…", "~", "～")


def han_count(text: str) -> int:
    return len(_HAN.findall(text))


def is_chinese(text: str) -> bool:
    """Chinese characters outnumber the Latin words (and no kana or hangul)."""
    han = han_count(text)
    if not han or len(_OTHER_CJK.findall(text)) > han:
        return False
    return han >= len(_LATIN_WORD.findall(text))


def detect(text: str) -> Language | None:
    """``zh``, ``en``, or None when the text has no letters to tell by."""
    if is_chinese(text):
        return "zh"
    if _LATIN_WORD.search(text) and not _OTHER_CJK.search(text):
        return "en"
    return None


def choose(text: str | None, *fallbacks: str | None) -> Language:
    """The language to answer ``text`` in: its own, else the first fallback the delegate speaks
    (the contact's language, then the owner's), else English."""
    found = detect(text) if text else None
    if found is not None:
        return found
    for lang in fallbacks:
        if lang in LANGUAGES:
            return lang
    return DEFAULT


def sentence(text: str, lang: Language = "en") -> str:
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


#: what the delegate says, per language. ``{owner}`` is the owner's name.
PHRASES: dict[str, dict[Language, str]] = {
    "deflection": {
        "en": "Sorry, I can't help with that. I'll let {owner} know you asked.",
        "zh": "不好意思，这个我没法回答。我会转告{owner}你问过。",
    },
    "share": {
        "en": "Here's what I can share: {body}",
        "zh": "据我所知，{body}",
    },
    # small talk (epmem/reply/smalltalk.py): said back in kind, never about anything
    "greeting": {
        "en": "Hi! I'm {owner}'s delegate. Ask me anything, and I'll tell you what I can.",
        "zh": "你好！我是{owner}的助理。有什么想问的尽管问，能说的我都会告诉你。",
    },
    "thanks": {
        "en": "You're welcome!",
        "zh": "不客气！",
    },
    "farewell": {
        "en": "Bye for now!",
        "zh": "再见！",
    },
    "non_text": {
        "en": "I can only read text messages, sorry.",
        "zh": "抱歉，我只能看文字消息。",
    },
    "too_long": {
        "en": "That message is too long for me to read. Could you keep it shorter?",
        "zh": "这条消息太长了，我看不过来。能说得简短一点吗？",
    },
    "rate_limited": {
        "en": "You're sending messages faster than I can answer. Please wait a minute.",
        "zh": "消息发得太快了，我回不过来。请等一分钟再发。",
    },
}


def say(key: str, lang: Language = "en", **values: str) -> str:
    """The phrase ``key`` in ``lang`` (English where a phrase has no translation)."""
    forms = PHRASES[key]
    return forms.get(lang, forms["en"]).format(**values)


#: English words of the delegate's own frames: none may appear in a reply to a Chinese message
#: (the facts themselves may hold English words: "NeurIPS", "offer").
ENGLISH_FRAME = re.compile(
    r"Here's what I can share|Sorry, I can't help|I'll let .{1,60} know you asked|can only read text"
    r"|too long for me|faster than I can answer|I'm .{1,60}'s delegate|You're welcome|Bye for now",
    re.I,
)


def frame_words(reply: str) -> list[str]:
    """The delegate's English frame phrases in ``reply`` (for checks of Chinese replies)."""
    return [m.group(0) for m in ENGLISH_FRAME.finditer(reply)]
