"""One interface for every LLM task, whatever serves it.

Callers never see transport errors: anything that goes wrong (timeout, HTTP error, refusal,
output that does not validate) surfaces as :class:`LLMError`, and every caller has a
fail-closed answer for it (a fact stays pending, a reply falls back to the rules composer).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel

from epmem.errors import EpmemError

Role = Literal["system", "user", "assistant"]
T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class PromptMessage:
    role: Role
    content: str


@dataclass(slots=True)
class LLMUsage:
    """Running totals; the benchmarks read these to prove the one-call budgets."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failures: int = 0
    by_task: dict[str, int] = field(default_factory=dict)

    def record(self, task: str, prompt_tokens: int, completion_tokens: int) -> None:
        self.calls += 1
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        self.by_task[task] = self.by_task.get(task, 0) + 1

    def as_dict(self) -> dict[str, int]:
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }


@dataclass(frozen=True, slots=True)
class CallUsage:
    """What one call cost: 1 call when a response came back (whatever its content), else 0."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"calls": self.calls, "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}


V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class Called(Generic[V]):
    """A call's answer with its own usage, so concurrent callers never read each other's."""

    value: V
    usage: CallUsage
    #: why the model stopped (``stop``, ``length``...), when the endpoint said.
    finish_reason: str | None = None


class LLMError(EpmemError, RuntimeError):
    """The model could not give a usable answer; ``kind`` says why (timeout, http, invalid...).

    ``usage`` is what the failed call still cost (a malformed answer used tokens)."""

    def __init__(self, kind: str, detail: str, usage: CallUsage | None = None) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail
        self.usage = usage or CallUsage()


class LLM(Protocol):
    name: str
    usage: LLMUsage

    async def structured(self, task: str, messages: list[PromptMessage], schema: type[T]) -> T:
        """One call whose answer must validate against ``schema``; raises LLMError otherwise."""
        ...

    async def text(self, task: str, messages: list[PromptMessage]) -> str:
        """One call returning plain text; raises LLMError on any failure or empty output."""
        ...

    async def structured_call(self, task: str, messages: list[PromptMessage], schema: type[T]) -> Called[T]:
        """:meth:`structured` with the call's own usage."""
        ...

    async def text_call(self, task: str, messages: list[PromptMessage], max_tokens: int | None = None) -> Called[str]:
        """:meth:`text` with the call's own usage and finish reason; ``max_tokens`` overrides
        the configured output limit for this call (a reply is shorter than an extraction)."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...
