"""The owner's view of annotation: list what the engine decided, fix it, or ask for another try.

``/annotations [pending | WORDS]`` lists facts with their annotation (pending ones are level 0
for everyone until fixed), ``/category FACT NAME`` and ``/confirm FACT`` make an annotation
``owner-set``, ``/reannotate [SESSION...]`` retries the model for sessions still pending.
``/level FACT N`` and ``/domain FACT ...`` (bot/admin_commands.py) fix the rest. Every change
is audited as a policy change. Only the owner reaches these verbs (bot/agent.py decides that).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from epmem.ingest.distill import Distiller
from epmem.memory.facts import Fact

from bot.commands import CommandContext, CommandError

if TYPE_CHECKING:
    from bot.agent import DelegateAgent

Verb = Callable[[str, CommandContext], Awaitable[str]]
MAX_LINES = 50


def describe(f: Fact) -> str:
    lists = ""
    if f.whitelist:
        lists += f" +{','.join(f.whitelist)}"
    if f.blacklist:
        lists += f" -{','.join(f.blacklist)}"
    covers = f" covers {f.covers}" if f.covers else ""
    level = f"L{f.effective_level()}" + (f" (proposed L{f.level})" if f.state == "pending" and f.level is not None
                                         else "")
    return (f"{f.id} [{f.event_id}] {f.version}{covers} {f.category} {level}"
            f"{' ' + f.domain if f.domain else ''}{lists} {f.state}: {f.text}")


class AnnotationCommands:
    def __init__(self, agent: DelegateAgent, distiller: Distiller | None) -> None:
        self.agent = agent
        self.distiller = distiller

    def verbs(self) -> dict[str, Verb]:
        return {"annotations": self.annotations, "category": self.category, "confirm": self.confirm,
                "reannotate": self.reannotate}

    async def _fact(self, fact_id: str) -> Fact:
        fact = await self.agent.engine.memory.get(fact_id)
        if fact is None:
            raise CommandError(f"no fact {fact_id!r}")
        return fact

    async def _save(self, fact: Fact, action: dict[str, Any]) -> None:
        await self.agent.engine.memory.update([fact])
        await self.agent.audit.append("policy_change", {**action, "fact": fact.id}, contact="owner")

    async def annotations(self, rest: str, ctx: CommandContext) -> str:
        facts = await self.agent.engine.memory.all()
        words = rest.casefold().split()
        if words[:1] == ["pending"]:
            shown = [f for f in facts if f.state == "pending"]
            words = words[1:]
        else:
            shown = facts
        shown = [f for f in shown if all(w in f.text.casefold() for w in words)]
        lines = [describe(f) for f in shown[:MAX_LINES]]
        if len(shown) > MAX_LINES:
            lines.append(f"... and {len(shown) - MAX_LINES} more; add words to narrow it down")
        if self.distiller is not None and self.distiller.pending():
            sessions = self.distiller.pending()
            errors = {sid: self.distiller.outcomes[sid].errors for sid in sessions if sid in self.distiller.outcomes}
            lines.append("Sessions waiting for the model: " + ", ".join(
                f"{sid} ({'/'.join(errors.get(sid, [])) or 'queued'})" for sid in sessions))
            lines.append("/reannotate to try again; /category, /level, /domain or /confirm to set by hand.")
        return "\n".join(lines) or "No facts."

    async def category(self, rest: str, ctx: CommandContext) -> str:
        words = rest.split()
        if len(words) != 2:
            raise CommandError("usage: /category FACT CATEGORY")
        fact = await self._fact(words[0])
        policy = self.agent.engine.policy
        cat = policy.categories.get(words[1])
        if cat is None:
            raise CommandError(f"no category {words[1]!r}; categories: {', '.join(policy.categories)}")
        updated = fact.model_copy(update={"category": words[1], "level": cat.level, "domain": cat.domain,
                                          "state": "owner-set"})
        await self._save(updated, {"action": "category", "from": fact.category, "to": words[1]})
        return f"Fact {fact.id} is now {words[1]} (L{cat.level}{' ' + cat.domain if cat.domain else ''}), set by you."

    async def confirm(self, rest: str, ctx: CommandContext) -> str:
        """Accept a fact's proposed annotation as is (for a pending fact: the rules' proposal)."""
        if not rest.strip():
            raise CommandError("usage: /confirm FACT")
        fact = await self._fact(rest.strip())
        if fact.category is None or fact.level is None:
            raise CommandError(f"fact {fact.id} has no proposed annotation: use /category first")
        updated = fact.model_copy(update={"state": "owner-set"})
        await self._save(updated, {"action": "confirm", "level": fact.level, "category": fact.category})
        return f"Confirmed: {describe(updated)}"

    async def reannotate(self, rest: str, ctx: CommandContext) -> str:
        if self.distiller is None or self.distiller.model is None:
            return "Nothing to retry: the rules backend annotates as it ingests."
        chosen = self.distiller.reannotate(rest.split() or None)
        if not chosen:
            return "No pending session matches." if rest.strip() else "No session is waiting for the model."
        return f"Annotating again in the background: {', '.join(chosen)}."
