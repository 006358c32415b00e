"""``/scheduled``, ``/unschedule``: changes waiting for their date (an embargo that lifts later).

A command given ``from DATE`` or ``in 7d`` is stored as a task (bot/tasks.py) and run by the
scheduler at its date, as the owner; only commands that declare the scheduler among those who
may run them (``who=OWNER_OR_SCHEDULED``) can be put off this way.
"""

from __future__ import annotations

from datetime import datetime

from bot.commands.registry import CommandContext, CommandError, CommandSet, UsageError
from bot.services import OwnerServices

commands = CommandSet()


async def schedule_later(owner: OwnerServices, verb: str, args: str, when: datetime, ctx: CommandContext) -> str:
    """Keep ``/verb args`` to run at ``when``; durable at once, audited."""
    text = f"/{verb} {args}"
    number = await owner.tasks.add("command", when, {"text": text, "by": ctx.sender.identity})
    await owner.record_change(
        {"action": "schedule", "task": number, "command": text, "due": when.isoformat(), "by": ctx.sender.identity}
    )
    return f"Scheduled {number}: {text} at {when:%Y-%m-%d %H:%M} UTC. Cancel with /unschedule {number}."


@commands.command("scheduled", summary="changes waiting for their date")
async def scheduled(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    tasks = [t for t in await owner.tasks.pending() if t.kind == "command"]
    if not tasks:
        return "No scheduled changes."
    return "\n".join(f"{t.id}: {t.payload.get('text')} at {t.due_at:%Y-%m-%d %H:%M} UTC" for t in tasks)


@commands.command("unschedule", "N", summary="cancel scheduled change N (see /scheduled)")
async def unschedule(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    if not rest.strip().isdigit():
        raise UsageError("N as /scheduled shows it")
    number = int(rest.strip())
    task = await owner.tasks.get(number)
    if task is None or task.kind != "command":
        raise CommandError(f"no scheduled change {number}")
    if not await owner.tasks.finish(number, "cancelled", "cancelled by owner", owner.clock()):
        raise CommandError(f"scheduled change {number} is already {task.state}")
    await owner.record_change(
        {"action": "unschedule", "task": number, "command": task.payload.get("text"), "by": ctx.sender.identity}
    )
    return f"Cancelled scheduled change {number}."
