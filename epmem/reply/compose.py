"""From the projected facts to the words that leave: mask, compose, check, fall back.

The engine decides *what* may be said; this module makes sure the words say only that:

1. identifiers inside allowed facts are masked (epmem/reply/desensitize.py), except what the asker
   wrote in this chat themselves;
2. the responder composes a reply from the masked facts (one LLM call, or the rules composer);
3. the reply is checked against the denied candidates that recall found (epmem/reply/guard.py), and,
   when a model wrote it, also against denied facts merely near the question (recall's relevance
   threshold may have dropped the very secret the asker is fishing for); a hit
   replaces it by the rules composer's reply, and if even that overlaps (it should not: it
   only repeats allowed facts) by the deflection. Fail closed, never open.

Everything that happened is returned for the audit record: which composer wrote the text, the
LLM call and its tokens, the post-check outcome with its evidence, the kinds of masked items.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import structlog

from epmem.reply.desensitize import Desensitizer, mask_facts
from epmem.reply.guard import Denied, Overlap, ReplyGuard
from epmem.reply.respond import Composition, ReplyContext, Responder, RulesResponder, compose, deflection

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Written:
    text: str
    composition: Composition
    #: ``pass``, ``replaced`` (by the rules composer) or ``deflected``.
    postcheck: str
    hits: tuple[Overlap, ...] = ()
    checked: int = 0
    masked: tuple[str, ...] = field(default=())

    @property
    def composer(self) -> str:
        if self.postcheck == "replaced":
            return "rules"
        if self.postcheck == "deflected":
            return "deflection"
        return self.composition.composer

    def audit(self) -> dict[str, Any]:
        c = self.composition
        return {
            "composer": self.composer,
            "llm": {
                "calls": c.llm_calls,
                **{k: v for k, v in c.usage.as_dict().items() if k != "calls"},
                "error": c.llm_error,
                "prompt": c.prompt,
                "ms": round(c.llm_ms, 1),
            },
            "postcheck": {
                "outcome": self.postcheck,
                "checked": self.checked,
                "hits": [{"fact": h.fact_id, "evidence": list(h.evidence)} for h in self.hits],
            },
            "masked": list(self.masked),
        }


class ReplyWriter:
    def __init__(
        self, responder: Responder, fallback: RulesResponder | None = None, desensitizer: Desensitizer | None = None
    ) -> None:
        self.responder = responder
        self.fallback = fallback or RulesResponder()
        self.desensitizer = desensitizer or Desensitizer()

    async def write(
        self,
        ctx: ReplyContext,
        denied: Sequence[Denied],
        names: Iterable[str],
        nearby: Callable[[], Awaitable[Sequence[Denied]]] | None = None,
    ) -> Written:
        """``ctx.facts`` are the projected facts as stored; ``denied`` the candidates the
        audience may not know; ``names`` the people in the conversation (not evidence);
        ``nearby`` more denied facts, fetched only when a model composed the reply."""
        known = (ctx.question, *ctx.recent_turns)
        facts, masked = mask_facts(ctx.facts, known, self.desensitizer)
        safe_ctx = replace(ctx, facts=facts)
        composition = await compose(self.responder, safe_ctx)
        if nearby is not None and composition.composer not in ("rules", "deflection"):
            seen = {d.fact_id for d in denied}
            denied = [*denied, *(d for d in await nearby() if d.fact_id not in seen)]
        guard = ReplyGuard(facts, ignore_words=[ctx.owner_name, ctx.recipient_name, *names], asked=known)
        hits = tuple(guard.check(composition.text, denied))
        if not hits:
            return Written(composition.text, composition, "pass", (), len(denied), masked)
        log.warning("postcheck.hit", composer=composition.composer, facts=[h.fact_id for h in hits])
        rules = await self.fallback.compose(safe_ctx)
        if not guard.check(rules.text, denied):
            return Written(rules.text, composition, "replaced", hits, len(denied), masked)
        return Written(deflection(ctx.owner_name, ctx.language), composition, "deflected", hits, len(denied), masked)
