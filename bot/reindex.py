"""``epmem reindex``: rebuild every vector with the configured embedder.

The data folder records which embedder built each collection, and opening it with another one
is refused (vectors from two models cannot be compared). This command is the way forward: it
reads this owner's turns, sessions and facts with the old settings, drops the collections, and
writes everything again with the new embedder. The payloads carry everything needed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from epmem.conversations import SESSIONS, TURNS, Conversations
from epmem.facts import Fact
from epmem.memory import FACTS, FactMemory, SubjectNormalizer, category_profiles
from epmem.policy import load_policy
from epmem.sessions import Session, Turn
from epmem.store.base import Hit, VectorStore

from bot.config import Settings
from bot.runtime import make_embedder, make_store, owner_names


async def _read(store: VectorStore, name: str) -> list[Hit]:
    meta = await store.recorded(name)
    if meta is None:
        return []
    await store.ensure_collection(name, int(meta["dim"]), str(meta["embedder"]))
    return await store.scroll(name)


def _time(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else None


def sessions_from_payloads(session_hits: list[Hit], turn_hits: list[Hit]) -> list[Session]:
    by_session: dict[str, list[Turn]] = {}
    for h in turn_hits:
        p = h.payload
        by_session.setdefault(str(p["session_id"]), []).append(Turn(
            id=h.key, session_id=str(p["session_id"]), index=int(p["index"]), speaker=str(p["speaker"]),
            speaker_name=str(p["speaker_name"]), text=str(p["text"]), time=_time(p.get("time")),
            msg_id=str(p.get("msg_id", "")), reply_to=p.get("reply_to"), edited=bool(p.get("edited")),
        ))
    out = []
    for h in session_hits:
        p = h.payload
        s = Session(id=h.key, platform=str(p["platform"]), chat_id=str(p["chat_id"]), chat_kind=p["chat_kind"],
                    participants=list(p["participants"]), members=list(p["members"]),
                    chat_title=p.get("chat_title"), origin_id=p.get("origin_id"), source=str(p.get("source", "")),
                    summary=str(p.get("summary", "")))
        s.turns = sorted(by_session.get(h.key, []), key=lambda t: t.index)
        out.append(s)
    return out


async def reindex_all(settings: Settings) -> dict[str, int]:
    policy = load_policy(settings.policy_path())
    embedder = make_embedder(settings)
    store = make_store(settings)
    try:
        turns, sessions, facts = await _read(store, TURNS), await _read(store, SESSIONS), await _read(store, FACTS)
        rebuilt = sessions_from_payloads(sessions, turns)
        fact_models = [Fact.model_validate({k: v for k, v in h.payload.items() if k in Fact.model_fields})
                       for h in facts]
        for name in (TURNS, SESSIONS, FACTS):
            await store.drop_collection(name)
        conversations = await Conversations(store, embedder).open()
        await conversations.add(rebuilt)
        memory = await FactMemory(store, embedder, SubjectNormalizer(owner_names(policy)),
                                  categories=category_profiles(policy.categories)).open()
        await memory.add(fact_models)
        await store.compact()
        return {"sessions": len(rebuilt), "turns": sum(len(s.turns) for s in rebuilt), "facts": len(fact_models)}
    finally:
        await store.close()
