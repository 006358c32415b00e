"""Learning from the owner's earlier answers (docs/DESIGN.md sec. 6.7).

Each answer to a consultation is written on the facts it decided (the evidence tag
``owner:consult:KEY``, bot/consultations/callback.py), so the owner's answers are labelled
examples: a new consultation offers first what the owner answered about the most similar fact
before, and with the owner's opt-in ``EPMEM_CONSULT_LEARN_AFTER`` = N the delegate opens a fact
on its own when the N nearest earlier answers all chose one and the same audience.
"""

from __future__ import annotations

from collections.abc import Sequence

import structlog

from connectors.base import Inbound
from epmem.ingest import ReviewAnswer, ReviewError
from epmem.memory import Fact
from epmem.policy import Resolved
from epmem.reply import ClosedCandidates

from bot.consultations.callback import LEARNED, latest_key, tag
from bot.consultations.gate import consultable
from bot.consultations.wording import learned_note
from bot.services import OwnerServices

log = structlog.get_logger(__name__)

#: how close (cosine, the embedder's) an earlier consulted fact must be for its answer to count.
SIMILAR = 0.8


async def earlier_answers(owner: OwnerServices, fact: Fact, limit: int = 8) -> list[tuple[str, Fact]]:
    """The owner's own answers to consultations about facts like this one (nearest first):
    each answer is a labelled example (docs/DESIGN.md sec. 6.7)."""
    rows = await owner.memory.similar([fact.text], limit=limit)
    out: list[tuple[str, Fact]] = []
    for f, score in sorted(rows[0] if rows else [], key=lambda hit: (-round(hit[1], 6), hit[0].id)):
        if f.id == fact.id or score < SIMILAR or f.state != "owner-set" or f.event_id == fact.event_id:
            continue
        key = latest_key(f.evidence)
        if key is not None and key != LEARNED:
            out.append((key, f))
    return out


def consistent(earlier: Sequence[tuple[str, Fact]], n: int) -> tuple[int, str | None] | None:
    """The audience the owner chose for each of the ``n`` nearest earlier answers, if it was the
    same every time and names nobody in particular (a "tell this person" does not carry over
    to another asker); None otherwise, or when ``n`` is 0 (off, the default)."""
    if n <= 0 or len(earlier) < n:
        return None
    labels = {(f.level if f.level is not None else 0, f.domain) for _, f in earlier[:n]}
    if len(labels) != 1 or any(f.whitelist or key == "tell" for key, f in earlier[:n]):
        return None
    return next(iter(labels))


async def open_as_learned(
    owner: OwnerServices,
    inbound: Inbound,
    sender: Resolved,
    audience: Sequence[Resolved],
    question: str,
    candidates: ClosedCandidates,
) -> str | None:
    """The owner's opt-in (``EPMEM_CONSULT_LEARN_AFTER`` = N, off by default): when the owner
    answered the N nearest earlier consultations about similar facts with one and the same
    audience, the best closed fact's event is opened to it without asking, before the reply is
    written (the caller answers again). Returns the note for the owner, None when it did not."""
    service = owner.consultations
    if service is None or service.config.learn_after <= 0 or candidates.best is None:
        return None
    if not consultable(owner, inbound, sender, audience, candidates):
        return None
    try:
        q = await service.review.question(candidates.best)
    except ReviewError:
        return None
    fact = await owner.memory.get(q.fact_id)
    learned = consistent(await earlier_answers(owner, fact), service.config.learn_after) if fact else None
    if learned is None:
        return None
    level, domain = learned
    decision = ReviewAnswer.set(
        q.fact_id,
        q.suggested.category,
        level=level,
        domain=domain,  # type: ignore[arg-type]
        whitelist=[],
        blacklist=list(q.suggested.blacklist),
    )
    applied = await service.review.apply(decision, tag=tag(LEARNED))
    await owner.record_change(
        {**applied.audit, "answer": LEARNED, "by": "learned", "platform": inbound.platform, "asked_by": sender.label}
    )
    log.info("consultation_learned", fact=q.fact_id, facts=len(applied.facts))
    return learned_note(owner, sender.recipient.name, question, q, level, domain, service.config.learn_after)
