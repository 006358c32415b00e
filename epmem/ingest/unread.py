"""What the extractor could not turn into a fact, so that nothing anyone said is lost silently.

A sentence becomes no fact for one of two kinds of reasons. Filler, by an explicit rule
(:data:`FILLER`): a question, a greeting or reaction ("thanks!", "sorry to hear that"),
something too short to say anything on its own ("ok", "Go you!"), an instruction to the
listener that carries no news of the speaker's ("take what you need"), a clause that only says
who may know (it became a cue on the facts it is about), or a comment on such a cue ("Don't
tell Tom, he'd worry"). Anything else is :class:`Unread`: the import summary
(bot/importing.py) counts and quotes it, the import journal keeps it (epmem/ingest/journal.py),
and the daily digest points to ``epmem facts unread``; the owner can then /remember what should
have been kept.
"""

from __future__ import annotations

from dataclasses import dataclass

#: reasons a sentence yields no fact by an explicit rule (filler); see the module docstring.
FILLER = ("question", "reaction", "too-short", "instruction", "cue", "cue-comment")


@dataclass(frozen=True, slots=True)
class Unread:
    """A statement the extractor could not turn into a fact: where it was said (the session and
    the turn's index in it), by whom, a short quote, and why (``no-statement``: it has content,
    but no rule could read a statement out of it)."""

    session_id: str
    turn: int
    speaker: str
    quote: str
    reason: str = "no-statement"
