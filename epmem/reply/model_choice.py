"""With a model configured, the model chooses which of the allowed facts answer the question.

The rules relevance step (epmem/reply/relevance/) always runs first; the model then gets one
call (prompt ``choose``) that shows it the storyline's facts only, the facts every reader may
know (epmem/reply/projection.py: a truth or, in its place, an allowed cover), the best
``offered`` of them: the rules step's choice first, in its order, then the others by the rules
step's score, then by recall score. Their identifiers are masked as for the reply
(epmem/reply/desensitize.py) and they are named ``F1``..``Fn``, never by their real ids. The
model answers ``{"facts": ["F2", "F5"]}`` (best first; an empty list: nothing answers).

Failing closed: an answer that is not exactly that (not JSON, other keys or types), an id that
was not offered, an id twice, more ids than a reply tells (``max_facts``), a timeout, an HTTP
error or a refusal: the rules step's choice is used, and the audit says so (``fallback``).
What the model chose then goes through the composite rule, the responder, the sanity rules and
the post-check exactly as the rules step's choice does (epmem/reply/engine.py): the model can
only pick among what may be said, and only narrow it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import structlog

from epmem.llm.base import LLM, CallUsage, LLMError
from epmem.llm.outputs import ChosenFacts
from epmem.llm.prompts import get_template
from epmem.reply.desensitize import Desensitizer, mask_facts
from epmem.reply.projection import FactDecision, Projection
from epmem.reply.relevance import Choice

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class ChooserConfig:
    #: the most facts the model is shown (the best by the rules step, see the module's doc).
    offered: int = 8
    #: the longest the reply waits for the model's choice before the rules step's is used.
    budget_s: float = 20.0

    def __post_init__(self) -> None:
        if self.offered < 1:
            raise ValueError("ChooserConfig.offered must be >= 1")
        if self.budget_s <= 0:
            raise ValueError("ChooserConfig.budget_s must be > 0")


def offered_facts(storyline: Projection, rules: Choice, most: int) -> list[FactDecision]:
    """The facts the model is shown, best first: the rules step's choice, then the storyline's
    other facts by the rules step's score, then by recall score; at most ``most``."""
    rank = {fid: i for i, fid in enumerate(rules.chosen)}

    def key(d: FactDecision) -> tuple[int, float]:
        fid = d.fact.id
        if fid in rank:
            return 0, rank[fid]
        if fid in rules.scores:
            return 1, -rules.scores[fid]
        return 2, -d.score

    return sorted(storyline.used, key=key)[:most]


class ModelChooser:
    """One ``choose`` call per reply that has facts to offer; the rules step's choice otherwise."""

    def __init__(
        self,
        llm: LLM,
        config: ChooserConfig | None = None,
        max_facts: int = 4,
        desensitizer: Desensitizer | None = None,
    ) -> None:
        if max_facts < 1:
            raise ValueError("max_facts must be >= 1")
        self.llm = llm
        self.config = config or ChooserConfig()
        self.max_facts = max_facts
        self.desensitizer = desensitizer or Desensitizer()
        self.template = get_template("choose")

    async def choose(
        self,
        question: str,
        storyline: Projection,
        rules: Choice,
        owner_name: str,
        recent_turns: Sequence[str] = (),
    ) -> Choice:
        """The model's choice among the storyline's facts, or ``rules`` (audited either way)."""
        offered = offered_facts(storyline, rules, self.config.offered)
        note: dict[str, object] = {"offered": [d.fact.id for d in offered], "rules_chosen": list(rules.chosen)}
        if not offered:
            return self._rules(rules, note, "nothing to offer", CallUsage(), None)
        known = (question, *recent_turns)
        texts, _ = mask_facts([d.fact.text for d in offered], known, self.desensitizer)
        names = {f"F{i}": d.fact.id for i, d in enumerate(offered, 1)}
        messages = self.template.render(
            owner_name=owner_name,
            recent_turns="\n".join(recent_turns) or "(none)",
            candidates=list(zip(names, texts, strict=True)),
            question=question,
            most=str(self.max_facts),
        )
        started = time.perf_counter()
        try:
            called = await asyncio.wait_for(
                self.llm.structured_call("choose", messages, ChosenFacts), timeout=self.config.budget_s
            )
        except (TimeoutError, LLMError) as exc:
            kind = exc.kind if isinstance(exc, LLMError) else "timeout"
            usage = exc.usage if isinstance(exc, LLMError) else CallUsage()
            return self._rules(rules, note, kind, usage, started)
        picked = called.value.facts
        problem = _problem(picked, names, self.max_facts)
        if problem is not None:
            return self._rules(rules, note, problem, called.usage, started)
        chosen = tuple(names[f] for f in picked)
        note.update(chooser="model", fallback=None, model=self._call(called.usage, None, started))
        left_out = {d.fact.id: "the model did not choose it" for d in offered if d.fact.id not in chosen}
        return replace(rules, chosen=chosen, left_out=left_out, chooser=note)

    def _rules(
        self, rules: Choice, note: dict[str, object], why: str, usage: CallUsage, started: float | None
    ) -> Choice:
        if started is not None:
            log.warning("choose.fallback", reason=why)
        note.update(chooser="rules", fallback=why, model=self._call(usage, why, started))
        return replace(rules, chooser=note)

    def _call(self, usage: CallUsage, error: str | None, started: float | None) -> dict[str, object]:
        """The choose call for the audit (none was sent when there was nothing to offer)."""
        if started is None:
            return {"calls": 0}
        return {
            **usage.as_dict(),
            "calls": 1,
            "error": error,
            "prompt": f"{self.template.key}@{self.template.digest}",
            "ms": round((time.perf_counter() - started) * 1000, 1),
        }


def _problem(picked: Sequence[str], offered: dict[str, str], most: int) -> str | None:
    """Why the model's ids cannot be used, or None: each offered, none twice, at most ``most``."""
    if any(f not in offered for f in picked):
        return "unknown id"
    if len(set(picked)) != len(picked):
        return "repeated id"
    if len(picked) > most:
        return f"too many ({len(picked)} > {most})"
    return None
