"""The owner's daily digest: who asked what, what was said, what was withheld, what waits for review.

Built from the audit log alone (the record of what actually happened), so the digest can never
claim a reply the log does not hold. It names facts by id, not text: the owner can look any of
them up with /facts or /why, and a digest forwarded by mistake tells its reader little.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from epmem.audit import AuditLog, AuditRecord

#: record kinds that are someone talking to the delegate.
ASKED = ("reply", "attempted_command", "held", "non_text", "rejected", "rate_limited")
#: how many audit records one digest looks back over at most.
SCAN_LIMIT = 5000
MAX_ENTRIES = 30
_CLIP = 160


@dataclass(frozen=True, slots=True)
class Digest:
    text: str
    questions: int
    people: int
    deflected: int
    held: int
    #: facts waiting in the review queue when the digest was made.
    waiting_review: int = 0
    #: statements no import could turn into facts (epmem/ingest/unread.py).
    unread: int = 0
    #: questions the consultation bounds kept from the owner, and strangers' heads-ups listed.
    not_asked: int = 0
    headsups: int = 0


def _clip(text: object) -> str:
    s = " ".join(str(text or "").split())
    return s if len(s) <= _CLIP else s[: _CLIP - 1] + "\u2026"


def _entry(r: AuditRecord) -> list[str]:
    body = r.body
    who = r.contact or "?"
    when = r.time[11:16]
    if r.kind == "non_text":
        return [f"{when} {who} sent a {body.get('non_text')} (not read)"]
    if r.kind == "rate_limited":
        return [f"{when} {who} was rate limited"]
    lines = [f"{when} {who} asked: {_clip(body.get('question'))}"]
    if r.kind == "held":
        lines.append(f"  held for you (approval {body.get('approval')}): {_clip(body.get('draft'))}")
    elif r.kind == "rejected":
        lines.append(f"  refused ({body.get('reason')})")
    else:
        mark = " (deflected)" if body.get("deflected") else ""
        lines.append(f"  said{mark}: {_clip(body.get('reply'))}")
    withheld = sorted({c["fact"] for c in body.get("candidates", []) if not c.get("allowed")})
    if withheld:
        lines.append(f"  withheld: {', '.join(withheld)} (/why {r.id})")
    return lines


#: why a consultation was not asked (``consultation_skipped``, bot/consultations/bounds.py), in words.
_WHY = {
    "open": "too many open",
    "day": "past the daily bound",
    "owner-day": "past your daily bound",
    "expired": "expired unanswered before",
    "kept-private": "news you kept private",
    "error": "could not be looked up",
}


def not_asked(records: Sequence[AuditRecord]) -> list[str]:
    """The questions closed facts would have answered that the bounds kept from the owner: who
    asked, how many, which topics and why, without the facts' words (strangers together)."""
    skipped = [r for r in records if r.kind == "consultation_skipped"]
    if not skipped:
        return []
    by: dict[str, list[AuditRecord]] = {}
    for r in skipped:
        by.setdefault("strangers" if r.body.get("stranger") else str(r.contact), []).append(r)
    lines = [
        f"Not asked: {len(skipped)} question{'s' * (len(skipped) != 1)} that facts you have not opened "
        'would answer (the consultation bounds, README "Consultations"):'
    ]
    for who, rows in sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        topics = Counter(str(r.body.get("topic") or "?") for r in rows)
        why = Counter(_WHY.get(str(r.body.get("reason", "")).split(":")[0], "other") for r in rows)
        accounts = len({r.body.get("asker") for r in rows})
        name = f"{accounts} unknown account{'s' * (accounts != 1)}" if who == "strangers" else who
        lines.append(
            f"  {name}: {len(rows)} ({', '.join(f'{t} {n}' for t, n in topics.most_common())}; "
            f"{', '.join(f'{w} {n}' for w, n in why.most_common())})"
        )
    return lines


def compose(
    records: Sequence[AuditRecord],
    since: datetime,
    until: datetime,
    waiting_review: int = 0,
    unread: int = 0,
    consultations: Sequence[str] = (),
    headsups: Sequence[str] = (),
) -> Digest:
    asked = [r for r in records if r.kind in ASKED]
    people = {r.contact for r in asked}
    deflected = sum(1 for r in asked if r.body.get("deflected"))
    held = sum(1 for r in asked if r.kind == "held")
    changes = sum(1 for r in records if r.kind == "policy_change")
    head = (
        f"Daily digest {since:%Y-%m-%d %H:%M} to {until:%Y-%m-%d %H:%M} UTC: {len(asked)} messages from "
        f"{len(people)} {'person' if len(people) == 1 else 'people'}, {deflected} deflected, {held} held."
    )
    lines = [head]
    for r in asked[:MAX_ENTRIES]:
        lines += _entry(r)
    if len(asked) > MAX_ENTRIES:
        lines.append(f"... and {len(asked) - MAX_ENTRIES} more (epmem audit list).")
    if changes:
        lines.append(f"Policy changes: {changes} (/audit).")
    if waiting_review:
        lines.append(
            f"{waiting_review} fact{'s' * (waiting_review != 1)} wait for your review (nobody hears "
            f"{'them' if waiting_review != 1 else 'it'} until you decide): /review"
        )
    if unread:
        lines.append(
            f"{unread} statement{'s' * (unread != 1)} from your imported chats could not be turned into "
            f"facts: see `epmem facts unread`"
        )
    if consultations:
        lines.append(
            f"{len(consultations)} question{'s' * (len(consultations) != 1)} wait for your word about "
            f"facts you have not opened (/consults):"
        )
        lines += [f"  {c}" for c in consultations[:MAX_ENTRIES]]
    lines += not_asked(records)
    if headsups:
        lines.append("Unknown accounts that kept drawing deflections, not in a heads-up note yet:")
        lines += list(headsups)
    skipped = sum(1 for r in records if r.kind == "consultation_skipped")
    return Digest(
        "\n".join(lines), len(asked), len(people), deflected, held, waiting_review, unread, skipped, len(headsups)
    )


async def build_digest(
    audit: AuditLog,
    since: datetime,
    until: datetime,
    waiting_review: int = 0,
    unread: int = 0,
    consultations: Sequence[str] = (),
    headsups: Sequence[str] = (),
) -> Digest:
    """The digest of everything audited in [since, until), how many facts wait for review, how
    many imported statements could not be turned into facts, and the open consultations."""
    since, until = since.astimezone(timezone.utc), until.astimezone(timezone.utc)
    start, end = since.isoformat(timespec="milliseconds"), until.isoformat(timespec="milliseconds")
    records = [r for r in await audit.records(limit=SCAN_LIMIT) if start <= r.time < end]
    return compose(records, since, until, waiting_review, unread, consultations, headsups)
