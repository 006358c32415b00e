"""Consultations: the delegate asks the owner at the moment someone's question needs a closed fact
(docs/DESIGN.md sec. 6.7). One package, one service (:class:`Consultations`), built or left out
by bot/runtime.py:

- ``store``: the table, one row per (event, asker) (a message's rows share a ``batch``), with its bounds' settings (``ConsultConfig``);
- ``service``: what the owner's parts hold (the table and the review queue);
- ``gate``: whether a reply may consult at all; ``bounds``: how often the owner may be asked;
- ``flow``: asking (``ask_about``: one message, one or more events), answering (``answer``) and the next question (``ask_next``);
- ``followup``: following up the askers once the owner has answered;
- ``after_reply``: the look for what to consult about, after the reply has gone;
- ``learning``: the owner's earlier answers (``SIMILAR``), and opening on them (opt-in);
- ``wording``: the note, its buttons and its phrases, per language;
- ``callback``: the ``/consult ID KEY`` commands and the ``owner:consult:KEY`` tags, made and read.

The owner's command is bot/commands/consult.py (beside every other owner command).
"""

from bot.consultations.after_reply import Background, Notify, consult_after_reply
from bot.consultations.callback import COVER, KEYS, LEARNED, Key, Tap, parse
from bot.consultations.flow import Settled, answer, ask_about, ask_next, ask_owner, cover_answer, review_answer
from bot.consultations.followup import follow_up, follow_up_events
from bot.consultations.gate import may_consult
from bot.consultations.learning import SIMILAR, consistent, earlier_answers, open_as_learned
from bot.consultations.service import Consultations
from bot.consultations.store import MIGRATIONS, ConsultConfig, Consultation, ConsultationStore, State
from bot.consultations.wording import owner_language

__all__ = [
    "COVER",
    "KEYS",
    "LEARNED",
    "MIGRATIONS",
    "SIMILAR",
    "Background",
    "ConsultConfig",
    "Consultation",
    "ConsultationStore",
    "Consultations",
    "Key",
    "Notify",
    "Settled",
    "State",
    "Tap",
    "answer",
    "ask_about",
    "ask_next",
    "ask_owner",
    "consistent",
    "consult_after_reply",
    "cover_answer",
    "earlier_answers",
    "follow_up",
    "follow_up_events",
    "may_consult",
    "open_as_learned",
    "owner_language",
    "parse",
    "review_answer",
]
