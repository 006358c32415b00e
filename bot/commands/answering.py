"""Whether and how replies go out: ``/pause``, ``/resume``, and approval mode.

``/approval N`` holds every reply that would disclose a fact at level N or deeper; the owner
then decides each held reply with ``/approve``, ``/edit`` or ``/reject`` (buttons on Telegram
and Slack). A decided reply leaves through the outbox, to the platform it was held on.
"""

from __future__ import annotations

from typing import Any

from connectors.courier import maybe_delivered
from epmem.audit import ApprovalRecord, DeliveryFailedRecord, REFUSED, UNKNOWN
from epmem.reply import deflection

from bot.approvals import APPROVAL_FLAG, Held
from bot.commands.registry import CommandContext, CommandError, CommandSet, UsageError
from bot.services import OwnerServices

commands = CommandSet()

#: overlay flag: while true, nobody but the owner is answered.
PAUSED_FLAG = "paused"


@commands.command("pause", summary="stop answering anyone until /resume")
async def pause(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    await owner.overlay.set_flag(PAUSED_FLAG, True)
    await owner.record_change({"action": "pause"})
    return "Paused: I will not answer anyone until /resume."


@commands.command("resume", summary="answer again after /pause")
async def resume(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    await owner.overlay.set_flag(PAUSED_FLAG, False)
    await owner.record_change({"action": "resume"})
    return "Resumed."


@commands.command(
    "approval", "N|off", summary="hold replies disclosing facts at level N or deeper for you", example="approval 2"
)
async def approval(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    overlay = owner.overlay
    word = rest.strip().lower()
    if not word:
        level = await overlay.get_flag(APPROVAL_FLAG)
        if level is None:
            return "Approval mode is off. /approval N holds replies that disclose facts at level N or deeper."
        return f"Approval mode: replies disclosing facts at level {level} or deeper wait for you."
    if word == "off":
        await overlay.set_flag(APPROVAL_FLAG, None)
        await owner.record_change({"action": "approval", "level": None, "by": ctx.sender.identity})
        return "Approval mode off: replies go out without asking you."
    if not word.isdigit() or not 0 <= int(word) <= 4:
        raise UsageError("N is a level, 0-4")
    await overlay.set_flag(APPROVAL_FLAG, int(word))
    await owner.record_change({"action": "approval", "level": int(word), "by": ctx.sender.identity})
    return (
        f"Approval mode on: replies disclosing facts at level {word} or deeper wait for your "
        "/approve, /edit or /reject."
    )


@commands.command("pending", summary="held replies, each with how to decide it", example="pending")
async def pending(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    held = await owner.approvals.pending()
    if not held:
        return "No replies are waiting for you."
    return "\n\n".join(h.note() for h in held)


async def _decide(owner: OwnerServices, approval_id: str, state: str, final: str | None) -> Held:
    """Claim a pending reply for a decision; the platform must be reachable to send it."""
    held = await owner.approvals.get(approval_id)
    if held is None:
        raise CommandError(f"no held reply {approval_id!r} (see /pending)")
    if held.state != "pending":
        raise CommandError(f"held reply {approval_id} is already {held.state}")
    if not owner.outbox.reaches(held.platform):
        raise CommandError(f"cannot reach {held.platform} from here: decide it where it is connected")
    claimed = await owner.approvals.claim(approval_id, state, final)
    if claimed is None:
        raise CommandError(f"held reply {approval_id} expired or was decided meanwhile")
    return claimed


async def _send(
    owner: OwnerServices, held: Held, text: str, ctx: CommandContext, body: dict[str, Any], disclosed: bool
) -> str:
    """Audit, then send; a failed send puts the reply back to pending for another try."""
    record = await owner.audit.write(
        ApprovalRecord.model_validate(
            {
                "approval": held.id,
                "platform": held.platform,
                "chat": held.chat_id,
                "contact": held.contact,
                "held_audit": held.audit_id,
                "question": held.question,
                "reply": text,
                "by": ctx.sender.identity,
                **body,
            }
        ),
        contact=held.contact,
        disclosed=held.disclosed if disclosed else (),
        recipients=held.recipients if disclosed else (),
    )
    try:
        await owner.outbox.send(held.platform, held.chat_id, text, ())
    except Exception as exc:  # the connector said no: keep the decision open
        await owner.approvals.unclaim(held.id)
        # the ledger counts the approval's facts as not told, or, when the platform may have
        # taken it all the same (a timeout after sending), as possibly told
        unknown = maybe_delivered(exc)
        await owner.audit.write(
            DeliveryFailedRecord(
                approval=held.id, audit=record.id, error=type(exc).__name__, outcome=UNKNOWN if unknown else REFUSED
            ),
            contact=held.contact,
        )
        maybe = "; it may have been delivered all the same" if unknown else ""
        raise CommandError(
            f"could not deliver to {held.platform} ({type(exc).__name__}{maybe}); still pending"
        ) from None
    return record.id


@commands.command("approve", "ID", summary="send a held reply as drafted")
async def approve(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    held = await _decide(owner, rest.strip(), "approved", None)
    audit_id = await _send(owner, held, held.draft, ctx, {"decision": "approved"}, disclosed=True)
    return f"Sent held reply {held.id} to {held.contact} (audit {audit_id})."


@commands.command("edit", "ID TEXT", summary="send your own words instead of a held reply's draft")
async def edit(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    approval_id, _, text = rest.strip().partition(" ")
    text = text.strip()
    if not approval_id:
        raise UsageError()
    if not text:
        held = await owner.approvals.get(approval_id)
        if held is None:
            raise CommandError(f"no held reply {approval_id!r} (see /pending)")
        return f"To send your own words instead, type:\n/edit {held.id} YOUR TEXT\nThe draft was:\n{held.draft}"
    held = await _decide(owner, approval_id, "edited", text)
    audit_id = await _send(owner, held, text, ctx, {"decision": "edited", "draft": held.draft}, disclosed=True)
    return f"Sent your version of held reply {held.id} to {held.contact} (audit {audit_id})."


@commands.command(
    "reject",
    "ID",
    summary="drop a held reply; the asker gets the usual deflection",
    details="unanswered held replies expire after `EPMEM_APPROVAL_TTL_HOURS`",
)
async def reject(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    """The draft is dropped; the asker gets the ordinary deflection, as if nothing could be said.
    A reply that would have gone out as the owner is simply not sent: a deflection "I'll let
    Maya know you asked" from Maya's own account would make no sense."""
    held = await _decide(owner, rest.strip(), "rejected", None)
    if held.delegation:
        record = await owner.audit.write(
            ApprovalRecord(
                approval=held.id,
                platform=held.platform,
                chat=held.chat_id,
                contact=held.contact,
                held_audit=held.audit_id,
                question=held.question,
                reply=None,
                by=ctx.sender.identity,
                decision="rejected",
            ),
            contact=held.contact,
        )
        return f"Rejected held reply {held.id}; nothing was sent as you (audit {record.id})."
    text = deflection(
        owner.policy.owner.name,
        owner.engine.language_for(held.question, owner.directory.resolve(held.sender).recipient),
    )
    audit_id = await _send(owner, held, text, ctx, {"decision": "rejected"}, disclosed=False)
    return f"Rejected held reply {held.id}; {held.contact} got the usual deflection (audit {audit_id})."
