"""Owner commands: one registry, filled from one module per concern.

To add a command, declare it with ``@commands.command(...)`` in the module it belongs to (or in
a new module, added to ``MODULES`` below); /help, the README's table and the Slack manifests'
usage hint follow from the declaration. See CONTRIBUTING.md.
"""

from bot.commands import (
    annotations,
    answering,
    consult,
    contacts,
    exceptions,
    heard,
    inspect,
    matters,
    memory,
    platforms,
    review,
    schedule,
)
from bot.commands.registry import (
    OWNER_ONLY,
    OWNER_OR_SCHEDULED,
    Caller,
    Command,
    CommandContext,
    CommandError,
    UsageError,
    CommandRegistry,
    CommandSet,
    Reply,
    looks_like_command,
)

#: the order /help lists them in.
MODULES = (
    exceptions,
    heard,
    inspect,
    memory,
    answering,
    platforms,
    contacts,
    schedule,
    annotations,
    matters,
    review,
    consult,
)


def owner_commands() -> CommandRegistry:
    """Every owner command of the bot."""
    return CommandRegistry(*(m.commands for m in MODULES))


__all__ = [
    "MODULES",
    "OWNER_ONLY",
    "OWNER_OR_SCHEDULED",
    "Caller",
    "Command",
    "CommandContext",
    "CommandError",
    "UsageError",
    "CommandRegistry",
    "CommandSet",
    "Reply",
    "looks_like_command",
    "owner_commands",
]
