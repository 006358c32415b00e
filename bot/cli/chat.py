"""``epmem chat``, ``epmem run`` and ``epmem preview``: talking to the delegate."""

from __future__ import annotations

import sys

import typer

from epmem.identity import LOCAL
from epmem.policy import OWNER_ID, STRANGER_ID, UNKNOWN_STRANGER

from bot.cli.common import err, fail, from_environment, out, run, settings, with_runtime
from bot.config import Settings
from bot.logging import configure_logging
from bot.runtime import Runtime


def chat(
    as_: str = typer.Option(None, "--as", help="contact id to speak as, or 'stranger'"),
    owner: bool = typer.Option(False, "--owner", help="speak as the owner (commands, full recall)"),
) -> None:
    """Talk to the delegate on the console, one message per line."""
    from connectors.console import ConsoleConnector

    if owner == (as_ is not None):
        fail("give exactly one of --as CONTACT_ID (or --as stranger) and --owner", 2)
    s = settings(quiet=True, as_contact=not owner)

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
        notes = None if owner else runtime.outbox.tell_owner
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
) -> None:
    """Serve every platform whose credentials are set (`epmem doctor` lists them; else the console, on a
    terminal), with the scheduler, until SIGINT/SIGTERM. Logs are JSON lines on stdout."""
    from bot.platforms import PlatformSettings, nothing_to_serve_hint
    from bot.serve import serve

    s = from_environment(Settings)
    platforms = from_environment(PlatformSettings)
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
    run(serve(lambda: Runtime.open(s), platforms, console_identity=identity))


def preview(contact: str, question: str) -> None:
    """What CONTACT (or a+b for a group chat) would be told; audited as a preview."""
    s = settings()

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
