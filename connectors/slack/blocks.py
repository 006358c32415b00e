"""Block Kit for messages with buttons (approve / edit / reject on a held reply), as plain text."""

from __future__ import annotations

import re
from typing import Any

import structlog

from connectors.base import Action, grouped_runs

log = structlog.get_logger(__name__)

#: the action ids our buttons carry; clicks on anything else are not ours to forward.
ACTION_ID_PREFIX = "epmem_action_"
ACTION_ID_PATTERN = re.compile(r"^epmem_action_\d+$")

# Slack's own limits (Block Kit and Web API); exceeding them makes the whole post fail.
_SECTION_TEXT_MAX = 3000
_BUTTON_LABEL_MAX = 75
_BUTTON_VALUE_MAX = 2000
_ACTIONS_PER_BLOCK = 25


def build_blocks(text: str, actions: tuple[Action, ...]) -> list[dict[str, Any]]:
    """Section(s) with the text, as plain text (no markup, no links or mentions made of what a
    contact wrote: a note quotes their words, issue 38), then actions blocks: one per group of
    actions (:attr:`Action.group`: a note about several events has one per event).

    Button ``action_id`` is ``epmem_action_<i>`` and ``value`` the action's command, which comes
    back verbatim in the ``block_actions`` payload. A command too long for a button value is
    dropped, never truncated: a cut command could mean something else.
    """
    blocks: list[dict[str, Any]] = []
    for start in range(0, len(text), _SECTION_TEXT_MAX):
        chunk = text[start : start + _SECTION_TEXT_MAX]
        blocks.append({"type": "section", "text": {"type": "plain_text", "text": chunk, "emoji": False}})
    buttons: list[dict[str, Any]] = []
    groups: list[int | None] = []
    for i, action in enumerate(actions):
        if not action.command or len(action.command) > _BUTTON_VALUE_MAX:
            log.warning("slack.button_dropped", index=i, command_len=len(action.command))
            continue
        label = action.label or action.command
        if len(label) > _BUTTON_LABEL_MAX:
            label = label[: _BUTTON_LABEL_MAX - 1] + "\u2026"
        buttons.append(
            {
                "type": "button",
                "text": {"type": "plain_text", "text": label},
                "action_id": f"{ACTION_ID_PREFIX}{i}",
                "value": action.command,
            }
        )
        groups.append(action.group)
    # one actions block per group of buttons (a note about several events: one per event, the
    # same row of buttons as on Telegram), each at most _ACTIONS_PER_BLOCK; no groups: blocks
    # of _ACTIONS_PER_BLOCK
    for run in grouped_runs(buttons, groups, _ACTIONS_PER_BLOCK):
        blocks.append({"type": "actions", "elements": run})
    return blocks
