"""``/level``, ``/domain``, ``/link``, ``/unlink``: change who is who (docs/DESIGN.md sec. 8, issue #5).

A contact's change is kept in the overlay as an override, never in the policy file, and the
effective policy is rebuilt at once (every reader asks the policy holder, so the very next
message is judged by it). A fact's change makes its annotation ``owner-set``. With
``from DATE`` or ``in 7d``, ``/level`` and ``/domain`` are scheduled instead: an embargo that
lifts on a date.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from epmem.memory import Fact
from epmem.identity import LOCAL, SCHEMES
from epmem.policy import OWNER_ID, STRANGER_ID, Contact

from bot.commands.registry import OWNER_OR_SCHEDULED, CommandContext, CommandError, CommandSet, UsageError
from bot.commands.parsing import parse_when
from bot.commands.schedule import schedule_later
from bot.services import OwnerServices

commands = CommandSet()

_DOMAINS = {"work": "work", "life": "life", "none": None, "-": None}


async def contact_or_fact(owner: OwnerServices, token: str) -> tuple[str, str]:
    """("contact", id) or ("fact", id); a token that is both must carry a prefix."""
    kind, _, value = token.partition(":")
    if value and kind in ("contact", "fact"):
        token = value
    else:
        kind = ""
    cid = owner.directory.find_contact(token) if kind in ("", "contact") else None
    if cid is not None and cid in owner.policy.groups:
        cid = None
    fact = await owner.memory.get(token) if kind in ("", "fact") else None
    if cid is not None and fact is not None:
        raise CommandError(f"{token!r} is both a contact and a fact: write contact:{token} or fact:{token}")
    if cid is not None:
        return "contact", cid
    if fact is not None:
        return "fact", fact.id
    raise CommandError(f"no contact or fact called {token!r}")


async def get_fact(owner: OwnerServices, fact_id: str) -> Fact:
    fact = await owner.memory.get(fact_id)
    if fact is None:
        raise CommandError(f"no fact {fact_id!r}")
    return fact


async def _set_fact(owner: OwnerServices, fact: Fact, **changes: Any) -> None:
    data = {**fact.model_dump(), **changes, "state": "owner-set", "closed": False}
    if data.get("level") is None:
        data["level"] = fact.effective_level()
    await owner.memory.update([Fact.model_validate(data)])


async def _override(owner: OwnerServices, cid: str, change: Callable[[dict[str, Any]], None]) -> None:
    """Change one contact's override row and rebuild the effective policy; a change the
    policy cannot take (e.g. an identity someone else claims) is undone and reported."""
    rows = await owner.overlay.contact_overrides()
    before = rows.get(cid, {})
    after = {k: (list(v) if isinstance(v, list) else v) for k, v in before.items()}
    change(after)
    await owner.overlay.set_contact_override(cid, {k: v for k, v in after.items() if v != []})
    skipped = await owner.refresh_policy()
    problem = next((s.reason for s in skipped if s.contact == cid), None)
    if problem is not None:
        await owner.overlay.set_contact_override(cid, before)
        await owner.refresh_policy()
        raise CommandError(f"cannot change {cid}: {problem}")


@commands.command(
    "level",
    "WHO|FACT N [from DATE | in 7d]",
    who=OWNER_OR_SCHEDULED,
    summary="a contact's trust level (1-4) or a fact's level (0-4)",
    details="with `from`, an embargo that lifts on that date",
)
async def level(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    words = rest.split()
    if len(words) < 2:
        raise UsageError("N is 1-4 for a contact, 0-4 for a fact")
    kind, target = await contact_or_fact(owner, words[0])
    if not words[1].isdigit():
        raise CommandError(f"level must be a number, not {words[1]!r}")
    value = int(words[1])
    lowest = 1 if kind == "contact" else 0
    if not lowest <= value <= 4:
        raise CommandError(f"a {kind}'s level is {lowest}-4")
    when = parse_when(words[2:], owner.clock())
    if when is not None:
        return await schedule_later(owner, "level", f"{kind}:{target} {value}", when, ctx)
    by = ctx.sender.identity
    if kind == "contact":
        old_level = owner.policy.contacts[target].level
        await _override(owner, target, lambda body: body.__setitem__("level", value))
        await owner.record_change({"action": "level", "contact": target, "from": old_level, "to": value, "by": by})
        return f"{target} is now level {value} (was {old_level})."
    fact = await get_fact(owner, target)
    await _set_fact(owner, fact, level=value)
    await owner.record_change(
        {"action": "level", "fact": target, "from": fact.effective_level(), "to": value, "by": by}
    )
    return f"Fact {target} is now level {value} (was L{fact.effective_level()}), set by you."


@commands.command(
    "domain", "WHO|FACT work|life|none [from DATE]", who=OWNER_OR_SCHEDULED, summary="a contact's or a fact's domain"
)
async def domain(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    words = rest.split()
    if len(words) < 2 or words[1] not in _DOMAINS:
        raise UsageError()
    kind, target = await contact_or_fact(owner, words[0])
    value = _DOMAINS[words[1]]
    when = parse_when(words[2:], owner.clock())
    if when is not None:
        return await schedule_later(owner, "domain", f"{kind}:{target} {words[1]}", when, ctx)
    by = ctx.sender.identity
    if kind == "contact":
        old = owner.policy.contacts[target].domain
        await _override(owner, target, lambda body: body.__setitem__("domain", value))
        await owner.record_change({"action": "domain", "contact": target, "from": old, "to": value, "by": by})
        return f"{target} is now in domain {value or 'none'} (was {old or 'none'})."
    fact = await get_fact(owner, target)
    await _set_fact(owner, fact, domain=value)
    await owner.record_change({"action": "domain", "fact": target, "from": fact.domain, "to": value, "by": by})
    return f"Fact {target} is now in domain {value or 'none'} (was {fact.domain or 'none'})."


#: ``e.g. `/link ana telegram:123456789`, `slack:T0123/U0456```, from the platforms registered
#: when the commands are declared (bot/__init__.py registers the built-in ones first).
_LINK_EXAMPLES = "e.g. " + ", ".join(
    f"`/link ana {e}`" if i == 0 else f"`{e}`" for i, e in enumerate(SCHEMES.platform_examples() or [LOCAL.example])
)


def _identity_args(owner: OwnerServices, rest: str, verb: str) -> tuple[str, str]:
    words = rest.split()
    if len(words) != 2:
        raise UsageError(f"IDENTITY as {SCHEMES.examples()}")
    cid = owner.directory.find_contact(words[0])
    if cid is None or cid in owner.policy.groups:
        raise CommandError(f"unknown contact {words[0]!r}")
    try:
        Contact(name="check", level=4, identities=[words[1]])
    except ValidationError:
        raise CommandError(f"{words[1]!r} is not an identity: use {SCHEMES.examples()}") from None
    return cid, words[1]


@commands.command("link", "WHO IDENTITY", summary="answer this identity as that contact", details=_LINK_EXAMPLES)
async def link(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    cid, identity = _identity_args(owner, rest, "link")
    holder = owner.directory.resolve(identity).contact_id
    if holder == cid:
        return f"{identity} is already {cid}."
    if holder == OWNER_ID:
        raise CommandError(f"{identity} is one of your own identities")
    if holder != STRANGER_ID:
        raise CommandError(f"{identity} belongs to {holder}: /unlink {holder} {identity} first")

    def change(body: dict[str, Any]) -> None:
        body.setdefault("add", [])
        body["remove"] = [i for i in body.get("remove", []) if i != identity]
        if identity not in body["add"]:
            body["add"].append(identity)

    await _override(owner, cid, change)
    await owner.record_change({"action": "link", "contact": cid, "identity": identity, "by": ctx.sender.identity})
    return f"Linked {identity} to {cid}: messages from it are answered as to {cid}."


@commands.command("unlink", "WHO IDENTITY", summary="the identity is a stranger again")
async def unlink(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    cid, identity = _identity_args(owner, rest, "unlink")
    if identity not in owner.policy.contacts[cid].identities:
        raise CommandError(f"{identity} is not linked to {cid}")

    def change(body: dict[str, Any]) -> None:
        body["add"] = [i for i in body.get("add", []) if i != identity]
        body.setdefault("remove", [])
        if identity in owner.policies.base.contacts[cid].identities and identity not in body["remove"]:
            body["remove"].append(identity)

    await _override(owner, cid, change)
    await owner.record_change({"action": "unlink", "contact": cid, "identity": identity, "by": ctx.sender.identity})
    return f"Unlinked {identity} from {cid}: it is a stranger now."
