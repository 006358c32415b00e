"""``epmem chat``, ``epmem run`` and ``epmem preview``: talking to the delegate."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import typer

from connectors.base import Action
from connectors.console import OwnerNotes
from epmem.identity import LOCAL
from epmem.policy import OWNER_ID, STRANGER_ID, UNKNOWN_STRANGER

from bot.cli.common import (
    OWNER_OPTION_HELP,
    choose_owner,
    err,
    fail,
    from_environment,
    out,
    run,
    settings,
    with_runtime,
)
from bot.owner_policy import require_data_folder
from bot.config import Settings
from bot.log_setup import configure_logging
from bot.runtime import Runtime

if TYPE_CHECKING:
    from bot.owners import OwnerHome


def chat(
    as_: str = typer.Option(None, "--as", help="contact id to speak as, or 'stranger'"),
    owner: bool = typer.Option(False, "--owner", help="speak as the owner (commands, full recall)"),
    owner_id: str = typer.Option(None, "--owner-id", help=OWNER_OPTION_HELP),
) -> None:
    """Talk to the delegate on the console, one message per line."""
    from connectors.console import ConsoleConnector

    choose_owner(owner_id)
    if owner == (as_ is not None):
        fail("give exactly one of --as CONTACT_ID (or --as stranger) and --owner", 2)
    s = settings(quiet=True, as_contact=True)  # a chat shows no log lines (errors only): they are not the chat
    require_data_folder(s)

    async def go(runtime: Runtime) -> int:
        policy = runtime.policy
        if owner:
            identity = policy.owner.identities[0] if policy.owner.identities else _local(OWNER_ID)
            who = f"the owner ({policy.owner.name})"
        elif as_ == STRANGER_ID:
            identity, who = _local(UNKNOWN_STRANGER), "a stranger"
        elif as_ in policy.contacts:
            identity, who = _local(as_), f"{policy.contacts[as_].name} ({as_})"
        else:
            known = ", ".join(sorted(policy.contacts)) or "none"
            fail(f"unknown contact {as_!r} in --as; known contacts: {known} (or --as stranger, --owner)")
        interactive = sys.stdin.isatty()
        if interactive:
            err.print(f"Speaking to {policy.owner.name}'s delegate as {who}. Ctrl-D to quit.")
        # a contact's session is that contact's chat: the owner's notes are kept for the owner
        # (/undelivered), not shown to whoever is typing as the contact
        notes = None if owner else _notes_for_owner(runtime)
        if notes is not None:  # the look after the reply tells the owner the same way (bot/consultations/)
            runtime.agent.notify = notes
        await _opening(runtime, identity, owner)
        console = ConsoleConnector(
            identity,
            runtime.agent.handle,
            max_chars=s.max_message_chars,
            prompt="> " if interactive else "",
            owner_notes=notes,
        )
        await console.start()
        return console.rejected

    rejected = run(with_runtime(s, go))
    raise typer.Exit(1 if rejected and not sys.stdin.isatty() else 0)


def _notes_for_owner(runtime: Runtime) -> OwnerNotes:
    """A contact's session keeps the owner's notes for them (``/undelivered``), except a
    consultation's: it waits in ``/consults``, which the owner's session opens with."""

    async def keep(text: str, actions: tuple[Action, ...]) -> object:
        if any(a.command.startswith("/consult ") for a in actions):
            return None
        return await runtime.outbox.tell_owner(text, actions)

    return keep


async def _opening(runtime: Runtime, identity: str, owner: bool) -> None:
    """What the person at the console hears once, before the first message: that memory is empty
    (and how to fill it); as the owner, what waits for them; as a contact, the follow-ups the owner
    answered while their session was closed."""
    from bot.commands.consult import what_waits
    from bot.console_followups import deliver_owed

    if await runtime.memory.count() == 0 and (await runtime.conversations.count())[0] == 0:
        err.print(
            f"note: memory is empty in {runtime.settings.data_dir}, so the delegate has nothing to tell yet; "
            "import your chats with: epmem ingest EXPORT (or try the example owner: epmem demo in an empty folder)",
            markup=False,
            soft_wrap=True,
        )
    if owner:
        waits = await what_waits(runtime.owner)
        if waits:
            out.print(waits, markup=False)
        return

    async def show(text: str) -> None:
        out.print(f"[follow-up] {text}", markup=False)

    await deliver_owed(runtime.owner, identity, show)


def _local(contact: str) -> str:
    """The local terminal's identity for a contact id (the library's own scheme)."""
    try:
        return LOCAL.identity(contact)
    except ValueError as exc:
        fail(f"--as: {exc}")


def run_service(
    as_: str = typer.Option(None, "--as", help="console fallback only: speak as this contact (default: the owner)"),
    console: bool = typer.Option(
        False, "--console", help="serve the console even when input is not a terminal (piped lines)"
    ),
    owner_id: str = typer.Option(None, "--owner-id", help=OWNER_OPTION_HELP),
) -> None:
    """Serve every platform whose credentials are set (`epmem doctor` lists them; else the console, on a
    terminal), with the scheduler, until SIGINT/SIGTERM. Logs are JSON lines on stdout. A data folder
    with owners (`epmem --owner-id ID init`) serves every owner, each on their own credentials."""
    from bot.owners import owner_homes
    from bot.platforms import nothing_to_serve_hint
    from bot.serve import serve

    choose_owner(owner_id)
    s = from_environment(Settings)
    homes = owner_homes(s)
    if len(homes) > 1:
        _serve_owners(s, homes)
        return
    home = homes[0]
    platforms = home.platforms()
    connected = bool(platforms.configured())
    if not connected and not console and not sys.stdin.isatty():
        # a service with no credentials and no terminal (Docker with env.example's empty
        # tokens) would read an empty stdin and exit 0: a silent restart loop. Say why instead.
        fail(
            f"no platform to serve: {nothing_to_serve_hint()} (docker/.env under Docker); `epmem doctor` "
            "checks the settings (for a console chat: epmem chat, or epmem run --console)"
        )
    # with platforms, stdout is the log stream; on the console fallback it is the chat, and
    # the logs (warnings only, unless EPMEM_LOG_LEVEL says) go to stderr as for `epmem chat`.
    level = (
        s.log_level if connected or "log_level" in s.model_fields_set else "ERROR" if as_ is not None else "WARNING"
    )  # as a contact: as `epmem chat --as`
    configure_logging(level, s.log_format, stream=sys.stdout if connected else None)
    identity = _local(OWNER_ID if as_ is None else UNKNOWN_STRANGER if as_ == STRANGER_ID else as_)
    require_data_folder(s)
    run(serve(lambda: Runtime.open(home.settings), platforms, console_identity=identity))
    if connected:
        err.print("stopped; start again with: epmem run", markup=False, soft_wrap=True)
    else:
        err.print(
            f"stopped; to go live: {nothing_to_serve_hint()}, then epmem run (`epmem doctor` checks the settings)",
            markup=False,
            soft_wrap=True,
        )


def _serve_owners(s: Settings, homes: list[OwnerHome]) -> None:
    """Every owner of the data folder, each on their own platforms, in this process."""
    from bot.owners import open_services
    from bot.serve import serve_all

    configure_logging(s.log_level, s.log_format, stream=sys.stdout)
    run(serve_all(lambda: open_services(homes)))
    err.print(f"stopped ({len(homes)} owners); start again with: epmem run", markup=False, soft_wrap=True)


def preview(contact: str, question: str) -> None:
    """What CONTACT (or a+b for a group chat) would be told; audited as a preview."""
    s = settings()
    require_data_folder(s)

    async def go(runtime: Runtime) -> str:
        ids = contact.split("+")
        for cid in ids:
            if cid != STRANGER_ID and cid not in runtime.policy.contacts:
                fail(f"unknown contact {cid!r}")
        reply, audit_id, _ = await runtime.owner.preview(ids, question)
        return f"{reply}\n(preview audit id {audit_id})"

    out.print(run(with_runtime(s, go)), markup=False)


def register(app: typer.Typer) -> None:
    app.command()(chat)
    app.command("run")(run_service)
    app.command()(preview)
