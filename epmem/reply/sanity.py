"""Is a model's answer a reply at all? The sanity rules every model's words must pass.

A model's output is untrusted: a small or broken model repeats one sentence to the token limit,
copies the prompt's ``<<<reply ...`` markers, answers JSON when prose was asked for, or switches
language. None of that leaks (the model only ever saw allowed facts), but no person should
receive it. :func:`check_reply` names the first rule a text breaks, or None; the composer then
sends the rules reply instead and the audit records the reason.

The rules, in the order they are checked (each reason is the audit's word for it; the most
telling comes first, so an echoed prompt is ``markers`` rather than ``too_long``):

``empty``       nothing but whitespace and punctuation;
``markers``     prompt delimiters (``<<<``, ``>>>``, their neutralised guillemets, ``end message``
                lines) or chat-template/markup tags (``<|im_start|>``, ``[INST]``, ``</s>``,
                ``<reply>``, ``<think>``);
``prompt``      a copy of the prompt's own instructions or labels (any six consecutive words of
                the template's fixed text, or a line starting with one of its field labels);
``json``        JSON or a code block where prose was asked for;
``repetition``  the same sentence twice, a phrase looping three times, or very few distinct words;
``truncated``   the model stopped at its token limit (``finish_reason=length``): half a reply;
``too_long``    longer than the configured bound (a reply is a few sentences, not a page);
``language``    confidently in another language than the message it answers: a message in
                Chinese answered without Chinese (or an English one in Chinese), by script
                (epmem/language/: Chinese is one "word" per phrase, too few for the model
                below); otherwise by py3langid, when both texts are long enough to tell.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from epmem.language import DEFAULT, detect, han_count

REASONS = ("empty", "markers", "prompt", "json", "repetition", "truncated", "too_long", "language")

_MARKERS = re.compile(
    r"<<<|>>>|[<>«»‹›]{3}|^\s*(?:[>»]+\s*)?end\s+(?:message|facts|turns|transcript|reply)\b"
    r"|<\|[^|>]{1,40}\|>|\[/?INST\]|\[/?SYS\]|<</?SYS>>|</?s>|<(?:start|end)_of_turn>"
    r"|</?[A-Za-z_][\w:-]{0,30}(?:\s[^<>]{0,200})?/?>",
    re.IGNORECASE | re.MULTILINE,
)
_LABELS = re.compile(
    r"^\s*(?:owner|owner's persona|owner's style|you are talking with|recent turns of this chat"
    r"|facts you may use|the message to answer|rules|assistant|system|user)\s*[:(]",
    re.IGNORECASE | re.MULTILINE,
)
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?|\d+", re.UNICODE)
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_CAPITALISED = re.compile(r"\b[A-ZÀ-ÖØ-Þ][\w'’-]*")
_FENCE = re.compile(r"```")


@dataclass(frozen=True, slots=True)
class SanityConfig:
    #: the longest reply sent, in characters (a reply is a few sentences).
    max_chars: int = 1200
    #: n-gram length for "a copy of the prompt's instructions".
    prompt_ngram: int = 6
    #: a phrase of this many words repeated ``loop_count`` times is a loop.
    loop_ngram: int = 4
    loop_count: int = 3
    #: a sentence of at least this many words said twice is repetition.
    repeat_sentence_words: int = 4
    #: texts of at least ``diversity_min_words`` words need this share of distinct words.
    min_diversity: float = 0.35
    diversity_min_words: int = 40
    #: the language rule judges only texts with this many lower-case words on both sides and
    #: a reply language detected with at least this probability, the message's own probability
    #: for that language being below ``language_other_max``.
    language_min_words: int = 3
    language_confidence: float = 0.9
    language_other_max: float = 0.05

    def __post_init__(self) -> None:
        if self.max_chars <= 0:
            raise ValueError("SanityConfig.max_chars must be > 0")


def _words(text: str) -> list[str]:
    return [w.casefold() for w in _WORD.findall(text)]


def _ngrams(tokens: list[str], n: int) -> Iterable[tuple[str, ...]]:
    return (tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def prompt_shingles(static_texts: Iterable[str], n: int = 6) -> frozenset[tuple[str, ...]]:
    """Every ``n`` consecutive words of a template's fixed text (its ``$fields`` removed)."""
    out: set[tuple[str, ...]] = set()
    for text in static_texts:
        for chunk in re.split(r"\$\w+|\n\s*\n", text):
            out.update(_ngrams(_words(chunk), n))
    return frozenset(out)


def _is_json(text: str) -> bool:
    stripped = text.strip()
    if _FENCE.search(stripped):
        return True
    if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"):
        try:
            json.loads(stripped)
            return True
        except ValueError:
            return stripped[:2] in ('{"', "[{", '["')
    return stripped.startswith('{"')


def _repetition(text: str, cfg: SanityConfig) -> bool:
    sentences = [" ".join(_words(s)) for s in _SENTENCE.split(text)]
    counted = Counter(s for s in sentences if len(s.split()) >= cfg.repeat_sentence_words)
    if counted and counted.most_common(1)[0][1] >= 2:
        return True
    tokens = _words(text)
    grams = Counter(_ngrams(tokens, cfg.loop_ngram))
    if grams and grams.most_common(1)[0][1] >= cfg.loop_count:
        return True
    return len(tokens) >= cfg.diversity_min_words and len(set(tokens)) / len(tokens) < cfg.min_diversity


class _Languages:
    """py3langid (its model ships in the wheel), loaded once, on first use."""

    _lock = threading.Lock()
    _identifier: Any = None

    @classmethod
    def probabilities(cls, text: str) -> dict[str, float]:
        with cls._lock:
            if cls._identifier is None:
                from py3langid.langid import MODEL_FILE, LanguageIdentifier

                cls._identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
            ranked = cls._identifier.rank(text)
        return {lang: float(p) for lang, p in ranked}


@lru_cache(maxsize=1024)
def _language_profile(text: str) -> tuple[tuple[str, float], ...]:
    probs = _Languages.probabilities(text)
    return tuple(sorted(probs.items(), key=lambda kv: -kv[1]))


def _plain(text: str) -> str:
    """Names say nothing about a text's language ("Tomás", "Saltsjöbaden"): drop them."""
    return " ".join(w for w in _words(_CAPITALISED.sub(" ", text)) if not w.isdigit())


def warm_up() -> None:
    """Load the language model now (~1 s), not during someone's first reply."""
    _language_profile("warm up the language identifier")


def other_language(reply: str, message: str, cfg: SanityConfig = SanityConfig()) -> bool:
    """True only when the reply is confidently in a language the message is confidently not in."""
    asked = detect(message)
    if asked not in (None, DEFAULT):  # a Chinese message is answered in Chinese (facts may quote English words)
        return detect(reply) != asked and bool(_words(reply))
    if asked == "en" and han_count(reply) and detect(reply) == "zh" and len(_words(message)) >= cfg.language_min_words:
        return True
    plain_reply, plain_message = _plain(reply), _plain(message)
    if min(len(plain_reply.split()), len(plain_message.split())) < cfg.language_min_words:
        return False
    reply_lang, reply_p = _language_profile(plain_reply)[0]
    if reply_p < cfg.language_confidence:
        return False
    message_probs = dict(_language_profile(plain_message))
    return message_probs.get(reply_lang, 0.0) < cfg.language_other_max


def check_reply(
    text: str | None,
    *,
    question: str,
    prompt: frozenset[tuple[str, ...]] = frozenset(),
    finish_reason: str | None = None,
    config: SanityConfig | None = None,
) -> str | None:
    """The first sanity rule ``text`` breaks (one of :data:`REASONS`), or None for a reply."""
    cfg = config or SanityConfig()
    body = (text or "").strip()
    if not _words(body):
        return "empty"
    if _MARKERS.search(body):
        return "markers"
    if _LABELS.search(body) or (prompt and any(g in prompt for g in _ngrams(_words(body), cfg.prompt_ngram))):
        return "prompt"
    if _is_json(body):
        return "json"
    if _repetition(body, cfg):
        return "repetition"
    if finish_reason == "length":
        return "truncated"
    if len(body) > cfg.max_chars:
        return "too_long"
    if other_language(body, question, cfg):
        return "language"
    return None
