"""LLM access: one interface (base.py), the OpenAI-compatible backend, the prompts (prompts.py,
the values they carry in prompt_fields.py) and the structured answers (outputs.py).

``OpenAILLM`` / ``OpenAIConfig`` are loaded lazily: importing the openai package costs about
half a second, which code that only needs ``PromptMessage`` or ``LLMError`` (the rules backend, the
tests) should not pay.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from epmem.llm.base import LLM, Called, CallUsage, LLMError, LLMUsage, PromptMessage, Role, T
from epmem.llm.outputs import ChosenFacts, ExtractedFact, ExtractionResult
from epmem.llm.prompt_fields import neutralize
from epmem.llm.prompts import PROMPTS, PromptTemplate, get_template, render

if TYPE_CHECKING:
    from epmem.llm.openai_backend import OpenAIConfig, OpenAILLM

_LAZY = {"OpenAIConfig", "OpenAILLM"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from epmem.llm import openai_backend

        return getattr(openai_backend, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "LLM",
    "Called",
    "CallUsage",
    "ChosenFacts",
    "PROMPTS",
    "ExtractedFact",
    "ExtractionResult",
    "LLMError",
    "LLMUsage",
    "PromptMessage",
    "OpenAIConfig",
    "OpenAILLM",
    "PromptTemplate",
    "Role",
    "T",
    "get_template",
    "neutralize",
    "render",
]
