"""Issue 39: a third language is one module and one data file (CONTRIBUTING.md, "Adding a
language"). A toy language written in runes is registered as that walk-through says: a
question in it is detected as it, read with its question kinds and its relevance settings
(its own data file, extending English's), and deflected in its own words, through the real
agent; unregistering it gives every question back to English."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from bot.config import Settings
from bot.runtime import Runtime
from connectors.base import Inbound
from epmem.language import (
    ENGLISH,
    LanguageSpec,
    QuestionKind,
    choose,
    detect,
    load_settings,
    register,
    registered,
    say,
    unregister,
)
from epmem.memory.facts import Fact
from epmem.memory.recall import Recalled, RecalledEvent
from epmem.policy.model import Policy
from epmem.reply.projection import FactDecision, Projection
from epmem.reply.relevance import Relevance, question_kind
from testkit.house import shared_embedder

#: "when is Sam back?", in runes.
QUESTION = "ᚻᚹᛖᚾ ᛁᛋ ᛋᚪᛗ ᛒᚪᚳ?"
DEFLECTION = "ᚾᛟ ᚹᛟᚱᛞ. {owner} ᚹᛁᛚ ᚻᛖᚪᚱ."
SETTINGS = """\
provenance:
  tool: written by hand for this test
  commit: '0000000'
  sets: [none]
extends: en
settings:
  # the most facts one reply tells
  max_facts: 1
"""


def _runic_kind(question: str) -> QuestionKind:
    return "when" if "ᚻᚹᛖᚾ" in question else "yesno"


def _runic(folder: Path) -> LanguageSpec:
    """What the walk-through's module holds: detection, kinds, rewriting, parts, settings, phrases."""
    (folder / "relevance-rn.yaml").write_text(SETTINGS, encoding="utf-8")
    return LanguageSpec(
        code="rn",
        name="Runic",
        claims=lambda text: any("\u16a0" <= ch <= "\u16f8" for ch in text),
        kind=_runic_kind,
        addressed_to=lambda question, owner: question,
        parts=lambda question, limit: [question.strip()],
        relevance=load_settings("rn", folder),
        phrases={"deflection": DEFLECTION},
        priority=20,
    )


@pytest.fixture
def runic(tmp_path: Path) -> Iterator[LanguageSpec]:
    spec = _runic(tmp_path)
    register(spec)
    try:
        yield spec
    finally:
        unregister("rn")


class Sure:
    """A reranker sure that every fact answers."""

    name = "sure"

    def score(self, question: str, texts: Sequence[str], events: Sequence[str] | None = None) -> np.ndarray:
        return np.full(len(texts), 5.0, dtype=np.float32)


def _two_events() -> tuple[list[RecalledEvent], Projection]:
    facts = [
        Fact(id="f1", text="Sam is back on Monday.", event_id="e1", category="daily_life", level=3, state="owner-set"),
        Fact(
            id="f2", text="Sam's flight lands at 6.", event_id="e2", category="daily_life", level=3, state="owner-set"
        ),
    ]
    events = [RecalledEvent(f.event_id, 0.8, (Recalled(f, 0.8),)) for f in facts]
    return events, Projection(tuple(FactDecision(f, 0.8, True, (), used=True) for f in facts))


def test_a_registered_language_is_detected_and_read_its_own_way(runic: LanguageSpec) -> None:
    assert registered() == ("en", "zh", "rn")
    assert detect(QUESTION) == "rn" and choose(QUESTION) == "rn"
    assert question_kind(QUESTION) == "when"
    assert Relevance().config_for(QUESTION) is runic.relevance
    assert runic.relevance.max_facts == 1 and runic.relevance.floor == ENGLISH.relevance.floor  # extends English
    assert say("deflection", choose(QUESTION), owner="Sam") == "ᚾᛟ ᚹᛟᚱᛞ. Sam ᚹᛁᛚ ᚻᛖᚪᚱ."
    assert say("share", "rn", body="x") == "Here's what I can share: x"  # a phrase it lacks: English
    events, proj = _two_events()
    assert Relevance(None, Sure()).choose(QUESTION, events, proj).chosen == ("f1",)  # its max_facts


def test_unregistering_gives_the_question_back_to_english(tmp_path: Path) -> None:
    register(_runic(tmp_path))
    unregister("rn")
    assert registered() == ("en", "zh")
    assert detect(QUESTION) is None and choose(QUESTION) == "en"
    assert question_kind(QUESTION) == "what"  # English reads no English word in it
    assert Relevance().config_for(QUESTION) is ENGLISH.relevance
    assert (
        say("deflection", choose(QUESTION), owner="Sam")
        == "Sorry, I can't help with that. I'll let Sam know you asked."
    )
    events, proj = _two_events()
    assert Relevance(None, Sure()).choose(QUESTION, events, proj).chosen == ("f1", "f2")
    with pytest.raises(ValueError, match="default language"):
        unregister("en")


def _ask(text: str) -> Inbound:
    return Inbound(
        platform="console",
        chat_id="c-stranger",
        chat_kind="direct",
        sender="console:stranger",
        text=text,
        audience=("console:stranger",),
    )  # type: ignore[arg-type]


async def test_the_agent_deflects_in_the_registered_language(tmp_path: Path) -> None:
    policy = Policy.model_validate(
        {"owner": {"name": "Sam"}, "categories": {"daily_life": {"level": 3}}, "default_category": "daily_life"}
    )
    rt = await Runtime.open(Settings(data_dir=tmp_path / "data"), policy=policy, embedder=shared_embedder())
    try:
        spec = _runic(tmp_path)
        register(spec)
        try:
            assert (await rt.agent.handle(_ask(QUESTION))).text == "ᚾᛟ ᚹᛟᚱᛞ. Sam ᚹᛁᛚ ᚻᛖᚪᚱ."
        finally:
            unregister("rn")
        assert (await rt.agent.handle(_ask(QUESTION))).text == (
            "Sorry, I can't help with that. I'll let Sam know you asked."
        )
    finally:
        await rt.close()
