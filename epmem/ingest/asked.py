"""The question a fact answers (:attr:`epmem.memory.facts.Fact.context`).

An answer in a chat rarely says what it is about: Grace asks "What's the new pay like?" and the
owner answers "Base goes from 92k to 118k." Kept with the fact, the question lets recall and the
cross-encoder read the answer as what it is (docs/DESIGN.md sec. 2 and 5); it is never told.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from epmem.memory.sessions import Session

#: a message that asks something (any script's question mark).
_ASKS = re.compile(r"[?？]")
#: how much of the question before a fact recall reads with it (a long message is rarely one
#: question, and its other sentences would pull the fact towards what it does not say).
_CONTEXT_CHARS = 300
#: how many messages in a row one answer may run over.
_ANSWER_MESSAGES = 3


def asked_before(session: Session, turns: Sequence[int]) -> str | None:
    """The question a fact answers: the message just before the one it came from, or before the
    two or three messages its speaker wrote in a row, when someone else wrote it and it asks
    something ("what's the new pay like?" before "Base goes from 92k to 118k."). None for a
    fact that opens a conversation or follows a statement (which says what the fact is about
    no better than the fact)."""
    first = next((t for t in turns if 0 <= t < len(session.turns)), None)
    if first is None:
        return None
    speaker = session.turns[first].speaker
    # an answer may run over several messages ("Strict how?" / "Saving up for a new kitchen." /
    # "And the car's gone."): the question is the other speaker's message before them all
    earlier = first - 1
    while earlier >= 0 and session.turns[earlier].speaker == speaker and first - earlier < _ANSWER_MESSAGES:
        earlier -= 1
    if earlier < 0 or session.turns[earlier].speaker == speaker or not _ASKS.search(session.turns[earlier].text):
        return None
    return session.turns[earlier].text.strip()[:_CONTEXT_CHARS] or None
