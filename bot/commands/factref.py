"""Short fact ids for what the owner types: ``b501d4-f2`` for ``b501d4769ecc1189-f2``.

A fact's id is its session's id and its place in it (``SESSION-fN``; a session split by chat
partner reads ``BASE~PARTNER-fN``). The short form is the first 6 characters of the session's id
and the place, shown only where no other fact shares it; any id is accepted whole, and a short
form only when exactly one fact has it (else the owner is asked to type more: never a guess).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from bot.commands.registry import CommandError
from bot.services import OwnerServices

HEAD = 6


def _split(fact_id: str) -> tuple[str, str]:
    session, dash, place = fact_id.rpartition("-")
    return (session, place) if dash else (fact_id, "")


def _short(fact_id: str) -> str:
    session, place = _split(fact_id)
    return f"{session[:HEAD]}-{place}" if place and len(session) > HEAD else fact_id


def _matches(ref: str, fact_id: str) -> bool:
    head, place = _split(ref)
    session, own = _split(fact_id)
    return bool(place) and place == own and len(head) >= 4 and session.startswith(head)


async def _ids(owner: OwnerServices) -> list[str]:
    return [f.id for f in await owner.memory.all()]


def shortener(ids: Iterable[str]) -> Callable[[str], str]:
    """The short form of each id where it is unambiguous among ``ids``; else the id itself."""
    counts: dict[str, int] = {}
    known = list(ids)
    for fid in known:
        counts[_short(fid)] = counts.get(_short(fid), 0) + 1

    def short(fact_id: str) -> str:
        s = _short(fact_id)
        return s if counts.get(s, 0) == 1 and fact_id in known else fact_id

    return short


async def short_ids(owner: OwnerServices) -> Callable[[str], str]:
    return shortener(await _ids(owner))


async def resolve(owner: OwnerServices, ref: str) -> str:
    """The fact id ``ref`` names: itself when it is one, else the one fact whose short form it is."""
    if await owner.memory.get(ref) is not None:
        return ref
    hits = [fid for fid in await _ids(owner) if _matches(ref, fid)]
    if len(hits) > 1:
        raise CommandError(f"{ref!r} is the short form of {len(hits)} facts ({', '.join(hits[:3])}): type the whole id")
    return hits[0] if hits else ref  # an unknown id: the caller says it is not there
