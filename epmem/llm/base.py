"""One interface for every LLM task, whatever serves it.

Callers never see transport errors: anything that goes wrong (timeout, HTTP error, refusal,
output that does not validate) surfaces as :class:`LLMError`, and every caller has a
fail-closed answer for it (a fact stays pending, a reply falls back to the rules composer).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeVar

from pydantic import BaseModel

Role = Literal["system", "user", "assistant"]
T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Message:
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


class LLMError(RuntimeError):
    """The model could not give a usable answer; ``kind`` says why (timeout, http, invalid...)."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


class LLM(Protocol):
    name: str
    usage: LLMUsage

    async def structured(self, task: str, messages: list[Message], schema: type[T]) -> T:
        """One call whose answer must validate against ``schema``; raises LLMError otherwise."""
        ...

    async def text(self, task: str, messages: list[Message]) -> str:
        """One call returning plain text; raises LLMError on any failure or empty output."""
        ...
