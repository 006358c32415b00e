"""Turning the projected facts into words, and the one deflection for everything else.

Whatever composes the reply (the rules composer, or an LLM) receives only a
:class:`ReplyContext`, which by construction holds nothing but facts the audience may know
(docs/DESIGN.md sec. 4): the owner's persona, the recipient's name and relationship, the question, the
recent turns of this chat and the projected facts. The LLM composer spends exactly one call
per reply and never fails open: a timeout, an HTTP error, a refusal, or an answer that is not
a reply by the sanity rules (epmem/reply/sanity.py: empty, cut off, too long, prompt markers or
instructions, JSON, a repetition loop, another language) gives the rules composer's reply
instead, within the configured budget, and says why.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Protocol

import structlog

from epmem.language import Language, join_sentences, say, sentence
from epmem.llm.base import LLM, CallUsage, LLMError
from epmem.llm.prompts import get_template
from epmem.reply.sanity import SanityConfig, check_reply, prompt_shingles, warm_up

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class ReplyContext:
    owner_name: str
    persona: str
    recipient_name: str
    relationship: str
    question: str
    facts: tuple[str, ...]
    recent_turns: tuple[str, ...] = field(default=())
    #: the language of the message answered (epmem/language/): the rules composer's frame and
    #: the deflection are said in it, and a model's reply must be in it.
    language: Language = "en"


@dataclass(frozen=True, slots=True)
class Composition:
    """A composed reply and how it came about (the audit records all of it)."""

    text: str
    #: who wrote ``text``: ``rules``, ``openai`` (the LLM backend's name) or ``deflection``.
    composer: str
    #: LLM calls sent for this reply (0 or 1) and the tokens of the answer, if one came back.
    llm_calls: int = 0
    usage: CallUsage = field(default_factory=CallUsage)
    #: why the LLM's answer was not used: the call failed (``timeout``, ``http``, ``invalid``,
    #: ``empty``) or its answer broke a sanity rule (``sanity:repetition``, ``sanity:markers``...).
    llm_error: str | None = None
    prompt: str | None = None
    llm_ms: float = 0.0


class Responder(Protocol):
    name: str

    async def reply(self, ctx: ReplyContext) -> str: ...


def deflection(owner_name: str, language: Language = "en") -> str:
    """The same words for a secret and for something that never happened: the asker must not
    be able to tell the two apart, so nothing about the question or the memory goes in (the
    language is the question's, or the policy's: never the memory's)."""
    return say("deflection", language, owner=owner_name)


class RulesResponder:
    """Offline composer: the permitted facts as plain sentences. Weak prose, same safety."""

    name = "rules"

    def __init__(self, max_facts: int = 4) -> None:
        self.max_facts = max_facts

    async def reply(self, ctx: ReplyContext) -> str:
        return (await self.compose(ctx)).text

    async def compose(self, ctx: ReplyContext) -> Composition:
        if not ctx.facts:
            return Composition(deflection(ctx.owner_name, ctx.language), "deflection")
        body = join_sentences([sentence(f, ctx.language) for f in ctx.facts[: self.max_facts]])
        return Composition(say("share", ctx.language, body=body), "rules")


class LLMResponder:
    """One LLM call per reply (prompt ``reply``), the rules composer whenever it fails.

    ``budget_s`` bounds the wait for the model whatever the client's own timeouts and retries
    say, so a slow or hung endpoint costs the asker at most the budget, never a missing reply.
    ``max_tokens`` bounds the answer's length at the model; ``sanity`` the text that comes back.
    """

    def __init__(
        self,
        llm: LLM,
        budget_s: float = 45.0,
        fallback: RulesResponder | None = None,
        style: str = "",
        template: str = "reply",
        max_tokens: int = 300,
        sanity: SanityConfig | None = None,
    ) -> None:
        if budget_s <= 0:
            raise ValueError("budget_s must be > 0")
        if max_tokens <= 0:
            raise ValueError("max_tokens must be > 0")
        self.llm = llm
        self.name = llm.name
        self.budget_s = budget_s
        self.max_tokens = max_tokens
        self.fallback = fallback or RulesResponder()
        self.style = style
        self.template = get_template(template)
        self.sanity = sanity or SanityConfig()
        self._prompt_text = prompt_shingles((self.template.system, self.template.user), self.sanity.prompt_ngram)
        warm_up()

    async def reply(self, ctx: ReplyContext) -> str:
        return (await self.compose(ctx)).text

    async def compose(self, ctx: ReplyContext) -> Composition:
        if not ctx.facts:
            return Composition(deflection(ctx.owner_name, ctx.language), "deflection")
        messages = self.template.render(
            owner_name=ctx.owner_name,
            persona=ctx.persona or "(none)",
            style=self.style or "(none)",
            recipient_name=ctx.recipient_name,
            relationship=ctx.relationship or "unknown",
            recent_turns="\n".join(ctx.recent_turns) or "(none)",
            facts=list(ctx.facts),
            question=ctx.question,
        )
        prompt = f"{self.template.key}@{self.template.digest}"
        started = time.perf_counter()
        try:
            called = await asyncio.wait_for(
                self.llm.text_call("reply", messages, max_tokens=self.max_tokens), timeout=self.budget_s
            )
        except (TimeoutError, LLMError) as exc:
            kind = exc.kind if isinstance(exc, LLMError) else "timeout"
            usage = exc.usage if isinstance(exc, LLMError) else CallUsage()
            return await self._fallback(ctx, kind, usage, prompt, started)
        broken = check_reply(
            called.value,
            question=ctx.question,
            prompt=self._prompt_text,
            finish_reason=called.finish_reason,
            config=self.sanity,
        )
        if broken is not None:
            return await self._fallback(ctx, f"sanity:{broken}", called.usage, prompt, started)
        return Composition(
            called.value, self.name, 1, called.usage, None, prompt, (time.perf_counter() - started) * 1000
        )

    async def _fallback(
        self, ctx: ReplyContext, reason: str, usage: CallUsage, prompt: str, started: float
    ) -> Composition:
        log.warning("reply.fallback", reason=reason)
        rules = await self.fallback.compose(ctx)
        return Composition(rules.text, rules.composer, 1, usage, reason, prompt, (time.perf_counter() - started) * 1000)


async def compose(responder: Responder, ctx: ReplyContext) -> Composition:
    """Any responder as a Composition (responders without ``compose`` only return text)."""
    method = getattr(responder, "compose", None)
    if method is not None:
        result = await method(ctx)
        if isinstance(result, Composition):
            return result
    return Composition(await responder.reply(ctx), responder.name)
