"""structlog set-up: JSON lines when not on a terminal, readable output when on one.

Logs carry ids and decisions, never tokens or message bodies; the stdlib loggers of our
dependencies are routed through the same processors so one stream holds everything, and every
line of theirs passes :class:`connectors.logs.PayloadRedactor` first (at any level: Bolt logs a
forged request's body at INFO, slack-sdk and python-telegram-bot log message texts at DEBUG).
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

import structlog

from connectors.logs import PayloadRedactor

_configured = False


def configure_logging(level: str = "INFO", fmt: str = "auto", stream: TextIO | None = None) -> None:
    """Configure once per process. ``stream`` defaults to stderr (the console chat owns stdout);
    ``epmem run`` logs to stdout, where container log collectors look."""
    global _configured
    if _configured:
        return
    _configured = True
    out = stream or sys.stderr
    use_json = fmt == "json" or (fmt == "auto" and not out.isatty())
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_logger_name,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    # plain tracebacks: rich ones print local variables, which can hold tokens and message text.
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer()
        if use_json
        else structlog.dev.ConsoleRenderer(colors=False, exception_formatter=structlog.dev.plain_traceback)
    )
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(out)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                *([structlog.processors.format_exc_info] if use_json else []),
                renderer,
            ],
        )
    )
    handler.addFilter(PayloadRedactor())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # httpx logs full request URLs, and a Telegram URL contains the bot token.
    # Access logs carry request paths (a webhook path may hold a secret); APScheduler logs
    # every job it adds, which is every sync.
    for noisy in (
        "httpx",
        "httpx2",
        "httpcore",
        "telegram.ext.Updater",
        "apscheduler",
        "tornado.access",
        "aiohttp.access",
    ):
        logging.getLogger(noisy).setLevel(logging.WARNING)
