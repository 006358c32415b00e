"""Owner commands: the same verbs and parser on every platform (DESIGN sec. 8).

Commands are plain text (``/allow f3 to ana for 7d``) so that Telegram, Slack and the console
share one parser. Only the agent decides who is the owner; this module never sees anyone else.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from connectors.base import Inbound
from epmem.ingest.annotate import classify
from epmem.policy.directory import Resolved
from epmem.memory.facts import Fact
from epmem.policy.model import PolicyException
from epmem.textnorm import third_person

if TYPE_CHECKING:
    from bot.agent import DelegateAgent

_COMMAND = re.compile(r"^/([A-Za-z][\w-]*)(?:@\w+)?\b\s*(.*)$", re.DOTALL)
_DURATION = re.compile(r"^(\d+)\s*([mhdw])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}

HELP = """Owner commands:
/allow TARGET to WHO[,WHO] [for 7d | until 2026-12-31]   open a fact, event:ID or category:NAME
/deny TARGET to WHO[,WHO] [for 7d | until DATE]          close it (beats any whitelist)
/revoke N              remove exception N (see /exceptions)
/exceptions            list the exceptions added by command
/preview WHO[+WHO] QUESTION   what they would be told (dry run, audited)
/audit [CONTACT]       recent decisions
/why AUDIT_ID          the per-fact verdicts of one decision
/who-knows FACT|EVENT  the disclosure ledger
/remember TEXT         add a note to memory
/facts [WORDS]         list facts (filtered by words)
/contacts              list contacts
/pause | /resume       stop / restart auto-replies
/level WHO|FACT N [from DATE]   a contact's trust level (1-4) or a fact's level (0-4)
/domain WHO|FACT work|life|none [from DATE]
/link WHO IDENTITY | /unlink WHO IDENTITY   e.g. telegram:123456789, slack:T0123/U0456
/forget FACT|event:ID  erase facts, their vectors and source messages (the audit keeps that, not the text)
/approval N|off        hold replies disclosing facts at level N or deeper for your approval
/pending               held replies: /approve ID | /edit ID TEXT | /reject ID
/scheduled             scheduled changes: /unschedule N"""


class CommandError(ValueError):
    """A command the owner mistyped; the message says how to fix it."""


@dataclass(frozen=True, slots=True)
class CommandContext:
    inbound: Inbound
    sender: Resolved


def looks_like_command(text: str) -> bool:
    return _COMMAND.match(text.strip()) is not None


def parse_expiry(words: list[str], now: datetime) -> datetime | None:
    """``for 7d`` / ``for 12h`` / ``until 2026-12-31`` (end of that day, UTC)."""
    if not words:
        return None
    if len(words) == 2 and words[0] == "for":
        m = _DURATION.match(words[1])
        if not m:
            raise CommandError(f"cannot read duration {words[1]!r}: use e.g. 30m, 12h, 7d, 2w")
        return now + timedelta(**{_UNITS[m.group(2)]: int(m.group(1))})
    if len(words) == 2 and words[0] == "until":
        try:
            day = datetime.fromisoformat(words[1])
        except ValueError:
            raise CommandError(f"cannot read date {words[1]!r}: use YYYY-MM-DD") from None
        if day.tzinfo is None:
            day = day.replace(tzinfo=timezone.utc)
        if len(words[1]) == 10:
            day += timedelta(days=1)
        return day
    raise CommandError(f"unexpected {' '.join(words)!r}: end with 'for 7d' or 'until 2026-12-31'")


class OwnerCommands:
    def __init__(self, agent: DelegateAgent) -> None:
        self.agent = agent
        self.verbs: dict[str, Callable[[str, CommandContext], Awaitable[str]]] = {
            "help": self.help, "start": self.help, "allow": self.allow, "deny": self.deny,
            "revoke": self.revoke, "exceptions": self.exceptions, "preview": self.preview,
            "audit": self.audit, "why": self.why, "who-knows": self.who_knows, "whoknows": self.who_knows,
            "who_knows": self.who_knows, "remember": self.remember, "facts": self.facts,
            "contacts": self.contacts, "pause": self.pause, "resume": self.resume,
        }

    async def run(self, text: str, ctx: CommandContext) -> str:
        m = _COMMAND.match(text.strip())
        if not m:
            return HELP
        verb, rest = m.group(1).lower(), m.group(2).strip()
        handler = self.verbs.get(verb)
        if handler is None:
            return f"Unknown command /{verb}.\n{HELP}"
        try:
            return await handler(rest, ctx)
        except CommandError as exc:
            return f"/{verb}: {exc}"

    # ------------------------------------------------------------------ exceptions

    async def _target(self, token: str, effect: str) -> tuple[str, str]:
        engine = self.agent.engine
        kind, _, value = token.partition(":")
        if value and kind in ("fact", "event", "category"):
            token = value
        else:
            kind = ""
        if kind in ("", "category") and token in engine.policy.categories:
            if effect == "allow" and engine.policy.categories[token].never_share:
                raise CommandError(f"category {token!r} is never-share: it cannot be opened to anyone")
            return "category", token
        if kind in ("", "fact"):
            fact = await engine.memory.get(token)
            if fact is not None:
                category = engine.policy.categories.get(fact.category or "")
                if effect == "allow" and category is not None and category.never_share:
                    raise CommandError(f"fact {token} is in a never-share category: it cannot be opened")
                return "fact", token
        if kind in ("", "event") and await engine.memory.by_event([token]):
            return "event", token
        raise CommandError(f"no fact, event or category called {token!r}")

    async def _exception(self, effect: str, rest: str, ctx: CommandContext) -> str:
        words = rest.split()
        if len(words) < 2:
            raise CommandError(f"usage: /{effect} TARGET to WHO[,WHO] [for 7d | until DATE]")
        target_word, words = words[0], words[1:]
        if words and words[0] == "to":
            words = words[1:]
        if not words:
            raise CommandError("say who: a contact id, name or group")
        who_raw, tail = words[0], words[1:]
        who: list[str] = []
        for token in filter(None, who_raw.split(",")):
            cid = self.agent.directory.find_contact(token)
            if cid is None:
                raise CommandError(f"unknown contact or group {token!r}")
            who.append(cid)
        now = datetime.now(timezone.utc)
        until = parse_expiry(tail, now)
        kind, target = await self._target(target_word, effect)
        exc = PolicyException(effect=effect, who=who, until=until, **{kind: target})  # type: ignore[arg-type]
        number = await self.agent.engine.overlay.add_exception(exc)
        await self.agent.audit.append(
            "policy_change",
            {"action": effect, "exception": number, "target": f"{kind}:{target}", "who": who,
             "until": until.isoformat() if until else None, "by": ctx.sender.identity},
            contact="owner",
        )
        expiry = f" until {until:%Y-%m-%d %H:%M} UTC" if until else ""
        return f"Exception {number}: {effect} {', '.join(who)} on {kind} {target}{expiry}."

    async def allow(self, rest: str, ctx: CommandContext) -> str:
        return await self._exception("allow", rest, ctx)

    async def deny(self, rest: str, ctx: CommandContext) -> str:
        return await self._exception("deny", rest, ctx)

    async def revoke(self, rest: str, ctx: CommandContext) -> str:
        if not rest.isdigit():
            raise CommandError("usage: /revoke N (the number shown by /exceptions)")
        removed = await self.agent.engine.overlay.revoke(int(rest))
        if removed is None:
            raise CommandError(f"no exception {rest}")
        await self.agent.audit.append(
            "policy_change", {"action": "revoke", "exception": int(rest), "removed": removed.model_dump(mode="json"),
                              "by": ctx.sender.identity}, contact="owner",
        )
        return f"Revoked exception {rest}."

    async def exceptions(self, rest: str, ctx: CommandContext) -> str:
        rows = await self.agent.engine.overlay.exceptions()
        if not rows:
            return "No exceptions added by command."
        lines = []
        for number, e in rows:
            kind, target = e.target()
            until = f" until {e.until:%Y-%m-%d %H:%M}" if e.until else ""
            lines.append(f"{number}: {e.effect} {', '.join(e.who)} on {kind} {target}{until}")
        return "\n".join(lines)

    # ------------------------------------------------------------------ inspection

    async def preview(self, rest: str, ctx: CommandContext) -> str:
        who_raw, _, question = rest.partition(" ")
        if not who_raw or not question.strip():
            raise CommandError("usage: /preview WHO[+WHO] QUESTION")
        ids: list[str] = []
        for token in who_raw.split("+"):
            cid = "stranger" if token == "stranger" else self.agent.directory.find_contact(token)
            if cid is None or cid in self.agent.engine.policy.groups:
                raise CommandError(f"unknown contact {token!r}")
            ids.append(cid)
        reply, audit_id, _ = await self.agent.preview(ids, question.strip())
        return f"{'+'.join(ids)} would be told:\n{reply}\n(preview {audit_id}; /why {audit_id})"

    async def audit(self, rest: str, ctx: CommandContext) -> str:
        contact = self.agent.directory.find_contact(rest) if rest else None
        if rest and contact is None:
            raise CommandError(f"unknown contact {rest!r}")
        records = await self.agent.audit.records(contact=contact, limit=10)
        if not records:
            return "No decisions recorded yet."
        return "\n".join(
            f"{r.id} {r.time[:19]} {r.kind} {r.contact or ''}: {str(r.body.get('question', r.body.get('action', '')))[:60]}"
            f" -> disclosed {r.body.get('disclosed', [])}"
            for r in records
        )

    async def why(self, rest: str, ctx: CommandContext) -> str:
        record = await self.agent.audit.get(rest.strip())
        if record is None:
            raise CommandError(f"no audit record {rest.strip()!r}")
        lines = [f"{record.id} {record.kind} for {record.body.get('audience', record.contact)}: "
                 f"{record.body.get('question', '')}"]
        for c in record.body.get("candidates", []):
            mark = "USED" if c["used"] else ("allowed" if c["allowed"] else "denied")
            lines.append(f"  {c['fact']} ({c['version']}, event {c['event']}) {mark}")
            for rid, text in c["verdicts"].items():
                lines.append(f"      {rid}: {text}")
        lines.append(f"reply: {record.body.get('reply')}")
        return "\n".join(lines)

    async def who_knows(self, rest: str, ctx: CommandContext) -> str:
        if not rest:
            raise CommandError("usage: /who-knows FACT_OR_EVENT")
        ledger = await self.agent.audit.who_knows(rest.strip())
        if not ledger:
            return f"Nobody has been told {rest.strip()} by me."
        return "\n".join(f"{d.time[:19]} {d.recipient} was told {d.fact_id} (audit {d.audit_id})" for d in ledger)

    async def remember(self, rest: str, ctx: CommandContext) -> str:
        if not rest:
            raise CommandError("usage: /remember TEXT")
        engine = self.agent.engine
        note = uuid.uuid4().hex[:8]
        text = third_person(rest, engine.policy.owner.name.split()[0])
        ann = classify(text, engine.policy)
        fact = Fact(id=f"n{note}", text=text, event_id=f"ev-{note}", category=ann.category, level=ann.level,
                    domain=ann.domain, state="annotated")
        await engine.memory.add([fact])
        await self.agent.audit.append("policy_change", {"action": "remember", "fact": fact.id,
                                                         "category": ann.category, "level": ann.level},
                                      contact="owner")
        return f"Remembered as {fact.id}: {text} (category {ann.category}, L{ann.level}). Change with /allow or /deny."

    async def facts(self, rest: str, ctx: CommandContext) -> str:
        facts = await self.agent.engine.memory.all()
        words = rest.casefold().split()
        shown = [f for f in facts if all(w in f.text.casefold() for w in words)]
        if not shown:
            return "No facts."
        return "\n".join(
            f"{f.id} [{f.event_id}] {f.version} {f.category} L{f.effective_level()}"
            f"{' ' + f.domain if f.domain else ''} {f.state}: {f.text}" for f in shown[:50]
        )

    async def contacts(self, rest: str, ctx: CommandContext) -> str:
        policy = self.agent.engine.policy
        lines = [f"{cid}: {c.name} ({c.relationship}) level {c.level}{' ' + c.domain if c.domain else ''}"
                 f"{' [' + ', '.join(c.identities) + ']' if c.identities else ''}"
                 for cid, c in policy.contacts.items()]
        lines += [f"group {gid}: {', '.join(members)}" for gid, members in policy.groups.items()]
        return "\n".join(lines) or "No contacts."

    async def pause(self, rest: str, ctx: CommandContext) -> str:
        await self.agent.engine.overlay.set_flag("paused", True)
        await self.agent.audit.append("policy_change", {"action": "pause"}, contact="owner")
        return "Paused: I will not answer anyone until /resume."

    async def resume(self, rest: str, ctx: CommandContext) -> str:
        await self.agent.engine.overlay.set_flag("paused", False)
        await self.agent.audit.append("policy_change", {"action": "resume"}, contact="owner")
        return "Resumed."

    async def help(self, rest: str, ctx: CommandContext) -> str:
        return HELP
