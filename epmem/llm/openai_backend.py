"""The ``openai`` backend: any OpenAI-compatible chat-completions endpoint.

OpenAI, DeepSeek, vLLM, Ollama, llama.cpp server... through the openai package. Everything that
can go wrong becomes :class:`LLMError` (see base.py) so callers can fail closed:

=====================================  ==========================
what happened                          ``LLMError.kind``
=====================================  ==========================
client timeout / overall guard         ``timeout``
HTTP status error                      ``http`` (detail: the status code)
connection refused / reset             ``http`` (detail: ``connection``)
refusal, unparsable or invalid output  ``invalid``
no text (``text()`` only)              ``empty``
=====================================  ==========================

Logs carry task, model, latency, token counts and outcome. Never the api key, never message
contents, never the model's output (it is private data), never server error messages (they
may quote the input).
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import openai
import structlog
from pydantic import BaseModel, ValidationError

from epmem.llm.base import Called, CallUsage, LLMError, LLMUsage, PromptMessage, T

DEFAULT_BASE_URL = "https://api.openai.com/v1"

StructuredOutput = Literal["json_schema", "json_object", "json_object_schema", "off"]
STRUCTURED_OUTPUTS: tuple[str, ...] = ("json_schema", "json_object", "json_object_schema", "off")


@dataclass(frozen=True, slots=True)
class OpenAIConfig:
    """Explicit configuration; nothing is read from ``OPENAI_*`` environment variables.

    ``base_url=None`` means the official OpenAI endpoint (the openai package itself would fall
    back to ``$OPENAI_BASE_URL``; we do not). ``api_key=None`` sends ``"not-needed"``, which
    self-hosted servers (vLLM, Ollama, llama.cpp) accept.

    ``structured_output`` picks the ``response_format`` sent by :meth:`OpenAILLM.structured`:
    ``json_schema`` (default; OpenAI, vLLM, Ollama), ``json_object`` (endpoints that only know
    JSON mode, e.g. DeepSeek), ``json_object_schema`` (JSON mode with the schema beside it, which
    llama-cpp-python's server turns into a grammar: it answers ``json_schema`` with HTTP 500) or
    ``off`` (none; the prompt alone asks for JSON). The answer is validated with pydantic in
    every case.
    """

    base_url: str | None
    api_key: str | None = field(repr=False)
    model: str
    timeout_s: float = 20.0
    max_retries: int = 1
    temperature: float = 0.0
    max_output_tokens: int = 800
    structured_output: StructuredOutput = "json_schema"

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("OpenAIConfig.model is required")
        if self.timeout_s <= 0:
            raise ValueError("OpenAIConfig.timeout_s must be > 0")
        if self.max_retries < 0:
            raise ValueError("OpenAIConfig.max_retries must be >= 0")
        if self.max_output_tokens <= 0:
            raise ValueError("OpenAIConfig.max_output_tokens must be > 0")
        if self.structured_output not in STRUCTURED_OUTPUTS:
            raise ValueError(f"unknown structured_output {self.structured_output!r}")

    @property
    def guard_s(self) -> float:
        """Hard ceiling for one call, retries included: the call can never hang past this."""
        return self.timeout_s * (self.max_retries + 1) + 1.0


_THINK_RE = re.compile(r"^\s*<think>.*?</think>\s*", re.DOTALL | re.IGNORECASE)
_FENCE_WHOLE_RE = re.compile(r"^\s*```[ \t]*(?:json|JSON|json5)?[ \t]*\n?(.*?)\n?[ \t]*```\s*$", re.DOTALL)
_FENCE_ANY_RE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n(.*?)\n[ \t]*```", re.DOTALL)
_SCHEMA_NAME_RE = re.compile(r"[^a-zA-Z0-9_-]")


def strip_reasoning(text: str) -> str:
    """Drop a leading ``<think>...</think>`` block (DeepSeek-R1 / Qwen3 style reasoning models)."""
    return _THINK_RE.sub("", text, count=1)


def extract_json_text(text: str) -> str:
    """The JSON part of a model answer: strips reasoning and ```json fences."""
    text = strip_reasoning(text).strip()
    whole = _FENCE_WHOLE_RE.match(text)
    if whole:
        return whole.group(1).strip()
    if text[:1] not in ("{", "["):
        inner = _FENCE_ANY_RE.search(text)  # "Here is the JSON:\n```json\n{...}\n```"
        if inner:
            return inner.group(1).strip()
    return text


def _schema_name(schema: type[BaseModel]) -> str:
    return _SCHEMA_NAME_RE.sub("_", schema.__name__)[:64] or "output"


def _validation_summary(err: ValidationError) -> str:
    """Where validation failed, without echoing the (private) input values."""
    parts = []
    for e in err.errors(include_url=False, include_input=False, include_context=False)[:5]:
        loc = ".".join(str(p) for p in e.get("loc", ())) or "<root>"
        parts.append(f"{loc}: {e.get('type', 'error')}")
    more = err.error_count() - len(parts)
    if more > 0:
        parts.append(f"+{more} more")
    return "; ".join(parts)


class OpenAILLM:
    """Implements :class:`epmem.llm.base.LLM` over ``openai.AsyncOpenAI``."""

    name = "openai"

    def __init__(self, config: OpenAIConfig, *, http_client: Any | None = None) -> None:
        self.config = config
        self.model = config.model
        self.usage = LLMUsage()
        kwargs: dict[str, Any] = {}
        if http_client is not None:  # an httpx2.AsyncClient (tests, custom transports)
            kwargs["http_client"] = http_client
        self._client = openai.AsyncOpenAI(
            base_url=config.base_url or DEFAULT_BASE_URL,
            api_key=config.api_key or "not-needed",
            timeout=config.timeout_s,
            max_retries=config.max_retries,
            **kwargs,
        )

    def __repr__(self) -> str:
        return f"OpenAILLM(model={self.model!r}, base_url={self.config.base_url!r})"

    async def aclose(self) -> None:
        await self._client.close()

    async def __aenter__(self) -> OpenAILLM:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ----- the LLM protocol ----------------------------------------------------------------

    async def structured(self, task: str, messages: list[PromptMessage], schema: type[T]) -> T:
        return (await self.structured_call(task, messages, schema)).value

    async def text(self, task: str, messages: list[PromptMessage]) -> str:
        return (await self.text_call(task, messages)).value

    async def structured_call(self, task: str, messages: list[PromptMessage], schema: type[T]) -> Called[T]:
        response_format: dict[str, Any] | None
        mode = self.config.structured_output
        if mode == "json_schema":
            response_format = {
                "type": "json_schema",
                "json_schema": {
                    "name": _schema_name(schema),
                    "schema": schema.model_json_schema(),
                    # strict mode rejects many pydantic schemas (optional fields, defaults,
                    # free dicts); we validate the answer ourselves instead.
                    "strict": False,
                },
            }
        elif mode == "json_object":
            response_format = {"type": "json_object"}
        elif mode == "json_object_schema":
            response_format = {"type": "json_object", "schema": schema.model_json_schema()}
        else:
            response_format = None

        started = time.perf_counter()
        content, usage, finish = await self._complete(task, messages, response_format, started, empty_kind="invalid")
        # a length cut-off usually means max_output_tokens is too small for this task
        truncated = " (truncated: finish_reason=length)" if finish == "length" else ""
        try:
            result = schema.model_validate_json(extract_json_text(content))
        except ValidationError as err:
            detail = f"{schema.__name__}: {_validation_summary(err)}{truncated}"
            raise self._fail(task, started, usage, LLMError("invalid", detail)) from None
        self._log_call(task, started, usage, "ok")
        return Called(result, CallUsage(1, *usage))

    async def text_call(self, task: str, messages: list[PromptMessage], max_tokens: int | None = None) -> Called[str]:
        started = time.perf_counter()
        content, usage, finish = await self._complete(
            task, messages, None, started, empty_kind="empty", max_tokens=max_tokens
        )
        content = strip_reasoning(content).strip()
        if not content:
            raise self._fail(task, started, usage, LLMError("empty", "empty answer"))
        self._log_call(task, started, usage, "ok")
        return Called(content, CallUsage(1, *usage), finish)

    # ----- internals -----------------------------------------------------------------------

    async def _complete(
        self,
        task: str,
        messages: list[PromptMessage],
        response_format: dict[str, Any] | None,
        started: float,
        *,
        empty_kind: str,
        max_tokens: int | None = None,
    ) -> tuple[str, tuple[int, int], str | None]:
        """One chat completion; returns (content, (prompt_tokens, completion_tokens), finish_reason).

        Records usage as soon as a response arrives; raises LLMError (failure counted) otherwise
        or when the response carries no usable content.
        """
        if not messages:
            raise self._fail(task, started, None, LLMError("invalid", "no messages"))
        params: dict[str, Any] = {
            "model": self.config.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "temperature": self.config.temperature,
            "max_tokens": max_tokens or self.config.max_output_tokens,
        }
        if response_format is not None:
            params["response_format"] = response_format

        guard = self.config.guard_s
        try:
            response = await asyncio.wait_for(self._client.chat.completions.create(**params), timeout=guard)
        except TimeoutError:
            error = LLMError("timeout", f"no answer within {guard:g} s")
            raise self._fail(task, started, None, error) from None
        except openai.APITimeoutError:
            raise self._fail(task, started, None, LLMError("timeout", "request timed out")) from None
        except openai.APIStatusError as err:
            raise self._fail(
                task, started, None, LLMError("http", str(err.status_code)), status=err.status_code
            ) from None
        except openai.APIResponseValidationError as err:
            raise self._fail(
                task, started, None, LLMError("invalid", f"malformed API response (HTTP {err.status_code})")
            ) from None
        except openai.APIConnectionError:
            raise self._fail(task, started, None, LLMError("http", "connection")) from None
        except openai.OpenAIError as err:
            raise self._fail(task, started, None, LLMError("http", type(err).__name__)) from None

        raw_usage = getattr(response, "usage", None)
        usage = (
            int(getattr(raw_usage, "prompt_tokens", 0) or 0),
            int(getattr(raw_usage, "completion_tokens", 0) or 0),
        )
        self.usage.record(task, *usage)

        choices = getattr(response, "choices", None) or []
        if not choices:
            raise self._fail(task, started, usage, LLMError(empty_kind, "no choices"))
        choice = choices[0]
        message = getattr(choice, "message", None)
        refusal = getattr(message, "refusal", None)
        if refusal:
            raise self._fail(task, started, usage, LLMError("invalid", "refusal"))
        if getattr(choice, "finish_reason", None) == "content_filter":
            raise self._fail(task, started, usage, LLMError("invalid", "content filter"))
        finish_reason = getattr(choice, "finish_reason", None)
        content = getattr(message, "content", None)
        if not isinstance(content, str) or not content.strip():
            error = LLMError(empty_kind, f"no content (finish_reason={finish_reason})")
            raise self._fail(task, started, usage, error)
        return content, usage, finish_reason

    def _fail(
        self,
        task: str,
        started: float,
        usage: tuple[int, int] | None,
        error: LLMError,
        *,
        status: int | None = None,
    ) -> LLMError:
        self.usage.failures += 1
        if usage is not None:
            error.usage = CallUsage(1, *usage)
        self._log_call(task, started, usage, error.kind, status=status)
        return error

    def _log_call(
        self,
        task: str,
        started: float,
        usage: tuple[int, int] | None,
        outcome: str,
        *,
        status: int | None = None,
    ) -> None:
        event: dict[str, Any] = {
            "task": task,
            "model": self.config.model,
            "latency_ms": round((time.perf_counter() - started) * 1000, 1),
            "prompt_tokens": usage[0] if usage else 0,
            "completion_tokens": usage[1] if usage else 0,
            "outcome": outcome,
        }
        if status is not None:
            event["status"] = status
        # fetched per call, not cached: a logger bound before structlog is (re)configured, or
        # before capture_logs() in a test, would keep the old processors.
        log = structlog.get_logger("epmem.llm")
        if outcome == "ok":
            log.info("llm.call", **event)
        else:
            log.warning("llm.call", **event)
