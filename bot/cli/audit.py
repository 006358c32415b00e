"""``epmem audit ...``: read, verify and export the audit log (without opening the rest of the
bot), and serve the owner's audit page."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import typer
from rich.table import Table
from rich.text import Text

from epmem.audit import AuditLog, check, export
from epmem.policy import Policy, load_policy

from bot.cli.common import HELP_MARKUP, fail, out, run, settings
from bot.config import Settings
from bot.quoting import quote
from bot.state import StateDB

T = TypeVar("T")

app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=HELP_MARKUP,
    help="Read, verify and export the audit log; serve the audit page.",
)


async def _with_audit(s: Settings, fn: Callable[[AuditLog], Awaitable[T]]) -> T:

    target = s.audit_target
    if isinstance(target, Path) and not target.exists():
        fail(f"no audit database at {target}")
    log = await AuditLog(target).open()
    try:
        return await fn(log)
    finally:
        await log.close()


@app.command("list")
def audit_list(
    contact: str = typer.Option(None, "--contact"),
    as_json: bool = typer.Option(False, "--json"),
    limit: int = typer.Option(50, "--limit"),
) -> None:
    """Recent decisions, oldest first."""

    s = settings()
    records = run(_with_audit(s, lambda log: log.records(contact=contact, limit=limit)))
    if as_json:
        sys.stdout.write(export(records, "jsonl"))
        return
    table = Table("id", "time", "kind", "contact", "question / action", "disclosed")
    for r in records:
        entry = r.entry
        erased = r.erased and entry.asked() and entry.get("question") is None
        # the asker's words as one quoted line, never read as rich markup ("[red]...")
        shown = Text("(erased)" if erased else quote(entry.headline(), 50))
        table.add_row(r.id, r.time[:19], r.kind, r.contact or "", shown, ", ".join(entry.disclosed_facts()))
    out.print(table)


@app.command("show")
def audit_show(record_id: str) -> None:
    """One decision with every candidate fact's verdict and reason (and what was erased)."""

    s = settings()
    record = run(_with_audit(s, lambda log: log.get(record_id)))
    if record is None:
        fail(f"no audit record {record_id!r}")
    sys.stdout.write(json.dumps(record.as_dict(), indent=2, ensure_ascii=False) + "\n")


@app.command("verify")
def audit_verify() -> None:
    """Check the hash chain and every text against its digest; exit 1 naming the first bad record."""

    s = settings()
    status = run(_with_audit(s, check))
    if status.first_bad is not None and (status.reason or "").startswith("disclosure ledger"):
        fail(
            f"{status.reason} (record {status.first_bad.id}, seq {status.first_bad.seq}): the ledger does not "
            f"match the chain; who-knows cannot be trusted (the {status.verified} records verify)"
        )
    if status.first_bad is not None:
        fail(
            f"audit chain broken at record {status.first_bad.id} (seq {status.first_bad.seq}): {status.reason}; "
            f"{status.verified} records before it verify"
        )
    erased = f"; {status.erased_records} with erased texts" if status.erased_records else ""
    out.print(f"ok: {status.verified} records, chain intact{erased}")


@app.command("export")
def audit_export(fmt: str = typer.Option("jsonl", "--format", help="jsonl or csv")) -> None:
    """Every record, for review elsewhere."""

    if fmt not in ("jsonl", "csv"):
        fail(f"unknown format {fmt!r}: use jsonl or csv", 2)
    s = settings()
    records = run(_with_audit(s, lambda log: log.records()))
    sys.stdout.write(export(records, fmt))


@app.command("who-knows")
def audit_who_knows(fact_or_event: str) -> None:
    """The disclosure ledger for a fact or an event."""

    s = settings()
    ledger = run(_with_audit(s, lambda log: log.who_knows(fact_or_event)))
    if not ledger:
        out.print(f"nobody has been told {fact_or_event}")
        return
    table = Table("time", "recipient", "fact", "event", "audit id")
    for d in ledger:
        table.add_row(d.time[:19], d.recipient, d.fact_id, d.event_id, d.audit_id)
    out.print(table)


async def _prepare(s: Settings) -> None:
    """Bring both databases to the current schema once, before the read-only page opens them
    (a no-op when the bot already did; the page itself never writes)."""
    async with AuditLog(s.audit_target):
        pass
    state = await StateDB(s.state_target).open()
    await state.close()


@app.command("serve")
def audit_serve(
    host: str = typer.Option("127.0.0.1", "--host", help="loopback unless EPMEM_AUDIT_TOKEN is set"),
    port: int = typer.Option(0, "--port", help="0 picks a free port"),
    session_hours: float = typer.Option(8.0, "--session-hours", help="a sign-in lasts this long"),
) -> None:
    """The audit page (read-only): timeline, decisions, who knows what. Until SIGINT/SIGTERM."""
    from epmem.audit.web import TOKEN_ENV, PageConfig, PageRefused, choose_token, is_loopback, run_page

    if not 0 <= port <= 65535:
        fail(f"--port {port}: a port is a number from 0 to 65535 (0 picks a free one)", 2)
    if not session_hours > 0:
        fail(f"--session-hours {session_hours}: must be more than 0", 2)
    s = settings(quiet=True)
    try:
        token, generated = choose_token(host, os.environ.get(TOKEN_ENV))
    except PageRefused as exc:
        fail(str(exc), 2)
    if isinstance(s.audit_target, Path) and not s.audit_db.exists():
        fail(f"no audit database at {s.audit_db}: run the bot once (epmem run or epmem chat)")
    run(_prepare(s))
    policy_path = s.policy_path()  # the audit page reads, never adopts
    cached: dict[float, Policy] = {}

    async def policy() -> Policy:
        """The owner's file as it is now: read again whenever it changes on disk."""
        mtime = policy_path.stat().st_mtime
        if mtime not in cached:
            cached.clear()
            cached[mtime] = await asyncio.to_thread(load_policy, policy_path)
        return cached[mtime]

    try:
        # beyond loopback the cookie is Secure: the page is meant to sit behind HTTPS there
        config = PageConfig(
            s.audit_target,
            s.state_target,
            policy,
            token,
            secure_cookie=not is_loopback(host),
            session_ttl_s=session_hours * 3600,
            heard_it=s.heard_it,
        )
        run_page(config, host, port, sys.stdout, generated)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
