"""The composition root: one policy holder that every reader asks, and nothing wired afterwards."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.runtime import Runtime
from epmem.policy.holder import PolicyHolder, ReadsPolicy
from testkit.house import house_policy, house_runtime
from testkit.runtime import ask


@pytest.fixture
async def house(tmp_path: Path) -> AsyncIterator[Runtime]:
    runtime = await house_runtime(tmp_path / "data")
    try:
        yield runtime
    finally:
        await runtime.close()


def readers(runtime: Runtime) -> dict[str, ReadsPolicy]:
    """Every part that reads the policy, found by walking the built object graph."""
    found: dict[str, ReadsPolicy] = {}
    seen: set[int] = set()

    def walk(name: str, obj: object, depth: int) -> None:
        if id(obj) in seen or depth > 8 or isinstance(obj, (str, bytes, int, float, type)):
            return
        seen.add(id(obj))
        if isinstance(obj, ReadsPolicy):
            found[name] = obj
        attrs = getattr(obj, "__dict__", None) or {
            s: getattr(obj, s) for s in getattr(type(obj), "__slots__", ()) if hasattr(obj, s)
        }
        for key, value in attrs.items():
            walk(f"{name}.{key}", value, depth + 1)

    walk("runtime", runtime, 0)
    return found


async def test_a_refresh_reaches_every_reader(house: Runtime) -> None:
    parts = readers(house)
    assert {type(p).__name__ for p in parts.values()} >= {
        "PrivacyEngine",
        "Directory",
        "Distiller",
        "RulesExtractor",
        "Finalizer",
        "CategoryClassifier",
        "ContactNames",
    }, sorted(parts)
    assert all(p._policy is house.policies for p in parts.values()), [
        n for n, p in parts.items() if p._policy is not house.policies
    ]
    assert "level 2" in ((await house.agent.handle(ask("owner", "/level raj 2"))).text or "")
    for name, part in parts.items():
        assert part.policy.contacts["raj"].level == 2, name
    assert house.owner.directory.resolve("console:raj").recipient.level == 2


def test_a_refresh_may_not_change_the_categories() -> None:
    holder = PolicyHolder(house_policy())
    assert holder.apply({"raj": {"level": 2}}) == [] and holder.current.contacts["raj"].level == 2
    assert holder.base.contacts["raj"].level == 4
    skipped = holder.apply({"nobody": {"level": 2}})
    assert [s.contact for s in skipped] == ["nobody"] and holder.current.contacts["raj"].level == 4


async def test_the_agent_is_complete_as_built(house: Runtime) -> None:
    """Annotation commands, the conversation history and the outbox come with the agent."""
    assert house.agent.owner.conversations is house.conversations
    assert house.memory.sessions is house.retriever
    reply = (await house.agent.handle(ask("owner", "/annotations pending"))).text
    assert reply == "No facts."
    assert (await house.agent.handle(ask("owner", "/reannotate"))).text == (
        "Nothing to retry: the rules backend annotates as it ingests."
    )
