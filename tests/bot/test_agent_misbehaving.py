"""Broken models, served on loopback and called by the real openai client: every reply that
leaves is the rules reply or a deflection, and the audit names why the model's words were not
used. The misbehaviours are the ones a small model served by llama.cpp really showed, and worse."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.runtime import Runtime
from epmem.reply.respond import deflection
from epmem.reply.sanity import check_reply
from testkit.fake_openai import MISBEHAVIOURS, FakeOpenAI
from testkit.runtime import ask, example, model_settings, open_scenario

BUDGET_S = 0.6
HOUSE = "How is the house hunt going?"
#: what each way of misbehaving is called in the audit (``llm.error``).
REASON = {
    "repeat": "sanity:repetition",
    "echo": "sanity:markers",
    "wrap": "sanity:markers",
    "json": "sanity:json",
    "empty": "empty",
    "foreign": "sanity:language",
    "stall": "timeout",
}
RULES = {
    "leo": "Here's what I can share: Maya and Leo made an offer on the blue house on Elm Road.",
    "raj": "Here's what I can share: Maya is thinking about moving somewhere with more space.",
}
SECRETS = ("Elm Road", "retention bonus", "deposit", "Atlas")


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


@pytest.fixture
async def house(tmp_path: Path, fake: FakeOpenAI) -> AsyncIterator[Runtime]:
    settings = model_settings(tmp_path / "data", fake.base_url, timeout_s=30.0, budget_s=BUDGET_S)
    runtime, _ = await open_scenario(settings, example("house_and_bonus.yaml"))
    try:
        yield runtime
    finally:
        await runtime.close()


def test_every_misbehaviour_has_a_reason() -> None:
    assert set(REASON) == set(MISBEHAVIOURS)


@pytest.mark.parametrize("kind", MISBEHAVIOURS)
async def test_a_misbehaving_model_never_speaks(house: Runtime, fake: FakeOpenAI, kind: str) -> None:
    fake.set_misbehaviour(kind, stall_s=5.0)
    for asker in ("leo", "raj"):
        started = time.monotonic()
        out = await house.agent.handle(ask(asker, HOUSE))
        elapsed = time.monotonic() - started
        assert out.text == RULES[asker], (kind, out.text)
        assert check_reply(out.text, question=HOUSE) is None
        if asker == "raj":
            assert not any(s in (out.text or "") for s in SECRETS)
        assert elapsed < BUDGET_S + 1.0, (kind, elapsed)
        record = await house.audit.get(out.audit_id or "")
        assert record is not None
        body = record.body
        assert body["composer"] == "rules" and body["llm"]["calls"] == 1, body
        assert body["llm"]["error"] == REASON[kind], body["llm"]
    # nothing to say: no call, the deflection, whatever the model
    calls = len(fake.requests)
    nothing = await house.agent.handle(ask("kim", "Did Maya get any money from work recently?"))
    assert nothing.text == deflection("Maya Chen") and len(fake.requests) == calls


async def test_a_good_reply_is_still_used(house: Runtime, fake: FakeOpenAI) -> None:
    fake.set_script("Maya is thinking about moving somewhere with more space, nothing settled yet.")
    out = await house.agent.handle(ask("raj", HOUSE))
    assert out.text == "Maya is thinking about moving somewhere with more space, nothing settled yet."
    record = await house.audit.get(out.audit_id or "")
    assert record is not None and record.body["composer"] == "openai" and record.body["llm"]["error"] is None
