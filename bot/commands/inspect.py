"""``/preview``, ``/audit``, ``/why``, ``/who-knows``, ``/facts``, ``/contacts``: look around.

Nothing here changes anything; a preview is audited (as a preview) like every other decision.
"""

from __future__ import annotations

from typing import Any

from bot.commands.registry import CommandContext, CommandError, CommandSet, UsageError
from bot.services import OwnerServices

commands = CommandSet()


@commands.command("preview", "WHO[+WHO] QUESTION", summary="what they would be told (dry run, audited as a preview)")
async def preview(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    who_raw, _, question = rest.partition(" ")
    if not who_raw or not question.strip():
        raise UsageError()
    ids: list[str] = []
    for token in who_raw.split("+"):
        cid = "stranger" if token == "stranger" else owner.directory.find_contact(token)
        if cid is None or cid in owner.policy.groups:
            raise CommandError(f"unknown contact {token!r}")
        ids.append(cid)
    reply, audit_id, _ = await owner.preview(ids, question.strip())
    return f"{'+'.join(ids)} would be told:\n{reply}\n(preview {audit_id}; /why {audit_id})"


@commands.command("audit", "[CONTACT]", summary="recent decisions")
async def audit(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    contact = owner.directory.find_contact(rest) if rest else None
    if rest and contact is None:
        raise CommandError(f"unknown contact {rest!r}")
    records = await owner.audit.records(contact=contact, limit=10)
    if not records:
        return "No decisions recorded yet."
    lines = []
    for r in records:
        entry = r.entry
        erased = r.erased and entry.asked() and entry.get("question") is None
        lines.append(
            f"{r.id} {r.time[:19]} {r.kind} {r.contact or ''}: "
            f"{'(erased)' if erased else entry.headline()[:60]} -> disclosed {entry.disclosed_facts()}"
        )
    return "\n".join(lines)


@commands.command("why", "AUDIT_ID", summary="the per-fact verdicts and reasons of one decision")
async def why(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    record = await owner.audit.get(rest.strip())
    if record is None:
        raise CommandError(f"no audit record {rest.strip()!r}")
    erased = {e.slot: e for e in record.erased}

    def said(field: str) -> str:
        e = erased.get(field)
        return f"(erased {e.at[:19]} by {e.by})" if e else str(entry.get(field, ""))

    entry = record.entry
    lines = [f"{record.id} {record.kind} for {entry.get('audience', record.contact)}: {said('question')}"]
    # allowed one by one, but not together with what was told (the composite rule): the owner
    # must see these here, not only in `epmem audit show`
    held: dict[str, list[dict[str, Any]]] = {}
    for h in entry.get("held_back", []):
        held.setdefault(str(h.get("fact")), []).append(h)
    for c in entry.get("candidates", []):
        mark = "USED" if c["used"] else ("HELD BACK" if c["fact"] in held else "allowed" if c["allowed"] else "denied")
        lines.append(f"  {c['fact']} ({c['version']}, event {c['event']}) {mark}")
        for rid, text in c["verdicts"].items():
            lines.append(f"      {rid}: {text}")
        lines += _held_lines(held.pop(c["fact"], []))
    for fact, rows in held.items():  # held back without being a candidate shown above
        lines.append(f"  {fact} HELD BACK")
        lines += _held_lines(rows)
    lines += _chooser_lines(entry.get("relevance") or {})
    lines.append(f"reply: {said('reply')}")
    return "\n".join(lines)


def _chooser_lines(relevance: dict[str, Any]) -> list[str]:
    """Who chose the facts, with a model configured (epmem/reply/model_choice.py); nothing otherwise."""
    if "chooser" not in relevance:
        return []
    rules = ", ".join(str(f) for f in relevance.get("rules_chosen") or []) or "nothing"
    if relevance["chooser"] == "model":
        chosen = ", ".join(str(f) for f in relevance.get("chosen") or []) or "nothing"
        return [f"chosen by the model: {chosen} (the relevance step chose {rules})"]
    return [f"chosen by the relevance step: {rules} (the model's choice not used: {relevance.get('fallback')})"]


def _held_lines(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    for h in rows:
        earlier = h.get("earlier") or []
        if earlier:  # the composite rule across replies: name the earlier reply (see /why of it)
            replies = ", ".join(f"{e.get('fact')} in reply {e.get('record')} (/why {e.get('record')})" for e in earlier)
            who = h.get("recipient")
            facts = dict.fromkeys(
                [*(str(e.get("fact")) for e in earlier), *(str(x) for x in h.get("with") or []), str(h.get("fact"))]
            )
            out.append(
                f"      held back (composite rule across replies): {who} was already told {replies}: {h.get('reason')}"
            )
            out.append(
                f"      to tell {who} anyway (they know the rest already), whitelist them on each: "
                + ", ".join(f"/allow {f} to {who}" for f in facts)
            )
            continue
        together = ", ".join(str(x) for x in h.get("with") or []) or "the facts told"
        out.append(
            f"      held back (composite rule): not told to {h.get('recipient')} together with "
            f"{together}: {h.get('reason')}"
        )
    return out


@commands.command(
    "who-knows", "FACT|EVENT", summary="the disclosure ledger: who was told it, when", aliases=("whoknows", "who_knows")
)
async def who_knows(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    if not rest:
        raise UsageError()
    target = rest.strip()
    ledger = await owner.audit.who_knows(target)
    lines = [f"{d.time[:19]} {d.recipient} was told {d.fact_id} (audit {d.audit_id})" for d in ledger]
    lines = lines or [f"Nobody has been told {target} by me."]
    return "\n".join(lines + await _heard_lines(owner, target))


async def _heard_lines(owner: OwnerServices, target: str) -> list[str]:
    """Who heard the fact (or the event's facts) said and may be told it back while you have not
    decided (heard it from you), as the calculus counts them now."""
    fact = await owner.memory.get(target)
    facts = [fact] if fact is not None else await owner.memory.by_event([target])
    rulebook = await owner.engine.rulebook()
    out = []
    for f in facts:
        heard = rulebook.gate(f).heard
        if heard:
            who = ", ".join(sorted(heard))
            out.append(f"{f.id}: {who} heard it said ({f.heard_in}): I may tell them it back until you decide (/heard)")
    return out


@commands.command("facts", "[WORDS]", summary="list facts (those with all the words)")
async def facts(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    found = await owner.memory.all()
    words = rest.casefold().split()
    shown = [f for f in found if all(w in f.text.casefold() for w in words)]
    if not shown:
        return "No facts."
    return "\n".join(
        f"{f.id} [{f.event_id}] {f.version} {f.category} L{f.effective_level()}"
        f"{' ' + f.domain if f.domain else ''} {f.state}: {f.text}"
        for f in shown[:50]
    )


@commands.command("contacts", summary="list contacts and groups, with levels and identities")
async def contacts(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    policy = owner.policy
    lines = [
        f"{cid}: {c.name} ({c.relationship}) level {c.level}{' ' + c.domain if c.domain else ''}"
        f"{' [' + ', '.join(c.identities) + ']' if c.identities else ''}"
        for cid, c in policy.contacts.items()
    ]
    lines += [f"group {gid}: {', '.join(members)}" for gid, members in policy.groups.items()]
    return "\n".join(lines) or "No contacts."
