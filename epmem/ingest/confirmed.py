"""A yes to a yes-or-no question, retold as one fact quoting both (facts worth retelling).

"still on for the 10k at Tempelhof on Sunday?" is no fact (a question), and "yes, 9:00 at the
Columbiadamm entrance" says little on its own; together they are what was agreed. A fact told
back must make sense on its own (heard it from you, docs/DESIGN.md sec. 3), so the fact quotes
both as the chat said them, with who said each. Never for a what/where/when question, a "no", a
question of the same speaker, a yes that repeats every word of the question (its own statement
says it all), a question that checks a code, or past :data:`CONFIRMED_CHARS`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from epmem.ingest.extract import reply_index
from epmem.ingest.topics import holds_secret
from epmem.ingest.zh import has_cjk
from epmem.memory.sessions import Session
from epmem.textnorm import STOPWORDS, words

#: a reply that says yes to the question it answers ("Yes!", "ja, Tobi too", "sure, 8 works").
_ANSWER_YES = re.compile(
    r"^\W*(?:yes+|yeah|yep|yup|sure|of course|definitely|absolutely|sounds good|count me in|i'?m in|"
    r"aye|ja|sí|claro|sim|oui|evet|tak)\b|^\W*(?:好的?|可以|行|没问题|是的|当然)",
    re.IGNORECASE,
)
#: a question that asks for something other than yes or no ("where is the lunch?", "你几点到？").
_WH_QUESTION = re.compile(
    r"\b(?:what|where|when|who|whom|whose|which|why|how)\b|什么|哪|几|谁|为什么|怎么|多少", re.IGNORECASE
)
#: a token of letters and digits ("4B729", "A3F9"), not a plain count, time or date ("10k",
#: "9pm", "15th"): a question that confirms one is checking a code, never retold.
_CODE_TOKEN = re.compile(
    r"(?<![\w])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])(?![\d]+(?:st|nd|rd|th|am|pm|h|k|km|kg|min)\b)[\w-]{4,}(?![\w])", re.I
)
#: the most characters a question and its "yes" are retold with (more is more than one matter).
CONFIRMED_CHARS = 240


def confirmed_question(session: Session, t: int, speaker_name: Callable[[Session, int], str]) -> tuple[int, str] | None:
    """When turn ``t`` says yes to someone else's yes-or-no question: (the question's index, the
    fact's words), else None. The caller leaves out a message with a cue or a cover story: those
    are read as such, never retold."""
    turn = session.turns[t]
    if not _ANSWER_YES.match(turn.text):
        return None
    q = reply_index(session, t)
    q = t - 1 if q is None else q
    if q < 0 or session.turns[q].speaker == turn.speaker:
        return None
    asked, said = " ".join(session.turns[q].text.split()), " ".join(turn.text.split())
    if not asked.endswith(("?", "？")) or _WH_QUESTION.search(asked):
        return None
    if holds_secret(asked) or _CODE_TOKEN.search(asked):
        return None  # "le digicode c'est toujours 4B729 ?": a code is never retold
    if len(asked) + len(said) > CONFIRMED_CHARS:
        return None
    if not has_cjk(asked) and not set(words(asked)) - set(words(said)) - STOPWORDS:
        return None  # the yes says it all itself ("Yes! For Dad's birthday we drive to ...")
    asker, speaker = speaker_name(session, q), speaker_name(session, t)
    if has_cjk(asked):
        return q, f"{asker}问：“{asked}” {speaker}答：“{said}”"
    return q, f"{asker} asked: \u201c{asked}\u201d {speaker}: \u201c{said}\u201d"
