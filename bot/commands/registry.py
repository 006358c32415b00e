"""The owner's commands, each declared once: name, aliases, usage, who may run it, what it does.

A module of commands keeps a :class:`CommandSet` and declares each verb with a decorator::

    commands = CommandSet()

    @commands.command("pause", summary="stop answering anyone until /resume")
    async def pause(owner: OwnerServices, args: str, ctx: CommandContext) -> str:
        ...

:class:`CommandRegistry` joins the sets (bot/commands/__init__.py lists them) and is the only
thing that runs a command. /help, the README's command table (checked by a test) and the
Slack manifests' usage hint are all rendered from it, so none of them can drift.

Commands are plain text (``/allow f3 to ana for 7d``) so that Telegram, Slack and the console
share one parser. Only the agent decides who is the owner; commands never see anyone else.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from connectors.base import Action, Inbound
from epmem.errors import EpmemError
from epmem.policy import Resolved

if TYPE_CHECKING:
    from bot.services import OwnerServices

_COMMAND = re.compile(r"^/([A-Za-z][\w-]*)(?:@\w+)?\b\s*(.*)$", re.DOTALL)

#: who runs a command: the owner typing it, or the scheduler running it at its date.
Caller = Literal["owner", "scheduler"]
OWNER_ONLY: frozenset[Caller] = frozenset({"owner"})
OWNER_OR_SCHEDULED: frozenset[Caller] = frozenset({"owner", "scheduler"})


class CommandError(EpmemError, ValueError):
    """A command the owner mistyped; the message says how to fix it."""


class UsageError(CommandError):
    """The arguments do not fit the command: the registry answers with the command's declared
    usage (the one /help and the README show, so the three cannot drift), plus ``hint`` if given."""

    def __init__(self, hint: str = "") -> None:
        super().__init__(hint)
        self.hint = hint


@dataclass(frozen=True, slots=True)
class CommandContext:
    inbound: Inbound
    sender: Resolved
    caller: Caller = "owner"


@dataclass(frozen=True, slots=True)
class Reply:
    """A command's answer with buttons (one tap per choice on Telegram and Slack, typed on the
    console). Each action's command runs as if the presser typed it: only the owner's count."""

    text: str
    actions: tuple[Action, ...] = ()


Handler = Callable[["OwnerServices", str, CommandContext], Awaitable["str | Reply"]]


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    #: the arguments, as shown after ``/name`` (empty for none).
    usage: str
    #: one line for /help and the README.
    summary: str
    handler: Handler
    aliases: tuple[str, ...] = ()
    who: frozenset[Caller] = OWNER_ONLY
    #: more for the README's table than /help has room for.
    details: str = ""
    #: a typical use (without the slash) for the Slack manifest's usage hint.
    example: str | None = None

    @property
    def synopsis(self) -> str:
        return f"/{self.name} {self.usage}".rstrip()


class CommandSet:
    """The commands one module declares, in the order /help shows them."""

    def __init__(self) -> None:
        self.commands: list[Command] = []

    def command(
        self,
        name: str,
        usage: str = "",
        *,
        summary: str,
        aliases: tuple[str, ...] = (),
        who: frozenset[Caller] = OWNER_ONLY,
        details: str = "",
        example: str | None = None,
    ) -> Callable[[Handler], Handler]:
        def declare(handler: Handler) -> Handler:
            self.commands.append(Command(name, usage, summary, handler, aliases, who, details, example))
            return handler

        return declare

    def __iter__(self) -> Iterator[Command]:
        return iter(self.commands)


def looks_like_command(text: str) -> bool:
    return _COMMAND.match(text.strip()) is not None


def parse(text: str) -> tuple[str, str] | None:
    """``"/Allow@bot f3 to ana"`` -> ``("allow", "f3 to ana")``; None when it is not a command."""
    m = _COMMAND.match(text.strip())
    return (m.group(1).lower(), m.group(2).strip()) if m else None


class CommandRegistry:
    def __init__(self, *sets: Iterable[Command]) -> None:
        # /help is every registry's own: it lists what this registry holds (Telegram sends
        # /start when someone opens the bot, so that shows the list too).
        builtin = Command("help", "", "this list", self._help, aliases=("start",), example="help")
        self.commands: list[Command] = [*(c for s in sets for c in s), builtin]
        self._by_word: dict[str, Command] = {}
        for c in self.commands:
            for word in (c.name, *c.aliases):
                if word in self._by_word:
                    raise ValueError(f"/{word} is declared twice")
                self._by_word[word] = c

    def find(self, word: str) -> Command | None:
        return self._by_word.get(word.lower().lstrip("/"))

    def menu(self) -> tuple[tuple[str, str], ...]:
        """(command, what it does) for a platform's command menu: each command by the first of
        its words a menu accepts (Telegram: a-z, 0-9 and _, at most 32: /who-knows is
        /who_knows there), in /help's order, at most 100 (Telegram's limit)."""
        out = []
        for c in self.commands:
            words = (c.name, c.name.replace("-", "_"), *c.aliases)
            word = next((w for w in words if re.fullmatch(r"[a-z0-9_]{1,32}", w) and self.find(w) is c), None)
            if word is not None:
                out.append((word, (c.summary or c.name)[:256].ljust(3)))
        return tuple(out[:100])

    async def run(self, text: str, owner: OwnerServices, ctx: CommandContext) -> str:
        """Run one command line; a mistake is answered with how to fix it, never raised."""
        return (await self.respond(text, owner, ctx)).text

    async def respond(self, text: str, owner: OwnerServices, ctx: CommandContext) -> Reply:
        """:meth:`run`, with the buttons a command offers (the agent's way in)."""
        parsed = parse(text)
        if parsed is None:
            return Reply(self.help())
        verb, args = parsed
        command = self.find(verb)
        if command is None:
            return Reply(f"Unknown command /{verb}.\n{self.help()}")
        if ctx.caller not in command.who:
            return Reply(f"/{verb}: cannot be run by the {ctx.caller}")
        try:
            result = await command.handler(owner, args, ctx)
        except UsageError as exc:
            return Reply(self.usage(command, verb, exc.hint))
        except CommandError as exc:
            return Reply(f"/{verb}: {exc}")
        return result if isinstance(result, Reply) else Reply(result)

    async def _help(self, owner: OwnerServices, args: str, ctx: CommandContext) -> str:
        return self.help()

    # ------------------------------------------------------------------ renderings

    def help(self) -> str:
        lines = ["Owner commands:"]
        for c in self.commands:
            also = f" (also {', '.join('/' + a for a in c.aliases)})" if c.aliases else ""
            lines.append(f"{c.synopsis + also:<36}  {c.summary}")
        return "\n".join(lines)

    @staticmethod
    def usage(command: Command, verb: str = "", hint: str = "") -> str:
        """How to type ``command`` (as ``verb``, the name or alias typed): its declared usage."""
        line = f"usage: /{verb or command.name} {command.usage}".rstrip()
        return f"{line} ({hint})" if hint else line

    def markdown(self) -> str:
        """The README's owner-command table (tests/bot/test_command_registry.py checks it)."""
        rows = ["| command | what it does |", "|---|---|"]
        for c in self.commands:
            names = " ".join(f"`{s}`" for s in (c.synopsis, *(f"/{a}" for a in c.aliases)))
            text = f"{c.summary}; {c.details}" if c.details else c.summary
            rows.append(f"| {names.replace('|', chr(92) + '|')} | {text.replace('|', chr(92) + '|')} |")
        return "\n".join(rows)

    def slack_usage_hint(self) -> str:
        """The ``/epmem`` usage hint of both Slack manifests (checked by a test)."""
        return " | ".join(c.example for c in self.commands if c.example)
