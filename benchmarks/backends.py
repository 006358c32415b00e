"""Which LLM a benchmark runs with: none (rules), the echo model, a broken model, or the
configured endpoint.

``echo`` starts the loopback OpenAI-compatible server of testkit/fake_openai.py in-process and
drives it with the real openai client, so the whole request path is the production one and
only the model is replaced by the worst possible one for privacy: a model that repeats its
prompt (the model carries the server as ``echo_server``, so a benchmark can check what it said).
``misbehave:KIND`` is the same server answering like a broken model (repeat, echo, wrap, json,
empty, foreign, stall; see testkit.fake_openai.MISBEHAVIOURS): no reply may then fail the sanity rules.
``choose:RULE`` is the echo model with the model choosing the facts (EPMEM_MODEL_CHOOSES): it
answers each ``choose`` prompt by a stated rule over the facts offered (``all``: every id,
``first``: the first, ``none``: none, ``invent``: an id not offered; testkit.fake_openai.CHOOSE_RULES)
and echoes every other prompt. The other backends leave the choice to the rules relevance step,
except ``openai``, which follows EPMEM_MODEL_CHOOSES (on by default).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Literal

from epmem.llm.base import LLM

Backend = Literal["rules", "echo", "openai"]
BACKENDS: tuple[str, ...] = ("rules", "echo", "openai")


def known_backend(backend: str) -> bool:
    from testkit.fake_openai import CHOOSE_RULES, MISBEHAVIOURS

    kind, _, rest = backend.partition(":")
    if kind == "misbehave":
        return rest in MISBEHAVIOURS
    if kind == "choose":
        return rest in CHOOSE_RULES
    return backend in BACKENDS


def model_chooses(backend: str) -> bool:
    """Whether the model chooses the facts with this backend (see the module's doc)."""
    if backend == "openai":
        from bot.config import Settings

        return Settings().model_chooses
    return backend.startswith("choose:")


@asynccontextmanager
async def bench_llm(backend: str, timeout_s: float = 10.0) -> AsyncIterator[LLM | None]:
    if not known_backend(backend):
        raise ValueError(f"unknown backend {backend!r}: use {', '.join(BACKENDS)}, misbehave:KIND or choose:RULE")
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
        if backend.startswith("choose:"):
            fake.set_chooser(backend.removeprefix("choose:"))
        fake.keep_requests = False
        model = OpenAILLM(
            OpenAIConfig(base_url=fake.base_url, api_key=None, model="echo", timeout_s=timeout_s, max_retries=0)
        )
        setattr(model, "echo_server", fake)  # noqa: B010 (a tag mypy does not know of)
        try:
            yield model
        finally:
            await model.aclose()
