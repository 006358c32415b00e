"""`epmem --help` and every command's help read as whole sentences (issue: typer's "rich" help
kept each docstring line break, so "a second" ended one line and "run only checks them" began
the next). Rendered as a user sees it, on a terminal too wide to wrap anything: every line of
a description must end where a sentence (or a clause before a list) ends."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from bot.cli import app

WIDE = {"COLUMNS": "1000", "TERMINAL_WIDTH": "1000", "NO_COLOR": "1"}
#: how a description line may end: a sentence, a clause before what follows, a parenthesis.
ENDS = re.compile(r"[.:;?!)]$")


def _commands(cmd: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, cmd
    if hasattr(cmd, "list_commands"):
        import click

        ctx = click.Context(cmd)
        for name in cmd.list_commands(ctx):
            yield from _commands(cmd.get_command(ctx, name), (*path, name))


ALL = [path for path, _ in _commands(typer.main.get_command(app))]


def _help(path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], env=WIDE)
    assert result.exit_code == 0, result.output
    return result.output


def _description(text: str) -> list[str]:
    """The lines between the usage line and the first panel (the command's own help)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "Usage:" in line) + 1
    end = next((i for i, line in enumerate(lines) if line.lstrip().startswith("╭")), len(lines))
    return [line.strip() for line in lines[start:end] if line.strip()]


def _listed(text: str) -> list[str]:
    """Each row of the Commands panel, its description as shown."""
    rows, inside = [], False
    for line in text.splitlines():
        if "Commands" in line and line.lstrip().startswith("╭"):
            inside = True
            continue
        if inside and line.lstrip().startswith("╰"):
            break
        if inside:
            rows.append(line.strip().strip("│").strip())
    return rows


@pytest.mark.parametrize("path", ALL, ids=lambda p: " ".join(("epmem", *p)))
def test_every_help_line_ends_where_a_sentence_ends(path: tuple[str, ...]) -> None:
    text = _help(path)
    broken = [line for line in _description(text) if not ENDS.search(line)]
    assert not broken, f"epmem {' '.join(path)} --help breaks a sentence: {broken}"
    cut = [row for row in _listed(text) if not ENDS.search(row)]
    assert not cut, f"epmem {' '.join(path)} --help lists a command mid-sentence: {cut}"


def test_the_commands_listed_are_the_first_steps_each_one_line() -> None:
    rows = _listed(_help(()))
    setup = next(row for row in rows if row.startswith("setup"))
    assert setup.endswith("a second run only checks them. Nothing is downloaded at run time.")
    assert any(row.startswith("init ") for row in rows)
