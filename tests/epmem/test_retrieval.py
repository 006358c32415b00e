"""Session retrieval: native hybrid ranking, the event-fact score, and their fusion."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from epmem.memory.conversations import Conversations
from epmem.embedding.minilm import default_embedder
from epmem.memory.facts import Fact
from epmem.memory.recall import FactMemory, SubjectNormalizer
from epmem.memory.retrieval import RetrievalConfig, Retriever, fuse, mask_names, rank
from epmem.memory.sessions import Message, build_sessions
from epmem.store.edge import EdgeStore

CHATS = {
    "alex": (
        datetime(2026, 1, 10, tzinfo=UTC),
        ["Did the plumber fix the kitchen sink?", "Yes, he replaced the leaking pipe under it."],
    ),
    "tom": (
        datetime(2026, 2, 14, tzinfo=UTC),
        ["The quarterly roadmap review moved to Thursday.", "Fine, I'll update the launch slides."],
    ),
    "priya": (
        datetime(2026, 3, 20, tzinfo=UTC),
        ["How was the hike in the Alps?", "Beautiful, we reached the glacier hut."],
    ),
    "noor": (datetime(2026, 3, 22, tzinfo=UTC), ["Are you still climbing on Mondays?", "Only when my knee allows it."]),
}


def _messages() -> list[Message]:
    out = []
    for who, (when, lines) in CHATS.items():
        for i, text in enumerate(lines):
            speaker = who if i % 2 == 0 else "owner"
            out.append(
                Message(
                    platform="console",
                    chat_id=f"dm-{who}",
                    chat_kind="direct",
                    msg_id=f"{who}{i}",
                    speaker=speaker,
                    speaker_name=speaker.title(),
                    text=text,
                    time=when + timedelta(minutes=i),
                )
            )
    return out


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[tuple[EdgeStore, Conversations, dict[str, str]]]:
    store = EdgeStore(tmp_path / "qdrant", "owner")
    conversations = await Conversations(store, default_embedder()).open()
    sessions = build_sessions(_messages())
    await conversations.add(sessions)
    yield store, conversations, {s.participants[1]: s.id for s in sessions}
    await store.close()


async def test_hybrid_finds_the_session_and_its_turn(world: tuple[EdgeStore, Conversations, dict[str, str]]) -> None:
    store, conversations, ids = world
    got = await Retriever(store, default_embedder(), conversations).retrieve("who repaired the leaking pipe?")
    assert got.sessions[0].session_id == ids["alex"]
    assert got.turns[0].payload["msg_id"] == "alex1"


async def test_a_named_date_prefers_sessions_of_that_month(
    world: tuple[EdgeStore, Conversations, dict[str, str]],
) -> None:
    store, conversations, ids = world
    retriever = Retriever(store, default_embedder(), conversations)
    got = await retriever.retrieve("What did we talk about in January 2026?")
    assert got.sessions[0].session_id == ids["alex"]


async def test_beta_zero_is_exactly_the_native_ranking(world: tuple[EdgeStore, Conversations, dict[str, str]]) -> None:
    store, conversations, ids = world
    embedder = default_embedder()
    memory = await FactMemory(store, embedder, SubjectNormalizer(["Sam"])).open()
    # a fact that points the event score at the roadmap session
    await memory.add(
        [
            Fact(
                id="f1",
                text="Sam fixed the kitchen sink with the plumber",
                event_id="e1",
                session_id=ids["tom"],
                state="annotated",
                level=2,
            )
        ]
    )
    question = "Who fixed the kitchen sink?"
    native_only = Retriever(store, embedder, conversations, RetrievalConfig(alpha=1.0, beta=0.0))
    native, _, _ = await native_only.native(question)
    got = await native_only.retrieve(question, limit=10)
    assert [s.session_id for s in got.sessions] == rank(native)
    assert all(s.event == 0.0 for s in got.sessions)
    fused = await Retriever(store, embedder, conversations, RetrievalConfig(alpha=0.3, beta=0.7)).retrieve(question)
    assert [s.session_id for s in fused.sessions] != rank(native)  # the facts do move the ranking
    assert fused.sessions[0].session_id == ids["tom"]


@given(
    st.dictionaries(st.text(min_size=1, max_size=4), st.floats(0, 10), min_size=1),
    st.dictionaries(st.text(min_size=1, max_size=4), st.floats(0, 10)),
)
def test_fuse_with_beta_zero_keeps_native_order(native: dict[str, float], event: dict[str, float]) -> None:
    assert rank(fuse(native, event, 1.0, 0.0)) == rank(native)


def test_weights_must_be_a_convex_pair() -> None:
    with pytest.raises(ValueError, match="sum to 1"):
        RetrievalConfig(alpha=0.5, beta=0.6)


@pytest.mark.parametrize(
    ("question", "masked"),
    [
        ("What does Alex's plumber charge?", "What does someone plumber charge?"),
        ("did alex and NOOR meet?", "did someone and someone meet?"),
        ("Alexander called", "Alexander called"),  # whole words only
        ("nothing to mask", "nothing to mask"),
    ],
)
def test_mask_names_replaces_whole_names_and_their_possessive(question: str, masked: str) -> None:
    assert mask_names(question, {"alex", "noor"}) == masked


async def test_speaker_names_are_kept_and_survive_a_reopen(tmp_path: Path) -> None:
    """The dense query masks the speakers' names; a restart must still know them."""
    store = EdgeStore(tmp_path / "qdrant", "owner")
    conversations = await Conversations(store, default_embedder()).open()
    await conversations.add(build_sessions(_messages()))
    assert conversations.speaker_names == {"alex", "tom", "priya", "noor", "owner"}
    assert Retriever(store, default_embedder(), conversations).query_text("Is Priya back?") == "Is someone back?"
    await store.close()
    store = EdgeStore(tmp_path / "qdrant", "owner")
    reopened = await Conversations(store, default_embedder()).open()
    assert reopened.speaker_names == {"alex", "tom", "priya", "noor", "owner"}
    await reopened.clear()
    assert reopened.speaker_names == set()
    await store.close()
