"""What the scenario benchmark counts about who chose a reply's facts, and what reached a prompt.

With the model choosing (``--backend choose:RULE``, or ``openai`` with EPMEM_MODEL_CHOOSES), each
reply's audit record says who chose (``relevance.chooser``: ``model`` or ``rules``) and why the
model's choice was not used (``relevance.fallback``); counted here: how often the model was
asked, how often its choice was used, how often it agreed with the rules step, how often the
composite rule held part of it back, and the fallbacks by reason.

With every backend: ``composite_violations``, replies whose disclosed facts the composite rule
denies to one of the readers (judged again here with the delegate's calculus over the stored
facts; ``benchmarks.tools.check_replies`` is the independent check with a calculus of its own),
and, with a loopback model, ``prompt_leaks``: (question, asker) turns where any prompt the model
was sent (``choose`` and ``reply``) carried the canary of a gold fact some reader may not know.
A canary the asker wrote in the question, or that a fact every reader may know also contains,
reveals nothing and is not counted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from epmem.policy.calculus import STRANGER, Composite
from epmem.policy.model import STRANGER_ID
from epmem.scenario import Scenario
from testkit.fake_openai import FakeOpenAI, message_text

from bot.runtime import Runtime


@dataclass
class ChoiceTally:
    #: replies whose record names a chooser (the model was configured to choose).
    replies: int = 0
    #: of those, the replies for which the model was asked (one ``choose`` call each).
    asked: int = 0
    #: the model's choice was used; and it chose the same facts as the rules step.
    model: int = 0
    agreed: int = 0
    #: replies where the composite rule held back part of the model's choice.
    held_back: int = 0
    fallbacks: Counter[str] = field(default_factory=Counter)
    composite_violations: int = 0
    prompt_leaks: int = 0

    def add(self, other: ChoiceTally) -> None:
        for name in ("replies", "asked", "model", "agreed", "held_back", "composite_violations", "prompt_leaks"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.fallbacks.update(other.fallbacks)

    def metrics(self) -> dict[str, Any]:
        return {
            "replies": self.replies,
            "asked": self.asked,
            "model_used": self.model,
            "fell_back": sum(n for why, n in self.fallbacks.items() if why != "nothing to offer"),
            "agreed_with_rules": self.agreed,
            "held_back_by_composite": self.held_back,
            "fallbacks": dict(sorted(self.fallbacks.items())),
            "composite_violations": self.composite_violations,
            "prompt_leaks": self.prompt_leaks,
        }


def count_choice(body: dict[str, Any], tally: ChoiceTally) -> str | None:
    """Count one reply's chooser; returns a budget problem (more than one ``choose`` call, or a
    call with nothing to offer), else None."""
    relevance = body.get("relevance") or {}
    if "chooser" not in relevance:
        return None
    tally.replies += 1
    calls = int((relevance.get("model") or {}).get("calls", 0))
    tally.asked += calls > 0
    if relevance["chooser"] == "model":
        tally.model += 1
        tally.agreed += set(relevance.get("chosen", ())) == set(relevance.get("rules_chosen", ()))
        tally.held_back += bool(body.get("held_back"))
    else:
        tally.fallbacks[str(relevance.get("fallback"))] += 1
    if calls != (1 if relevance.get("offered") else 0):
        return f"{calls} choose calls with {len(relevance.get('offered', ()))} facts offered"
    return None


async def breaks_composite(runtime: Runtime, body: dict[str, Any], members: Sequence[str]) -> list[str]:
    """The readers the composite rule denies this reply's disclosed facts to (the delegate's own
    calculus, with the owner's exceptions, over the facts as stored)."""
    rulebook = await runtime.engine.rulebook()
    facts = [f for fid in body.get("disclosed", ()) for f in [await runtime.memory.get(str(fid))] if f is not None]
    if not facts:
        return []
    composite = Composite.of([rulebook.gate(f) for f in facts])
    return [m for m in members if not composite.allows(STRANGER if m == STRANGER_ID else rulebook.recipient(m))]


def prompts_sent(fake: FakeOpenAI) -> list[str]:
    """The prompts the loopback model was sent since the last call (and forgets them)."""
    texts = [
        "\n\n".join(message_text(m.get("content")) for m in r.get("messages") or [] if isinstance(m, dict))
        for r in fake.requests
    ]
    fake.requests.clear()
    fake.request_headers.clear()
    fake.offered.clear()
    return texts


def denied_in_prompts(
    scenario: Scenario, prompts: Sequence[str], question: str, allowed: Callable[[str], bool]
) -> list[str]:
    """Gold facts some reader may not know (``allowed(fid)`` False) whose canary is in a prompt;
    a canary in the question or in a fact every reader may know is not distinctive."""
    known = [question.casefold(), *(f.text.casefold() for f in scenario.facts if allowed(f.id))]
    denied = {
        f.id: f.canary.casefold()
        for f in scenario.facts
        if not allowed(f.id) and not any(f.canary.casefold() in k for k in known)
    }
    return [fid for fid, c in denied.items() if any(c in p.casefold() for p in prompts)]


def keep_prompts(llm: object) -> None:
    """Have a loopback model keep the prompts it is sent (:func:`check_turn` reads and forgets
    them after each turn, so the log stays short)."""
    fake = getattr(llm, "echo_server", None)
    if isinstance(fake, FakeOpenAI):
        fake.keep_requests = True
        prompts_sent(fake)


async def check_turn(
    runtime: Runtime,
    scenario: Scenario,
    audits: Sequence[str | None],
    members: Sequence[str],
    question: str,
    allowed: Callable[[str], bool],
    tally: ChoiceTally,
) -> list[str]:
    """One (question, asker) turn's replies (follow-ups included) against the composite rule,
    and the prompts the loopback model was sent for it; returns the failures to report."""
    failures: list[str] = []
    where = f"{scenario.name}: {question[:60]!r} {'+'.join(members)}"
    for audit in audits:
        record = await runtime.audit.get(audit or "")
        denied = await breaks_composite(runtime, record.body, members) if record is not None else []
        if record is not None and denied:
            tally.composite_violations += 1
            failures.append(f"{where}: COMPOSITE {record.body.get('disclosed')} denied to {denied}")
    fake = getattr(runtime.llm, "echo_server", None)
    if isinstance(fake, FakeOpenAI) and fake.keep_requests:
        shown = denied_in_prompts(scenario, prompts_sent(fake), question, allowed)
        if shown:
            tally.prompt_leaks += 1
            failures.append(f"{where}: PROMPT LEAK: the model was shown {shown}")
    return failures
