"""The PTB application a connector (or a shared bot's front) talks to Telegram through.

One place builds it, so every Telegram client of the house makes the same choices: the proxy
settings of the environment are never trusted (``trust_env`` off), a send waits
``send_timeout_s`` for Telegram's answer, and PTB's own Bot API logging is kept out of the logs.
"""

from __future__ import annotations

import os
from typing import Any

from telegram.ext import Application, ApplicationBuilder
from telegram.request import HTTPXRequest

from connectors.logs import TELEGRAM_LOGGERS, guard_loggers
from connectors.telegram.config import TelegramConfig


def bot_application(config: TelegramConfig) -> Application[Any, Any, Any, Any, Any, Any]:
    # PTB 22 warns on every time span it hands out (a flood-control ``retry_after``...)
    # unless told to use timedelta already, which our code expects anyway.
    os.environ.setdefault("PTB_TIMEDELTA", "true")
    # PTB logs Bot API parameters and return values (message texts) at DEBUG
    guard_loggers(*TELEGRAM_LOGGERS)
    return (
        ApplicationBuilder()
        .token(config.token)
        .base_url(config.base_url)
        .request(HTTPXRequest(read_timeout=config.send_timeout_s, httpx_kwargs={"trust_env": False}))
        .get_updates_request(HTTPXRequest(httpx_kwargs={"trust_env": False}))
        .build()
    )
