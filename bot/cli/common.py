"""What every ``epmem`` command shares: the two consoles, one-line errors, settings, JSON output.

Every failure a user can cause is an :class:`~epmem.errors.EpmemError` (the library's and the
bot's own errors derive from it); :func:`run` catches it once and prints one line on stderr,
exit 1. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import typer
from rich.console import Console

from epmem.errors import EpmemError
from epmem.policy.model import PolicyError

from bot.config import Settings
from bot.logging import configure_logging

if TYPE_CHECKING:
    from bot.runtime import Runtime

T = TypeVar("T")

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


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine, turning the errors a user can cause into one line and exit 1."""
    try:
        return asyncio.run(coro)
    except EpmemError as exc:
        report(exc)


def settings(quiet: bool = False) -> Settings:
    """``quiet`` commands (an interactive chat) log warnings only unless EPMEM_LOG_LEVEL says."""
    s = Settings()
    level = "WARNING" if quiet and "log_level" not in s.model_fields_set else s.log_level
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
