"""Inline buttons: an :class:`Action` becomes a button whose data is the command it stands for.

Telegram refuses callback data over 64 bytes. A longer command is kept in memory behind a short
random key; a key lost to a restart makes the button answer "expired" rather than guess. The
commands on a held reply's buttons (``/approve ID``) are short, so they never need a key and
keep working across restarts.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from collections.abc import Sequence

from telegram import InlineKeyboardButton, InlineKeyboardMarkup

from connectors.base import Action, grouped_runs

#: Telegram refuses callback_data longer than this many bytes.
CALLBACK_DATA_MAX_BYTES = 64
#: Telegram shows at most this many buttons in one row of an inline keyboard.
ROW_MAX = 8
#: prefix of the short keys that stand in for long button commands.
_KEY_PREFIX = "cb#"
_STORE_MAX = 4096


class Buttons:
    """Builds keyboards and resolves a pressed button's data back to its command."""

    def __init__(self) -> None:
        self._commands: OrderedDict[str, str] = OrderedDict()

    def markup(self, actions: Sequence[Action]) -> InlineKeyboardMarkup | None:
        """One button per action: a single row for up to three, else one per row; actions in
        groups (a note about several events, :attr:`Action.group`) one row per group, of at
        most :data:`ROW_MAX` buttons (a longer group goes on in the next row)."""
        if not actions:
            return None
        buttons = [InlineKeyboardButton(a.label, callback_data=self.data(a.command)) for a in actions]
        if any(a.group is not None for a in actions):
            return InlineKeyboardMarkup(grouped_runs(buttons, [a.group for a in actions], ROW_MAX))
        rows = [buttons] if len(buttons) <= 3 else [[button] for button in buttons]
        return InlineKeyboardMarkup(rows)

    def data(self, command: str) -> str:
        """The command itself when Telegram accepts it, else a short key kept in memory.

        Commands that look like our keys are stored too, so a key can never be mistaken for a
        command or the other way round.
        """
        size = len(command.encode("utf-8"))
        if 0 < size <= CALLBACK_DATA_MAX_BYTES and not command.startswith(_KEY_PREFIX):
            return command
        key = _KEY_PREFIX + secrets.token_urlsafe(12)
        self._commands[key] = command
        while len(self._commands) > _STORE_MAX:
            self._commands.popitem(last=False)
        return key

    def resolve(self, data: str) -> str | None:
        """The command behind a button's data; None for a key we no longer hold."""
        if data.startswith(_KEY_PREFIX):
            return self._commands.get(data)
        return data
