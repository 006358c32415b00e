"""``/heard``: heard it from you, the owner's switch (docs/DESIGN.md sec. 3).

A fact the owner has not decided about is open to the people who heard it said, because
telling them what they were told reveals nothing to them. The owner may turn that off
entirely, for a fact or an event (a remark they would rather not have repeated even to the
people who were there), or for a contact (someone who should hear nothing back unasked).
The switch lives in the overlay beside the policy file, and every change is audited.
"""

from __future__ import annotations

from dataclasses import replace

from epmem.policy import HeardIt

from bot.commands.parsing import split_target
from bot.commands.registry import CommandContext, CommandError, CommandSet, UsageError
from bot.services import OwnerServices

commands = CommandSet()


def _state(heard: HeardIt) -> str:
    if not heard.enabled:
        return "Heard it from you is off: facts you have not decided about are told to nobody. /heard on turns it on."
    lines = [
        "Heard it from you is on: a fact you have not decided about may be told back to the people who "
        "heard it said (never a password or code, never to someone a cue or your word shut out)."
    ]
    if heard.off_facts:
        lines.append("Off for: " + ", ".join(sorted(heard.off_facts)))
    if heard.off_contacts:
        lines.append("Off for contacts: " + ", ".join(sorted(heard.off_contacts)))
    lines.append("/heard off [FACT|EVENT|CONTACT] turns it off (entirely, or for one); /heard on [...] back on.")
    return "\n".join(lines)


async def _which(owner: OwnerServices, token: str) -> tuple[str, str]:
    """('contact', id) or ('fact', fact or event id)."""
    kind, value = split_target(token)
    if kind in ("", "fact") and await owner.memory.get(value) is not None:
        return "fact", value
    if kind in ("", "event") and await owner.memory.by_event([value]):
        return "fact", value
    if kind == "":
        cid = owner.directory.find_contact(value)
        if cid is not None and cid in owner.policy.contacts:
            return "contact", cid
    raise CommandError(f"no fact, event or contact called {token!r}")


@commands.command(
    "heard",
    "[on|off] [FACT|EVENT|CONTACT]",
    summary="tell people back what they heard said (on by default): turn it off entirely or for one",
)
async def heard(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    current = await owner.overlay.heard_it(owner.engine.heard_it)
    words = rest.split()
    if not words:
        return _state(current)
    switch, targets = words[0].lower(), words[1:]
    if switch not in ("on", "off") or len(targets) > 1:
        raise UsageError()
    on = switch == "on"
    change: dict[str, object] = {"action": "heard", "on": on, "by": ctx.sender.identity}
    if not targets:
        updated = replace(current, enabled=on)
        said = "on" if on else "off: facts you have not decided about are told to nobody"
    else:
        kind, value = await _which(owner, targets[0])
        if kind == "contact":
            contacts = current.off_contacts
            updated = replace(current, off_contacts=contacts - {value} if on else contacts | {value})
        else:
            facts = current.off_facts
            updated = replace(current, off_facts=facts - {value} if on else facts | {value})
        change[kind] = value
        said = f"{'on' if on else 'off'} for {value}"
    await owner.overlay.set_heard_it(updated)
    await owner.record_change(change)
    return f"Heard it from you is {said}."
