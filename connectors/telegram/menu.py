"""The owner's command menu: Telegram's "/" list, in the owner's private chat with the bot only.

Set at start with a chat scope, so each owner of a shared bot sees their own commands and
nobody else sees any (a contact typing a command is answered as a question anyway). A menu that
cannot be set is a log line, never a failed start: the commands work without it.
"""

from __future__ import annotations

import structlog
from telegram import Bot, BotCommand, BotCommandScopeChat
from telegram.error import TelegramError

log = structlog.get_logger(__name__)


async def show_owner_commands(bot: Bot, owner_user_id: int | None, commands: tuple[tuple[str, str], ...]) -> None:
    if owner_user_id is None or not commands:
        return
    try:
        await bot.set_my_commands(
            [BotCommand(word, summary) for word, summary in commands], scope=BotCommandScopeChat(owner_user_id)
        )
    except TelegramError as exc:
        log.warning("telegram.owner_menu_not_set", error=type(exc).__name__)
