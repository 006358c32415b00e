"""Replies that were in flight when the bot stopped: decided and audited, but never reported
delivered or undelivered (the process died between the decision and the platform's answer).

A reply is audited before it leaves (epmem/audit/delivery.py), so a crash never loses the
decision; it can lose the message. At the next start, before anything is answered, each such
reply on a platform that reports its deliveries is kept as undelivered with an unknown outcome:
the platform may have shown it, so it counts as *possibly told* in every later composite check
(fail closed), and nothing sends it again on its own (a reply the platform did take would go
out twice). The owner is told, and decides: ``/undelivered``, then ``/resend`` or ``/discard``.

Which records were looked at is kept as the last audit sequence number checked, so a reply is
looked at once; a data folder seen for the first time starts from its end (its older replies
predate delivery reports, or came from the console, which reports none).
"""

from __future__ import annotations

from collections.abc import Collection

import structlog

from connectors.base import DeliveryReport

from bot.runtime import Runtime

log = structlog.get_logger(__name__)

#: the last audit sequence number checked for replies left in flight.
CHECKED_FLAG = "inflight_checked_seq"
ERROR = "in flight when the bot stopped"


async def keep_replies_in_flight(runtime: Runtime, platforms: Collection[str]) -> int:
    """Keep every reply to ``platforms`` left without an outcome since the last check (see the
    module doc); how many were kept."""
    db = runtime.audit.db
    row = await db.fetchone("SELECT coalesce(max(seq), 0) FROM audit")
    end = int(row[0]) if row else 0
    checked = await runtime.overlay.get_flag(CHECKED_FLAG)
    if not isinstance(checked, int):
        await runtime.overlay.set_flag(CHECKED_FLAG, end)
        return 0
    rows = await db.fetchall(
        "SELECT a.id FROM audit a WHERE a.kind = 'reply' AND a.seq > ? AND a.seq <= ? "
        "AND NOT EXISTS (SELECT 1 FROM delivery d WHERE d.of = a.id) ORDER BY a.seq",
        (checked, end),
    )
    kept = 0
    for (record_id,) in rows:
        record = await runtime.audit.get(str(record_id))
        body = record.body if record is not None else {}
        platform, chat, reply = body.get("platform"), body.get("chat"), body.get("reply")
        if platform not in platforms or not chat or not reply or body.get("unsent"):
            continue
        report = DeliveryReport(
            str(platform),
            str(chat),
            "reply",
            False,
            0,
            audit_id=str(record_id),
            error=ERROR,
            text=str(reply),
            unknown=True,
        )
        await runtime.connector_state.keep(report)
        kept += 1
    await runtime.overlay.set_flag(CHECKED_FLAG, end)
    if kept:
        log.warning("replies_in_flight_kept", replies=kept)
    return kept
