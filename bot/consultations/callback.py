"""What a consultation's answer is called where it is written down: one codec, parse and format.

Two strings carry an answer. A button's command, ``/consult ID KEY`` (or ``/consult ID cover
FACT``, typed), is what the owner's tap sends back; the evidence tag ``owner:consult:KEY`` is
what the review queue writes on each fact the answer decided (epmem/ingest/review.py), and what
the delegate reads back to learn from the owner's earlier answers (bot/consultations/learning.py).
Both are made and read here only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

#: the answers a consultation offers, each one tap (``/consult ID KEY``).
Key = Literal["tell", "like", "who", "private"]
KEYS: tuple[Key, ...] = get_args(Key)
#: not a tap: ``/consult ID cover FACT`` names the truth the fact asked about stands in for.
COVER = "cover"
#: the key of a decision the delegate took on its own from the owner's earlier answers.
LEARNED = "learned"
#: the evidence tag's prefix (``owner:consult:tell``).
TAG = "owner:consult:"


def tag(key: str) -> str:
    """The evidence tag of an answer (a key, ``cover``, ``learned``, or a caller's own)."""
    return f"{TAG}{key}"


def latest_key(evidence: Sequence[str]) -> str | None:
    """The key of the latest consultation answer among a fact's evidence, if any."""
    return next((e.removeprefix(TAG) for e in reversed(evidence) if e.startswith(TAG)), None)


def command(consultation: str, key: str) -> str:
    """What a button sends: ``/consult ID KEY``."""
    return f"/consult {consultation} {key}"


@dataclass(frozen=True, slots=True)
class Tap:
    """A typed ``/consult`` answer: which consultation, which key, and for ``cover`` the truth."""

    consultation: str
    key: Key | Literal["cover"]
    truth: str | None = None


def parse(rest: str) -> Tap | None:
    """``ID KEY`` or ``ID cover FACT`` (the words after ``/consult``); None when they do not fit."""
    words = rest.split()
    if len(words) == 3 and words[1] == COVER:
        return Tap(words[0], "cover", words[2])
    if len(words) == 2:
        key = next((k for k in KEYS if k == words[1]), None)
        if key is not None:
            return Tap(words[0], key)
    return None
