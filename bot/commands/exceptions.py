"""``/allow``, ``/deny``, ``/revoke``, ``/exceptions``: the owner's exceptions, kept in the overlay.

An exception opens (or closes) a fact, an event or a category to contacts or groups, for a
while or for good. It is stored beside the policy file, never in it, and audited.
"""

from __future__ import annotations

from epmem.policy import PolicyException

from bot.clock import aware
from bot.commands.parsing import parse_expiry, split_target
from bot.commands.registry import CommandContext, CommandError, CommandSet, UsageError
from bot.services import OwnerServices

commands = CommandSet()


async def _target(owner: OwnerServices, token: str, effect: str) -> tuple[str, str]:
    policy = owner.policy
    kind, token = split_target(token)
    if kind in ("", "category") and token in policy.categories:
        if effect == "allow" and policy.categories[token].never_share:
            raise CommandError(f"category {token!r} is never-share: it cannot be opened to anyone")
        return "category", token
    if kind in ("", "fact"):
        fact = await owner.memory.get(token)
        if fact is not None:
            category = policy.categories.get(fact.category or "")
            if effect == "allow" and category is not None and category.never_share:
                raise CommandError(f"fact {token} is in a never-share category: it cannot be opened")
            return "fact", token
    if kind in ("", "event") and await owner.memory.by_event([token]):
        return "event", token
    raise CommandError(f"no fact, event or category called {token!r}")


async def _exception(owner: OwnerServices, effect: str, rest: str, ctx: CommandContext) -> str:
    words = rest.split()
    if len(words) < 2:
        raise UsageError()
    target_word, words = words[0], words[1:]
    if words and words[0] == "to":
        words = words[1:]
    if not words:
        raise CommandError("say who: a contact id, name or group")
    who_raw, tail = words[0], words[1:]
    who: list[str] = []
    for token in filter(None, who_raw.split(",")):
        cid = owner.directory.find_contact(token)
        if cid is None:
            raise CommandError(f"unknown contact or group {token!r}")
        who.append(cid)
    now = owner.clock()
    until = parse_expiry(tail, now)
    if until is not None and until <= now:
        # accepted, it would be listed as if it meant something and never apply once
        raise CommandError(
            f"{' '.join(tail[1:])} is already past ({until:%Y-%m-%d %H:%M} UTC): an exception "
            f"until then would never apply; give a later date or 'for 7d'"
        )
    kind, target = await _target(owner, target_word, effect)
    exc = PolicyException(effect=effect, who=who, until=until, **{kind: target})  # type: ignore[arg-type]
    number = await owner.overlay.add_exception(exc)
    await owner.record_change(
        {
            "action": effect,
            "exception": number,
            "target": f"{kind}:{target}",
            "who": who,
            "until": until.isoformat() if until else None,
            "by": ctx.sender.identity,
        },
    )
    expiry = f" until {until:%Y-%m-%d %H:%M} UTC" if until else ""
    return f"Exception {number}: {effect} {', '.join(who)} on {kind} {target}{expiry}."


@commands.command(
    "allow",
    "TARGET to WHO[,WHO] [for 7d | until 2026-12-31]",
    summary="open a fact, event:ID or category:NAME to contacts or groups",
    example="allow f3 to ana for 7d",
)
async def allow(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    return await _exception(owner, "allow", rest, ctx)


@commands.command(
    "deny", "TARGET to WHO[,WHO] [for 7d | until 2026-12-31]", summary="close it (a deny beats every whitelist)"
)
async def deny(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    return await _exception(owner, "deny", rest, ctx)


@commands.command("revoke", "N", summary="remove exception N (see /exceptions)")
async def revoke(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    if not rest.isdigit():
        raise UsageError("N is the number /exceptions shows")
    removed = await owner.overlay.revoke(int(rest))
    if removed is None:
        raise CommandError(f"no exception {rest}")
    await owner.record_change(
        {
            "action": "revoke",
            "exception": int(rest),
            "removed": removed.model_dump(mode="json"),
            "by": ctx.sender.identity,
        }
    )
    return f"Revoked exception {rest}."


@commands.command("exceptions", summary="list the exceptions added by command; expired ones are marked")
async def exceptions(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    rows = await owner.overlay.exceptions()
    if not rows:
        return "No exceptions added by command."
    lines = []
    now = owner.clock()
    for number, e in rows:
        kind, target = e.target()
        until = f" until {e.until:%Y-%m-%d %H:%M}" if e.until else ""
        if e.until is not None and aware(e.until) <= now:
            until += " (expired: applies no more; /revoke " + str(number) + " to remove it)"
        lines.append(f"{number}: {e.effect} {', '.join(e.who)} on {kind} {target}{until}")
    return "\n".join(lines)
