"""The `epmem` command run in this process (typer's :class:`~typer.testing.CliRunner`), for
tests of what a command says and does, where a fresh interpreter is not what is tested.

It answers like ``subprocess.run`` (a :class:`subprocess.CompletedProcess` with the exit status,
stdout and stderr), from the repository root, with the given environment on top of this one.
Each run starts with logging as a fresh process has it (``epmem`` configures it once per
process, onto this run's stderr) and leaves the test process's logging as it found it; a
warning is printed to that stderr as a new process prints it, not raised (the suite makes
warnings errors: that is for the code under test in-process, not for a command's output). An
exception the command did not turn into an exit status is raised, not hidden in an exit code:
a real process would have printed a traceback.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import warnings
from collections.abc import Iterator, Mapping

import structlog
from typer.testing import CliRunner

from bot import log_setup
from bot.cli import app, common
from testkit.runtime import REPO


@contextlib.contextmanager
def _fresh_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    config = structlog.get_config()
    log_setup._configured = False  # as in a new process: the command configures it
    try:
        yield
    finally:
        log_setup._configured = False
        structlog.configure(**config)
        root.handlers[:] = handlers
        root.setLevel(level)


@contextlib.contextmanager
def _fresh_consoles(env: Mapping[str, str]) -> Iterator[None]:
    """The command's rich consoles as a new process makes them: a Console reads ``COLUMNS`` when
    it is made, and this process made them once, under whatever an earlier test's environment
    said (a table then wraps at another width than the one this run asks for)."""
    consoles = (common.out, common.err)
    widths = [c._width for c in consoles]
    columns = env.get("COLUMNS", os.environ.get("COLUMNS", ""))
    try:
        for c in consoles:
            c._width = int(columns) if columns.isdigit() else None
        yield
    finally:
        for c, width in zip(consoles, widths):
            c._width = width


@contextlib.contextmanager
def _own_environment() -> Iterator[None]:
    """What the command put in the environment (``--owner-id`` sets ``EPMEM_OWNER``) ends with
    it, as it would with a process."""
    saved = dict(os.environ)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run_cli(args: list[str], env: Mapping[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    with (
        _fresh_logging(),
        _fresh_consoles(env),
        _own_environment(),
        contextlib.chdir(REPO),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("default")
        result = CliRunner().invoke(app, args, input=stdin, env=dict(env), catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return subprocess.CompletedProcess(["epmem", *args], result.exit_code, result.stdout, result.stderr)
