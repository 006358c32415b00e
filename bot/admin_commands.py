"""The owner's commands that change who is who and what is held (DESIGN sec. 8, issue #5).

``/level``, ``/domain``, ``/link``, ``/unlink`` change a contact (kept in the overlay, never in
the policy file) or a fact (its annotation becomes ``owner-set``); with ``from DATE`` the change
is scheduled instead (an embargo that lifts on a date). ``/forget`` erases facts. ``/approval``
sets approval mode, and ``/approve`` / ``/edit`` / ``/reject`` / ``/pending`` decide held replies.

These live beside :mod:`bot.commands` and share its parser, errors and context: the verbs are
merged into the same table, so every platform gets them the same way.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from epmem.memory.facts import Fact
from epmem.policy.model import OWNER_ID, STRANGER_ID, Contact
from epmem.reply.respond import deflection

from bot.approvals import APPROVAL_FLAG, Held
from bot.clock import aware
from bot.commands import CommandContext, CommandError

if TYPE_CHECKING:
    from bot.agent import DelegateAgent

Verb = Callable[[str, CommandContext], Awaitable[str]]

_DOMAINS = {"work": "work", "life": "life", "none": None, "-": None}
_IN = re.compile(r"^(\d+)([mhdw])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_when(words: list[str], now: datetime) -> datetime | None:
    """``from 2026-06-19`` (start of that day, UTC), ``from 2026-06-19T09:00``, ``in 7d``."""
    if not words:
        return None
    if len(words) == 2 and words[0] == "in":
        m = _IN.match(words[1])
        if not m:
            raise CommandError(f"cannot read {words[1]!r}: use e.g. 30m, 12h, 7d, 2w")
        return now + timedelta(**{_UNITS[m.group(2)]: int(m.group(1))})
    if len(words) == 2 and words[0] == "from":
        try:
            when = aware(datetime.fromisoformat(words[1]))
        except ValueError:
            raise CommandError(f"cannot read date {words[1]!r}: use YYYY-MM-DD or YYYY-MM-DDTHH:MM") from None
        if when <= now:
            raise CommandError(f"{words[1]} has passed: leave out 'from' to change it now")
        return when
    raise CommandError(f"unexpected {' '.join(words)!r}: end with 'from 2026-06-19' or 'in 7d'")


class AdminCommands:
    """The verbs of this module, bound to one agent."""

    def __init__(self, agent: DelegateAgent) -> None:
        self.agent = agent

    def verbs(self) -> dict[str, Verb]:
        return {
            "level": self.level, "domain": self.domain, "link": self.link, "unlink": self.unlink,
            "forget": self.forget, "approval": self.approval, "pending": self.pending,
            "approve": self.approve, "edit": self.edit, "reject": self.reject,
            "scheduled": self.scheduled, "unschedule": self.unschedule,
        }

    # ------------------------------------------------------------------ targets

    async def _contact_or_fact(self, token: str) -> tuple[str, str]:
        """("contact", id) or ("fact", id); a token that is both must carry a prefix."""
        kind, _, value = token.partition(":")
        if value and kind in ("contact", "fact"):
            token = value
        else:
            kind = ""
        cid = self.agent.directory.find_contact(token) if kind in ("", "contact") else None
        if cid is not None and cid in self.agent.engine.policy.groups:
            cid = None
        fact = await self.agent.engine.memory.get(token) if kind in ("", "fact") else None
        if cid is not None and fact is not None:
            raise CommandError(f"{token!r} is both a contact and a fact: write contact:{token} or fact:{token}")
        if cid is not None:
            return "contact", cid
        if fact is not None:
            return "fact", fact.id
        raise CommandError(f"no contact or fact called {token!r}")

    async def _audit(self, body: dict[str, Any], ctx: CommandContext) -> None:
        await self.agent.audit.append("policy_change", {**body, "by": ctx.sender.identity}, contact="owner")

    async def _schedule(self, verb: str, args: str, when: datetime, ctx: CommandContext) -> str:
        text = f"/{verb} {args}"
        number = await self.agent.tasks.add("command", when, {"text": text, "by": ctx.sender.identity})
        await self._audit({"action": "schedule", "task": number, "command": text, "due": when.isoformat()}, ctx)
        return f"Scheduled {number}: {text} at {when:%Y-%m-%d %H:%M} UTC. Cancel with /unschedule {number}."

    # ------------------------------------------------------------------ contacts

    async def _override(self, cid: str, change: Callable[[dict[str, Any]], None]) -> None:
        """Change one contact's override row and rebuild the effective policy; a change the
        policy cannot take (e.g. an identity someone else claims) is undone and reported."""
        overlay = self.agent.engine.overlay
        rows = await overlay.contact_overrides()
        before = rows.get(cid, {})
        after = {k: (list(v) if isinstance(v, list) else v) for k, v in before.items()}
        change(after)
        await overlay.set_contact_override(cid, {k: v for k, v in after.items() if v != []})
        skipped = await self.agent.refresh_policy()
        problem = next((s.reason for s in skipped if s.contact == cid), None)
        if problem is not None:
            await overlay.set_contact_override(cid, before)
            await self.agent.refresh_policy()
            raise CommandError(f"cannot change {cid}: {problem}")

    async def level(self, rest: str, ctx: CommandContext) -> str:
        words = rest.split()
        if len(words) < 2:
            raise CommandError("usage: /level CONTACT 1-4 | /level FACT 0-4 [from DATE]")
        kind, target = await self._contact_or_fact(words[0])
        if not words[1].isdigit():
            raise CommandError(f"level must be a number, not {words[1]!r}")
        level = int(words[1])
        lowest = 1 if kind == "contact" else 0
        if not lowest <= level <= 4:
            raise CommandError(f"a {kind}'s level is {lowest}-4")
        when = parse_when(words[2:], self.agent.clock())
        if when is not None:
            return await self._schedule("level", f"{kind}:{target} {level}", when, ctx)
        if kind == "contact":
            old_level = self.agent.engine.policy.contacts[target].level
            await self._override(target, lambda body: body.__setitem__("level", level))
            await self._audit({"action": "level", "contact": target, "from": old_level, "to": level}, ctx)
            return f"{target} is now level {level} (was {old_level})."
        fact = await self._fact(target)
        await self._set_fact(fact, level=level)
        await self._audit({"action": "level", "fact": target, "from": fact.effective_level(), "to": level}, ctx)
        return f"Fact {target} is now level {level} (was L{fact.effective_level()}), set by you."

    async def domain(self, rest: str, ctx: CommandContext) -> str:
        words = rest.split()
        if len(words) < 2 or words[1] not in _DOMAINS:
            raise CommandError("usage: /domain CONTACT|FACT work|life|none [from DATE]")
        kind, target = await self._contact_or_fact(words[0])
        domain = _DOMAINS[words[1]]
        when = parse_when(words[2:], self.agent.clock())
        if when is not None:
            return await self._schedule("domain", f"{kind}:{target} {words[1]}", when, ctx)
        if kind == "contact":
            old = self.agent.engine.policy.contacts[target].domain
            await self._override(target, lambda body: body.__setitem__("domain", domain))
            await self._audit({"action": "domain", "contact": target, "from": old, "to": domain}, ctx)
            return f"{target} is now in domain {domain or 'none'} (was {old or 'none'})."
        fact = await self._fact(target)
        await self._set_fact(fact, domain=domain)
        await self._audit({"action": "domain", "fact": target, "from": fact.domain, "to": domain}, ctx)
        return f"Fact {target} is now in domain {domain or 'none'} (was {fact.domain or 'none'})."

    async def _identity_args(self, rest: str, verb: str) -> tuple[str, str]:
        words = rest.split()
        if len(words) != 2:
            raise CommandError(f"usage: /{verb} CONTACT IDENTITY (telegram:123, slack:T0123/U0456, console:name)")
        cid = self.agent.directory.find_contact(words[0])
        if cid is None or cid in self.agent.engine.policy.groups:
            raise CommandError(f"unknown contact {words[0]!r}")
        try:
            Contact(name="check", level=4, identities=[words[1]])
        except ValidationError:
            raise CommandError(
                f"{words[1]!r} is not an identity: use telegram:123456789, slack:T0123/U0456 or console:name"
            ) from None
        return cid, words[1]

    async def link(self, rest: str, ctx: CommandContext) -> str:
        cid, identity = await self._identity_args(rest, "link")
        holder = self.agent.directory.resolve(identity).contact_id
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

        await self._override(cid, change)
        await self._audit({"action": "link", "contact": cid, "identity": identity}, ctx)
        return f"Linked {identity} to {cid}: messages from it are answered as to {cid}."

    async def unlink(self, rest: str, ctx: CommandContext) -> str:
        cid, identity = await self._identity_args(rest, "unlink")
        if identity not in self.agent.engine.policy.contacts[cid].identities:
            raise CommandError(f"{identity} is not linked to {cid}")

        def change(body: dict[str, Any]) -> None:
            body["add"] = [i for i in body.get("add", []) if i != identity]
            body.setdefault("remove", [])
            if identity in self.agent.base_policy.contacts[cid].identities and identity not in body["remove"]:
                body["remove"].append(identity)

        await self._override(cid, change)
        await self._audit({"action": "unlink", "contact": cid, "identity": identity}, ctx)
        return f"Unlinked {identity} from {cid}: it is a stranger now."

    # ------------------------------------------------------------------ facts

    async def _fact(self, fact_id: str) -> Fact:
        fact = await self.agent.engine.memory.get(fact_id)
        if fact is None:
            raise CommandError(f"no fact {fact_id!r}")
        return fact

    async def _set_fact(self, fact: Fact, **changes: Any) -> None:
        data = {**fact.model_dump(), **changes, "state": "owner-set"}
        if data.get("level") is None:
            data["level"] = fact.effective_level()
        await self.agent.engine.memory.update([Fact.model_validate(data)])

    async def forget(self, rest: str, ctx: CommandContext) -> str:
        """Erase facts from memory (points and vectors), with what hangs off them: the chat turns
        they were distilled from, exceptions naming them and held drafts that would tell them.
        The audit records ids, not text."""
        token = rest.strip()
        if not token:
            raise CommandError("usage: /forget FACT | /forget event:EVENT_ID")
        memory = self.agent.engine.memory
        kind, _, value = token.partition(":")
        event: str | None = None
        if kind == "event" and value:
            event = value
            facts = await memory.by_event([value])
        else:
            fact = await memory.get(token)
            facts = [fact] if fact is not None else []
            if not facts:
                facts = await memory.by_event([token])
                event = token if facts else None
        if not facts:
            raise CommandError(f"no fact or event called {token!r}")
        ids = sorted(f.id for f in facts)
        await memory.forget(ids)
        sources = sorted({ref for f in facts for ref in f.source_turns})
        turns = await self.agent.conversations.erase_turns(sources) if self.agent.conversations else 0
        overlay = self.agent.engine.overlay
        revoked = []
        for number, exc in await overlay.exceptions():
            target_kind, target = exc.target()
            if (target_kind == "fact" and target in ids) or (target_kind == "event" and event and target == event):
                await overlay.revoke(number)
                revoked.append(number)
        withdrawn = await self.agent.approvals.drop_disclosing(ids)
        await self._audit({"action": "forget", "facts": ids, "event": event, "source_turns_erased": turns,
                           "exceptions_revoked": revoked, "approvals_withdrawn": withdrawn}, ctx)
        extra = f"; erased {turns} source turn{'s' * (turns != 1)}" if turns else ""
        extra += f"; revoked exceptions {revoked}" if revoked else ""
        extra += f"; withdrew held replies {withdrawn}" if withdrawn else ""
        return f"Erased {', '.join(ids)} and their vectors{extra}. The audit keeps that they were erased."

    # ------------------------------------------------------------------ approval mode

    async def approval(self, rest: str, ctx: CommandContext) -> str:
        overlay = self.agent.engine.overlay
        word = rest.strip().lower()
        if not word:
            level = await overlay.get_flag(APPROVAL_FLAG)
            if level is None:
                return "Approval mode is off. /approval N holds replies that disclose facts at level N or deeper."
            return f"Approval mode: replies disclosing facts at level {level} or deeper wait for you."
        if word == "off":
            await overlay.set_flag(APPROVAL_FLAG, None)
            await self._audit({"action": "approval", "level": None}, ctx)
            return "Approval mode off: replies go out without asking you."
        if not word.isdigit() or not 0 <= int(word) <= 4:
            raise CommandError("usage: /approval 0-4 | /approval off")
        await overlay.set_flag(APPROVAL_FLAG, int(word))
        await self._audit({"action": "approval", "level": int(word)}, ctx)
        return (f"Approval mode on: replies disclosing facts at level {word} or deeper wait for your "
                "/approve, /edit or /reject.")

    async def pending(self, rest: str, ctx: CommandContext) -> str:
        held = await self.agent.approvals.pending()
        if not held:
            return "No replies are waiting for you."
        return "\n\n".join(h.note() for h in held)

    async def _decide(self, approval_id: str, state: str, final: str | None) -> Held:
        """Claim a pending reply for a decision; the platform must be reachable to send it."""
        held = await self.agent.approvals.get(approval_id)
        if held is None:
            raise CommandError(f"no held reply {approval_id!r} (see /pending)")
        if held.state != "pending":
            raise CommandError(f"held reply {approval_id} is already {held.state}")
        if held.platform not in self.agent.outbox:
            raise CommandError(f"cannot reach {held.platform} from here: decide it where it is connected")
        claimed = await self.agent.approvals.claim(approval_id, state, final)
        if claimed is None:
            raise CommandError(f"held reply {approval_id} expired or was decided meanwhile")
        return claimed

    async def _send(self, held: Held, text: str, ctx: CommandContext, record_kind: str, body: dict[str, Any],
                    disclosed: bool) -> str:
        """Audit, then send; a failed send puts the reply back to pending for another try."""
        record = await self.agent.audit.append(
            record_kind,
            {"approval": held.id, "platform": held.platform, "chat": held.chat_id, "contact": held.contact,
             "held_audit": held.audit_id, "question": held.question, "reply": text, "by": ctx.sender.identity,
             **body},
            contact=held.contact,
            disclosed=held.disclosed if disclosed else (),
            recipients=held.recipients if disclosed else (),
        )
        try:
            await self.agent.outbox[held.platform](held.chat_id, text, ())
        except Exception as exc:  # the connector said no: keep the decision open
            await self.agent.approvals.unclaim(held.id)
            await self.agent.audit.append("delivery_failed", {"approval": held.id, "audit": record.id,
                                                               "error": type(exc).__name__}, contact=held.contact)
            raise CommandError(f"could not deliver to {held.platform} ({type(exc).__name__}); still pending") from None
        return record.id

    async def approve(self, rest: str, ctx: CommandContext) -> str:
        approval_id = rest.strip()
        held = await self._decide(approval_id, "approved", None)
        audit_id = await self._send(held, held.draft, ctx, "approval", {"decision": "approved"}, disclosed=True)
        return f"Sent held reply {held.id} to {held.contact} (audit {audit_id})."

    async def edit(self, rest: str, ctx: CommandContext) -> str:
        approval_id, _, text = rest.strip().partition(" ")
        text = text.strip()
        if not approval_id:
            raise CommandError("usage: /edit ID NEW TEXT")
        if not text:
            held = await self.agent.approvals.get(approval_id)
            if held is None:
                raise CommandError(f"no held reply {approval_id!r} (see /pending)")
            return f"To send your own words instead, type:\n/edit {held.id} YOUR TEXT\nThe draft was:\n{held.draft}"
        held = await self._decide(approval_id, "edited", text)
        audit_id = await self._send(held, text, ctx, "approval", {"decision": "edited", "draft": held.draft},
                                    disclosed=True)
        return f"Sent your version of held reply {held.id} to {held.contact} (audit {audit_id})."

    async def reject(self, rest: str, ctx: CommandContext) -> str:
        """The draft is dropped; the asker gets the ordinary deflection, as if nothing could be said."""
        approval_id = rest.strip()
        held = await self._decide(approval_id, "rejected", None)
        text = deflection(self.agent.engine.policy.owner.name)
        audit_id = await self._send(held, text, ctx, "approval", {"decision": "rejected"}, disclosed=False)
        return f"Rejected held reply {held.id}; {held.contact} got the usual deflection (audit {audit_id})."

    # ------------------------------------------------------------------ schedule

    async def scheduled(self, rest: str, ctx: CommandContext) -> str:
        tasks = [t for t in await self.agent.tasks.pending() if t.kind == "command"]
        if not tasks:
            return "No scheduled changes."
        return "\n".join(f"{t.id}: {t.payload.get('text')} at {t.due_at:%Y-%m-%d %H:%M} UTC" for t in tasks)

    async def unschedule(self, rest: str, ctx: CommandContext) -> str:
        if not rest.strip().isdigit():
            raise CommandError("usage: /unschedule N (see /scheduled)")
        number = int(rest.strip())
        task = await self.agent.tasks.get(number)
        if task is None or task.kind != "command":
            raise CommandError(f"no scheduled change {number}")
        if not await self.agent.tasks.finish(number, "cancelled", "cancelled by owner", self.agent.clock()):
            raise CommandError(f"scheduled change {number} is already {task.state}")
        await self._audit({"action": "unschedule", "task": number, "command": task.payload.get("text")}, ctx)
        return f"Cancelled scheduled change {number}."

