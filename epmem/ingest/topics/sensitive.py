"""Which sensitive topics a text touches: the English words, and the Chinese ones where the
text has Chinese."""

from __future__ import annotations

import re
from functools import lru_cache

from epmem.ingest.topics.chinese import TOPICS_ZH
from epmem.ingest.topics.english_livelihood import LIVELIHOOD
from epmem.ingest.topics.english_personal import PERSONAL
from epmem.ingest.topics.topic import Topic

_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")

#: every topic, in the order :func:`sensitive_topics` reports them.
TOPICS: tuple[Topic, ...] = LIVELIHOOD + PERSONAL

#: topics private enough that a policy keyword of a category not about them does not settle a
#: fact that touches them (family words and beliefs are too common in everyday talk for that).
VETO_TOPICS = frozenset({"health", "money", "career", "romance", "legal", "identity", "education"})


@lru_cache(maxsize=8192)
def sensitive_topics(text: str) -> tuple[tuple[str, str], ...]:
    """(topic, matched words) for every sensitive topic the text touches (in English words, or
    in Chinese ones where the text has Chinese: :data:`TOPICS_ZH`)."""
    out: list[tuple[str, str]] = []
    chinese = _HAN.search(text) is not None
    for topic in TOPICS:
        m = topic.pattern.search(text)
        if m is None and chinese and topic.name in TOPICS_ZH:
            m = TOPICS_ZH[topic.name].search(text)
        if m:
            out.append((topic.name, m.group(0).strip()))
    return tuple(out)
