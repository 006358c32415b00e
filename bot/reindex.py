"""``epmem reindex``: rebuild every vector with the configured embedder.

The data folder records which embedder built each collection, and opening it with another one
is refused (vectors from two models cannot be compared). This command is the way forward: it
reads this owner's turns, sessions and facts with the old settings, drops the collections, and
writes everything again with the new embedder. The payloads carry everything needed.
"""

from __future__ import annotations

from epmem.memory import (
    ACROSS,
    FACTS,
    SESSIONS,
    TURNS,
    Conversations,
    Fact,
    FactMemory,
    SubjectNormalizer,
    sessions_from_payloads,
)
from epmem.policy import category_profiles, load_policy
from epmem.store import Hit, VectorStore

from bot.config import Settings
from bot.owner_policy import resolve_policy
from bot.runtime import embedder_from_settings, make_store, owner_names


async def _read(store: VectorStore, name: str) -> list[Hit]:
    meta = await store.recorded(name)
    if meta is None:
        return []
    await store.ensure_collection(name, int(meta["dim"]), str(meta["embedder"]))
    return await store.scroll(name)


async def reindex_all(settings: Settings) -> dict[str, int]:
    policy = load_policy(resolve_policy(settings))
    embedder = embedder_from_settings(settings)
    store = make_store(settings)
    try:
        turns, sessions, facts = await _read(store, TURNS), await _read(store, SESSIONS), await _read(store, FACTS)
        rebuilt = sessions_from_payloads(sessions, turns)
        fact_models = [
            Fact.model_validate({k: v for k, v in h.payload.items() if k in Fact.model_fields}) for h in facts
        ]
        for name in (TURNS, SESSIONS, FACTS, ACROSS):
            await store.drop_collection(name)
        conversations = await Conversations(store, embedder).open()
        await conversations.add(rebuilt)
        memory = await FactMemory(
            store, embedder, SubjectNormalizer(owner_names(policy)), categories=category_profiles(policy.categories)
        ).open()
        await memory.add(fact_models)
        await store.compact()
        return {"sessions": len(rebuilt), "turns": sum(len(s.turns) for s in rebuilt), "facts": len(fact_models)}
    finally:
        await store.close()
