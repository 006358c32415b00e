"""What every ``epmem`` command shares: the two consoles, one-line errors, settings, JSON output.

Every failure a user can cause is an :class:`~epmem.errors.EpmemError` (the library's and the
bot's own errors derive from it, and settings read from the environment are turned into one).
:class:`EpmemGroup`, the root command group, catches it once for every command and prints one
line on stderr (one per problem for a policy), exit 1. So does an ``OSError`` that escapes a
command (a folder that cannot be written, a port that cannot be bound, a disk that is full):
it is the machine's state, not a bug, and its message names the file or the address. Anything
else is a bug and keeps its traceback.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TypeVar

import typer
from pydantic import ValidationError
from pydantic_settings import BaseSettings
from rich.console import Console
from typer.core import TyperGroup

from connectors.registry import env_problems
from epmem.errors import EpmemError
from epmem.policy import PolicyError

from bot.config import ConfigError, Settings
from bot.log_setup import configure_logging

if TYPE_CHECKING:
    from bot.runtime import Runtime

T = TypeVar("T")

#: every command group's help is read as Markdown: a docstring's lines are joined into
#: paragraphs at the terminal's width (typer's "rich" mode keeps each hard line break, so a
#: description broke mid-sentence), and `code` is shown as code.
HELP_MARKUP: Literal["markdown"] = "markdown"

err = Console(stderr=True, highlight=False)
#: soft_wrap: text piped elsewhere (a reply, a JSON line) is never cut at the terminal's width.
out = Console(highlight=False, soft_wrap=True)


def fail(message: str, code: int = 1) -> NoReturn:
    err.print(f"error: {message}", markup=False, soft_wrap=True)
    raise typer.Exit(code)


def report(exc: EpmemError) -> NoReturn:
    """One line per problem (a policy lists every problem it has), then exit 1."""
    if isinstance(exc, PolicyError):
        for problem in exc.problems:
            err.print(f"error: {problem.render(exc.source)}", markup=False, soft_wrap=True)
        raise typer.Exit(1)
    fail(str(exc))


class EpmemGroup(TyperGroup):
    """The root ``epmem`` group: every command, sub-groups and plugins included, runs inside
    :meth:`invoke`, so this is the one place a user-caused error becomes one line."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except EpmemError as exc:
            report(exc)
        except OSError as exc:
            where = f": {exc.filename}" if exc.filename else ""
            fail(f"{exc.strerror or exc}{where}")


def run(coro: Coroutine[Any, Any, T]) -> T:
    """The sync CLI over the async library."""
    return asyncio.run(coro)


S = TypeVar("S", bound=BaseSettings)


def from_environment(kind: type[S]) -> S:
    """Settings from the environment; a value that does not fit is a ConfigError naming it."""
    try:
        return kind()
    except ValidationError as exc:
        problems = env_problems(kind, exc)
        raise ConfigError("; ".join(problems)) from None


#: ``--owner-id``: which owner of a deployment of several a command is for (bot/owners.py).
OWNER_OPTION_HELP = "the owner of a deployment of several this is for (their folder under owners/; EPMEM_OWNER)"


def choose_owner(owner_id: str | None) -> None:
    """``--owner-id`` is ``EPMEM_OWNER`` for this command: every setting read after it (each
    command reads its own) then points at that owner's folder, and nothing else needs telling."""
    if owner_id is not None:
        os.environ["EPMEM_OWNER"] = owner_id


def settings(quiet: bool = False, as_contact: bool = False) -> Settings:
    """``quiet`` commands (an interactive chat) log warnings only unless EPMEM_LOG_LEVEL says;
    a chat ``as_contact`` logs errors only: the bot's warnings (a ``probing`` line naming the
    asker) are the owner's business, not the contact's whose session it is."""
    s = from_environment(Settings)
    level = s.log_level
    if "log_level" not in s.model_fields_set:
        level = "ERROR" if as_contact else "WARNING" if quiet else s.log_level
    configure_logging(level, s.log_format)
    return s


async def with_runtime(s: Settings, fn: Callable[[Runtime], Awaitable[T]]) -> T:
    from bot.runtime import Runtime

    runtime = await Runtime.open(s)
    try:
        return await fn(runtime)
    finally:
        await runtime.close()


def write_json(data: object, json_out: Path | None) -> None:
    """Print the JSON, then, with ``json_out``, write it there too (making its folder): the
    results are on stdout before anything can go wrong with the file."""
    text = json.dumps(data, indent=2)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    if json_out:
        try:
            json_out.parent.mkdir(parents=True, exist_ok=True)
            json_out.write_text(text + "\n")
        except OSError as exc:
            fail(f"cannot write {json_out}: {exc.strerror or exc} (the results are on stdout above)")
