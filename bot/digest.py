"""The owner's daily digest: who asked what, what was said, what was withheld, what waits for review.

Built from the audit log alone (the record of what actually happened), so the digest can never
claim a reply the log does not hold. It names facts by id, not text: the owner can look any of
them up with /facts or /why, and a digest forwarded by mistake tells its reader little.
"""

from __future__ import annotations

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


def compose(
    records: Sequence[AuditRecord],
    since: datetime,
    until: datetime,
    waiting_review: int = 0,
    unread: int = 0,
    consultations: Sequence[str] = (),
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
    return Digest("\n".join(lines), len(asked), len(people), deflected, held, waiting_review, unread)


async def build_digest(
    audit: AuditLog,
    since: datetime,
    until: datetime,
    waiting_review: int = 0,
    unread: int = 0,
    consultations: Sequence[str] = (),
) -> Digest:
    """The digest of everything audited in [since, until), how many facts wait for review, how
    many imported statements could not be turned into facts, and the open consultations."""
    since, until = since.astimezone(timezone.utc), until.astimezone(timezone.utc)
    start, end = since.isoformat(timespec="milliseconds"), until.isoformat(timespec="milliseconds")
    records = [r for r in await audit.records(limit=SCAN_LIMIT) if start <= r.time < end]
    return compose(records, since, until, waiting_review, unread, consultations)
