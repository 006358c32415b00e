"""Small talk gets small talk, and a request for everything is an open question (real runtime:
Edge store, SQLite audit, the rules responder, Maya Chen's house example)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.runtime import Runtime
from epmem.reply.relevance import question_kind
from epmem.reply.respond import deflection
from epmem.reply.smalltalk import small_talk
from testkit.consulting import open_house
from testkit.quickstart import quickstart_runtime
from testkit.runtime import ask, example, scenario_runtime

GREETINGS = ["hi", "Hello!", "hey there", "Good morning, Maya!", "你好", "早上好"]
THANKS = ["thanks", "Thank you so much!", "谢谢！"]


@pytest.fixture
async def house(tmp_path: Path) -> AsyncIterator[Runtime]:
    runtime, _ = await scenario_runtime(tmp_path / "data", example("house_and_bonus.yaml"))
    try:
        yield runtime
    finally:
        await runtime.close()


def test_only_a_whole_message_of_greeting_or_thanks_is_small_talk() -> None:
    assert all(small_talk(g, ["Maya Chen"]) == "greeting" for g in GREETINGS)
    assert all(small_talk(t) == "thanks" for t in THANKS)
    # a greeting with a question, or anything else, is a question like any other
    for text in ["hi, is Maya moving?", "Hello, how is the house hunt going?", "good", "Is Maya ok?", "hi 5", "你好吗"]:
        assert small_talk(text, ["Maya Chen"]) is None, text


async def test_hi_is_greeted_in_the_owners_name_and_audited_without_facts(house: Runtime) -> None:
    for who in ("leo", "telegram:999"):  # a contact, and a stranger
        out = await house.agent.handle(ask(who, "hi"))
        assert out.text == "Hi! I'm Maya Chen's delegate. Ask me anything, and I'll tell you what I can."
        assert out.text != deflection("Maya Chen") and out.to_owner is None
        record = await house.audit.get(out.audit_id or "")
        assert record is not None and record.kind == "reply"
        assert record.body["reply"] == out.text and record.body["disclosed"] == [] and not record.body["deflected"]
    thanks = await house.agent.handle(ask("leo", "谢谢"))
    assert thanks.text == "不客气！"


async def test_small_talk_opens_no_consultation_and_draws_no_heads_up(tmp_path: Path) -> None:
    house = await open_house(tmp_path / "data", deflection_alert=1)  # undecided facts, consultations on
    try:
        for text in ["hi", "hello", "thanks!", "good morning"]:
            out = await house.ask("grace", text)
            assert out.to_owner is None and not out.actions, text
        assert await house.store.pending() == []
    finally:
        await house.runtime.close()


def test_a_request_for_everything_names_no_topic_so_it_is_an_open_question() -> None:
    for text in [
        "Tell me everything you know about Sam.",
        "What do you know? Everything, please.",
        "Tell me all you know about Lin",
        "tell me all about her",
    ]:
        assert question_kind(text) == "open", text
    assert question_kind("Did Lin get the job?") != "open"


async def test_a_request_for_everything_is_answered_within_the_policy(tmp_path: Path) -> None:
    """Jamie hears what the open question tells Jamie (before: the deflection, read as a plain
    question whose words are near no fact), and nothing Jamie may not know."""
    runtime = await quickstart_runtime(tmp_path / "data")
    try:
        everything = await runtime.agent.handle(ask("jamie", "Tell me everything you know about Sam."))
        news = await runtime.agent.handle(ask("jamie", "What's new with Sam?"))
        assert everything.text != deflection("Sam Rivera")
        told = await runtime.audit.get(everything.audit_id or "")
        open_q = await runtime.audit.get(news.audit_id or "")
        assert told is not None and open_q is not None
        assert told.body["disclosed"] and set(told.body["disclosed"]) <= set(open_q.body["disclosed"])
        assert all(c["allowed"] for c in told.body["candidates"] if c["used"])
    finally:
        await runtime.close()
