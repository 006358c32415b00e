"""``/matter`` and ``/unmatter``: which events are one matter for the composite rule across replies.

A link says that what a person was told of one event counts when they would be told more of the
other (epmem/reply/cumulative.py): the house offer and the bonus that pays its deposit. Links
come from scenario files, and from the owner here; /annotations lists them. Every change is
audited as a policy change. Unlinking opens what the link held back, so it is the owner's alone.
"""

from __future__ import annotations

from epmem.memory import EventLinks

from bot.commands.registry import CommandContext, CommandError, CommandSet, UsageError
from bot.services import OwnerServices

commands = CommandSet()


def _links(owner: OwnerServices) -> EventLinks:
    if owner.links is None:
        raise CommandError("links between events are not available here")
    return owner.links


async def _known_events(owner: OwnerServices, events: list[str]) -> None:
    """Only events memory has: a typo would link nothing and hold nothing back, silently."""
    found = {f.event_id for f in await owner.memory.by_event(events)}
    missing = [e for e in events if e not in found]
    if missing:
        raise CommandError(f"no facts with event {', '.join(missing)} (see /facts: events are in brackets)")


async def matter_lines(owner: OwnerServices) -> list[str]:
    """The matters of more than one event, for /annotations."""
    if owner.links is None:
        return []
    groups = (await owner.links.matters()).groups()
    return [f"Matter (told together counts across replies): {' + '.join(g)}" for g in groups]


@commands.command(
    "matter",
    "EVENT EVENT [EVENT...]",
    summary="link events into one matter: what someone was told of one counts for the others",
    details="the composite rule then judges what a person already knows of the matter together "
    "with what a reply would add",
)
async def matter(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    events = list(dict.fromkeys(rest.split()))
    if len(events) < 2:
        raise UsageError("two different events at least")
    await _known_events(owner, events)
    added = await _links(owner).link(events, "owner")
    await owner.record_change({"action": "link_events", "events": events, "added": added})
    return f"One matter now: {' + '.join(events)} ({added} new link{'s' * (added != 1)})."


@commands.command("unmatter", "EVENT [EVENT]", summary="remove the link between two events, or every link of one event")
async def unmatter(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    events = rest.split()
    if len(events) not in (1, 2):
        raise UsageError()
    removed = await _links(owner).unlink(events[0], events[1] if len(events) == 2 else None)
    await owner.record_change({"action": "unlink_events", "events": events, "removed": removed})
    if not removed:
        still = (await _links(owner).matters()).matter
        joined = len(events) == 2 and still(events[0]) == still(events[1])
        return f"No direct link between {' and '.join(events)}" + (
            "; they are one matter through another event (see /annotations)." if joined else "."
        )
    return f"Removed {removed} link{'s' * (removed != 1)}: {' and '.join(events)}."
