"""What a sensitive topic is, and how its English words are matched."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Topic:
    name: str
    #: what the topic is about, in words an embedder can match to a category profile.
    description: str
    pattern: re.Pattern[str]
    #: whether the topic names a kind of information a policy category could be about (secrecy
    #: itself is not one: it says how private, not what about).
    maps: bool = True


def stems(*words: str) -> re.Pattern[str]:
    """Word stems, matched at a word start; a trailing ``$`` means the whole word only."""
    parts = [re.escape(s[:-1]) + r"\b" if s.endswith("$") else re.escape(s) + r"\w*" for s in words]
    return re.compile(r"(?<![\w])(?:" + "|".join(parts) + ")", re.IGNORECASE)
