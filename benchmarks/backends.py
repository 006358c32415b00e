"""Which LLM a benchmark runs with: none (rules), the echo model, a broken model, or the
configured endpoint.

``echo`` starts the loopback OpenAI-compatible server of testkit/fake_openai.py in-process and
drives it with the real openai client, so the whole request path is the production one and
only the model is replaced by the worst possible one for privacy: a model that repeats its
prompt (the model carries the server as ``echo_server``, so a benchmark can check what it said).
``misbehave:KIND`` is the same server answering like a broken model (repeat, echo, wrap, json,
empty, foreign, stall; see testkit.fake_openai.MISBEHAVIOURS): no reply may then fail the sanity rules.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Literal

from epmem.llm.base import LLM

Backend = Literal["rules", "echo", "openai"]
BACKENDS: tuple[str, ...] = ("rules", "echo", "openai")


def known_backend(backend: str) -> bool:
    from testkit.fake_openai import MISBEHAVIOURS

    kind = backend.removeprefix("misbehave:")
    return backend in BACKENDS or (backend.startswith("misbehave:") and kind in MISBEHAVIOURS)


@asynccontextmanager
async def bench_llm(backend: str, timeout_s: float = 10.0) -> AsyncIterator[LLM | None]:
    if not known_backend(backend):
        raise ValueError(f"unknown backend {backend!r}: use {', '.join(BACKENDS)} or misbehave:KIND")
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
        if backend.startswith("misbehave:"):
            fake.set_misbehaviour(backend.removeprefix("misbehave:"))
        else:
            fake.set_echo()
        fake.keep_requests = False
        model = OpenAILLM(
            OpenAIConfig(base_url=fake.base_url, api_key=None, model="echo", timeout_s=timeout_s, max_retries=0)
        )
        setattr(model, "echo_server", fake)  # noqa: B010 (a tag mypy does not know of)
        try:
            yield model
        finally:
            await model.aclose()
