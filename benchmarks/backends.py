"""Which LLM a benchmark runs with: none (rules), the echo model, or the configured endpoint.

``echo`` starts the loopback OpenAI-compatible server of testkit/fake_openai.py in-process and
drives it with the real openai client, so the whole request path is the production one and
only the model is replaced by the worst possible one: a model that repeats its prompt.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Literal

from epmem.llm.base import LLM

Backend = Literal["rules", "echo", "openai"]
BACKENDS: tuple[str, ...] = ("rules", "echo", "openai")


@asynccontextmanager
async def bench_llm(backend: str, timeout_s: float = 10.0) -> AsyncIterator[LLM | None]:
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}: use {', '.join(BACKENDS)}")
    if backend == "rules":
        yield None
        return
    from epmem.llm.openai_backend import OpenAIConfig, OpenAILLM

    if backend == "openai":
        from bot.config import Settings
        from bot.runtime import make_llm

        settings = Settings().model_copy(update={"llm_backend": "openai"})
        llm = make_llm(settings)
        assert llm is not None
        try:
            yield llm
        finally:
            await llm.aclose()
        return
    from testkit.fake_openai import FakeOpenAI

    async with FakeOpenAI(model="echo") as fake:
        fake.set_echo()
        fake.keep_requests = False
        model = OpenAILLM(OpenAIConfig(base_url=fake.base_url, api_key=None, model="echo",
                                       timeout_s=timeout_s, max_retries=0))
        try:
            yield model
        finally:
            await model.aclose()
