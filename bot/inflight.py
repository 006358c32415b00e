"""Replies that were in flight when the bot stopped: decided and audited, but never reported
delivered or undelivered (the process died between the decision and the platform's answer).

A reply is audited before it leaves (epmem/audit/delivery.py), so a crash never loses the
decision; it can lose the message. At the next start each such reply is settled. Where the
platform lets the bot read what it sent (Slack's history: connectors.base.KnowsWhatItSent), the
answer decides: posted already, it is recorded as delivered; not posted, it is sent now, once.
Elsewhere (Telegram keeps no history a bot may read), or when the platform cannot tell, it is
kept as undelivered with an unknown outcome: the platform may have shown it, so it counts as
*possibly told* in every later composite check (fail closed), and nothing sends it again on its
own (a reply the platform did take would go out twice). The owner is told, and decides:
``/undelivered``, then ``/resend`` or ``/discard``.

Which records were looked at is kept as the last audit sequence number checked, so a reply is
looked at once; a data folder seen for the first time starts from its end (its older replies
predate delivery reports, or came from the console, which reports none).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
import asyncio
from datetime import UTC, datetime, timedelta

import structlog

from connectors.base import Connector, DeliveryReport, KnowsWhatItSent

from bot.runtime import Runtime
from bot.workers import Orphan, WorkerLease

log = structlog.get_logger(__name__)

#: the last audit sequence number checked for replies left in flight.
CHECKED_FLAG = "inflight_checked_seq"
ERROR = "in flight when the bot stopped"


@dataclass(frozen=True, slots=True)
class InFlight:
    """What became of the replies left in flight: kept for the owner, found posted, sent now."""

    kept: int = 0
    found_posted: int = 0
    sent_now: int = 0


async def keep_replies_in_flight(runtime: Runtime, connectors: Mapping[str, Connector]) -> InFlight:
    """Every reply to a platform in ``connectors`` left without an outcome since the last check
    (see the module doc). A connector that can read what it sent settles it: posted already
    (recorded as delivered) or not (sent now, once); else, or when it cannot tell, the reply is
    kept for the owner as possibly told."""
    unsettled = await _without_outcome(runtime, CHECKED_FLAG)
    if unsettled is None:
        return InFlight()
    ids, _, end = unsettled
    outcomes = [await _settle(runtime, connectors, record_id) for record_id in ids]
    await runtime.overlay.set_flag(CHECKED_FLAG, end)
    done = InFlight(outcomes.count("kept"), outcomes.count("posted"), outcomes.count("sent"))
    if ids:
        log.warning("replies_in_flight", kept=done.kept, found_posted=done.found_posted, sent_now=done.sent_now)
    return done


async def _without_outcome(runtime: Runtime, flag: str, before: str | None = None) -> tuple[list[str], int, int] | None:
    """The replies with no outcome audited after the sequence number ``flag`` holds, up to the
    log's end (or its last record before ``before``): (their ids, that number, the end). None
    for a data folder seen for the first time: ``flag`` is set to the end, and older replies
    (from before delivery reports, or the console's, which reports none) are not looked at."""
    db = runtime.audit.db
    when = "" if before is None else " AND time < ?"
    row = await db.fetchone(f"SELECT coalesce(max(seq), 0) FROM audit WHERE 1 = 1{when}", (before,) if before else ())
    end = int(row[0]) if row else 0
    checked = await runtime.overlay.get_flag(flag)
    if not isinstance(checked, int):
        await runtime.overlay.set_flag(flag, end)
        return None
    rows = await db.fetchall(
        f"SELECT id FROM audit WHERE kind = 'reply' AND seq > ? AND seq <= ?{when} "
        "AND NOT EXISTS (SELECT 1 FROM delivery d WHERE d.of = audit.id) ORDER BY seq",
        (checked, end, *((before,) if before else ())),
    )
    return [str(r[0]) for r in rows], checked, end


async def _settle(runtime: Runtime, connectors: Mapping[str, Connector], record_id: str) -> str:
    record = await runtime.audit.get(record_id)
    body = record.body if record is not None else {}
    platform, chat, reply = body.get("platform"), body.get("chat"), body.get("reply")
    connector = connectors.get(str(platform))
    if record is None or connector is None or not chat or not reply or body.get("unsent"):
        return "skipped"
    chat, reply = str(chat), str(reply)
    delivered = DeliveryReport(connector.platform, chat, "reply", True, 1, audit_id=record_id)
    if isinstance(connector, KnowsWhatItSent) and not body.get("delegation"):
        sent = await connector.was_sent(chat, reply, datetime.fromisoformat(record.time))
        if sent:
            await runtime.connector_state.record(delivered)
            return "posted"
        if sent is False:
            try:
                await connector.send(chat, reply)
            except Exception as exc:  # not sent before, not now: nobody was told
                report = DeliveryReport(
                    connector.platform, chat, "reply", False, 1, record_id, type(exc).__name__, reply
                )
                await runtime.connector_state.keep(report)
                return "kept"
            await runtime.connector_state.record(delivered)
            return "sent"
    report = DeliveryReport(connector.platform, chat, "reply", False, 0, record_id, ERROR, reply, unknown=True)
    await runtime.connector_state.keep(report)
    return "kept"


#: several workers (bot/workers.py): the last audit sequence number looked at for replies that
#: no worker has a row for.
WORKERS_CHECKED_FLAG = "workers_checked_seq"


async def take_over(runtime: Runtime, connectors: Mapping[str, Connector], lease: WorkerLease) -> InFlight:
    """Replies a dead worker left in flight, each settled by exactly one live worker (the claim
    decides) as :func:`keep_replies_in_flight` settles them at a restart."""
    outcomes = []
    for orphan in await lease.orphans() + await _untracked(runtime, lease):
        if await lease.claim(orphan):
            if not await _has_outcome(runtime, orphan.audit_id):  # died after recording it, before the row went
                outcomes.append(await _settle(runtime, connectors, orphan.audit_id))
            await lease.settled(orphan.audit_id)
    done = InFlight(outcomes.count("kept"), outcomes.count("posted"), outcomes.count("sent"))
    if done != InFlight():
        log.warning("replies_taken_over", kept=done.kept, found_posted=done.found_posted, sent_now=done.sent_now)
    return done


async def _has_outcome(runtime: Runtime, audit_id: str) -> bool:
    return await runtime.audit.db.fetchone("SELECT 1 FROM delivery WHERE of = ? LIMIT 1", (audit_id,)) is not None


async def _untracked(runtime: Runtime, lease: WorkerLease) -> list[Orphan]:
    """Replies audited before the lease's cutoff that have no outcome and no worker's row: their
    worker died between the audit and the row. Looked at from the last sequence number checked
    (a data folder seen for the first time starts from its end, as at a restart)."""
    cutoff = lease.cutoff().astimezone(UTC).isoformat(timespec="milliseconds")
    unsettled = await _without_outcome(runtime, WORKERS_CHECKED_FLAG, before=cutoff)
    if unsettled is None:
        return []
    ids, checked, end = unsettled
    tracked = await lease.tracked(ids)
    if end > checked:
        await runtime.overlay.set_flag(WORKERS_CHECKED_FLAG, end)
    return [Orphan(i, None) for i in ids if i not in tracked]


async def keep_taking_over(
    runtime: Runtime, connectors: Mapping[str, Connector], lease: WorkerLease, every: timedelta
) -> None:
    """This worker's beat, and a look for dead workers' replies after each, until cancelled."""
    while True:
        try:
            await lease.beat()
            await take_over(runtime, connectors, lease)
        except Exception:
            log.exception("workers.take_over_failed")
        await asyncio.sleep(every.total_seconds())
