"""Keeping message text out of the logs of the libraries the connectors use.

Our own log lines carry ids and decisions, never message text. The libraries underneath do not
promise that: Bolt logs a request whose signature does not verify *with its whole body* (at
INFO), slack-sdk logs every request and response body at DEBUG, python-telegram-bot logs the
parameters and return values of every Bot API call at DEBUG (``getUpdates`` returns the
messages), its webhook server logs what it received. A forged request would put someone's
words in the operator's log files.

:class:`PayloadRedactor` rewrites every record that does not come from this project: the
rendered line is cut where a payload starts (a ``{``, ``[`` or ``(``, or a word such as
``body:``, ``params:``, ``data:``, ``text=``), and an exception keeps its type and traceback
frames but not its message (an API error's message may quote the request). Installed on the
process's log handler by ``bot.log_setup.configure_logging``, and on Bolt's logger by the Slack
connector itself, so a connector used on its own does not leak either.
"""

from __future__ import annotations

import logging
import re
import traceback

#: loggers of this project: their lines are structured and carry no message text by design.
OWN_LOGGERS = ("bot", "connectors", "epmem", "benchmarks", "__main__")

_PAYLOAD = re.compile(
    r"[{\[(]"
    r"|\b(?:body|payload|params|parameters|data|json|text|message|content|value|values|result|return value"
    r"|response|kwargs|args|query|form|blocks|event|envelope)\b\s*[:=`]",
    re.IGNORECASE,
)
_MAX_KEPT = 200


def redact(line: str) -> str:
    """The part of a library's log line before anything that may be a payload."""
    match = _PAYLOAD.search(line)
    kept = line[: match.start()] if match else line
    kept = kept.rstrip(" ,:;-=`'\"")[:_MAX_KEPT]
    return f"{kept} [payload withheld]" if match or len(line) > _MAX_KEPT else kept


def is_own(name: str) -> bool:
    return any(name == own or name.startswith(own + ".") for own in OWN_LOGGERS)


class PayloadRedactor(logging.Filter):
    """Rewrites library log records so no payload reaches a log line (see the module doc)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if is_own(record.name) or getattr(record, "_epmem_redacted", False):
            return True
        try:
            line = record.getMessage()
        except Exception:  # a library's broken format string: keep its template only
            line = str(record.msg)
        record.msg = redact(line)
        record.args = ()
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            frames = "".join(traceback.format_tb(exc.__traceback__))
            record.exc_text = f"Traceback (most recent call last):\n{frames}{type(exc).__name__}: [message withheld]"
            record.exc_info = None
        record.stack_info = None
        record._epmem_redacted = True
        return True


class BoltNoise(logging.Filter):
    """Drops the one start-up warning Bolt gives because it reads ``SLACK_BOT_TOKEN`` from the
    environment by itself although we hand it an ``authorize`` function (it would not use it)."""

    def __init__(self) -> None:
        super().__init__()
        from slack_bolt.logger.messages import warning_client_prioritized_and_token_skipped, warning_token_skipped

        self._noise = {warning_client_prioritized_and_token_skipped(), warning_token_skipped()}

    def filter(self, record: logging.LogRecord) -> bool:
        return not (isinstance(record.msg, str) and record.msg in self._noise)


def bolt_logger() -> logging.Logger:
    """The base logger handed to Bolt: its filters are copied to every logger Bolt makes."""
    logger = logging.getLogger("slack_bolt.epmem")
    if not any(isinstance(f, BoltNoise) for f in logger.filters):
        logger.addFilter(BoltNoise())
        logger.addFilter(PayloadRedactor())
    return logger


def guard_loggers(*names: str) -> None:
    """Put a :class:`PayloadRedactor` on these library loggers (once each). A logger's filters
    apply to the records it creates itself, so the loggers a library actually logs through are
    named one by one."""
    for name in names:
        logger = logging.getLogger(name)
        if not any(isinstance(f, PayloadRedactor) for f in logger.filters):
            logger.addFilter(PayloadRedactor())


def sdk_logger() -> logging.Logger:
    """The logger handed to slack-sdk clients (they log request and response bodies at DEBUG)."""
    guard_loggers("slack_sdk.epmem")
    return logging.getLogger("slack_sdk.epmem")


#: the loggers python-telegram-bot (and its HTTP stack) log through.
TELEGRAM_LOGGERS = (
    "telegram",
    "telegram.ext",
    "telegram.Bot",
    "telegram.ext.ExtBot",
    "telegram.ext.Updater",
    "telegram.ext.Application",
    "telegram.ext.JobQueue",
    "telegram.BaseRequest",
    "telegram.HTTPXRequest",
    "httpx",
    "httpcore",
    "tornado.access",
    "tornado.application",
    "tornado.general",
)
