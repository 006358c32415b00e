"""``/delegate``, ``/undelivered``, ``/resend``, ``/discard``: how the delegate speaks for you,
and the messages a platform would not take.

``/delegate`` sets how replies sent *as you* behave (bot/delegation.py): answered at once, held
for your approval, or not sent, globally or per contact; and whether mentions of you in Slack
channels are answered. A reply that a platform refused after every retry is kept
(bot/connector_state.py); ``/resend`` tries it again, ``/discard`` drops it.
"""

from __future__ import annotations

from typing import cast

from connectors.courier import DeliveryFailed, maybe_delivered
from epmem.audit import DISCARD_ACTION, DeliveryRecord, UNKNOWN

from bot import delegation
from bot.commands.registry import CommandContext, CommandError, CommandSet, UsageError
from bot.delegation import MODES, Mode
from bot.services import OwnerServices

commands = CommandSet()


@commands.command(
    "delegate",
    "[WHO] answer|hold|silent|default | mentions on|off",
    summary="how replies sent as you behave: at once, held for you, or not sent",
    details="applies where the delegate writes from your own account (Telegram Business, "
    "Slack with `SLACK_USER_TOKEN`); with WHO, for that contact only",
    example="delegate hold",
)
async def delegate(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    settings = await delegation.load(owner.overlay)
    words = rest.split()
    if not words:
        return settings.describe()
    if words[0].lower() == "mentions":
        if len(words) != 2 or words[1].lower() not in ("on", "off"):
            raise UsageError()
        settings = delegation.DelegateSettings(settings.mode, words[1].lower() == "on", settings.contacts)
        change: dict[str, object] = {"mentions": settings.mentions}
    elif len(words) == 1:
        settings = delegation.DelegateSettings(_mode(words[0]), settings.mentions, settings.contacts)
        change = {"mode": settings.mode}
    elif len(words) == 2:
        cid = owner.directory.find_contact(words[0])
        if cid is None or cid in owner.policy.groups:
            raise CommandError(f"no contact called {words[0]!r} (see /contacts)")
        word = words[1].lower()
        settings = settings.with_contact(cid, None if word == "default" else _mode(word))
        change = {"contact": cid, "mode": None if word == "default" else word}
    else:
        raise UsageError()
    await delegation.save(owner.overlay, settings)
    await owner.record_change({"action": "delegate", **change, "by": ctx.sender.identity})
    return settings.describe()


def _mode(word: str) -> Mode:
    if word.lower() not in MODES:
        raise CommandError(f"{word!r}: say answer, hold or silent")
    return cast(Mode, word.lower())


@commands.command("undelivered", summary="messages a platform would not take, kept for you")
async def undelivered(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    kept = await owner.deliveries.pending()
    if not kept:
        return "Nothing is waiting: every message was delivered."
    return "\n\n".join(k.line() for k in kept) + "\n\n/resend ID to try again, /discard ID to drop one."


@commands.command("resend", "ID", summary="try an undelivered message again")
async def resend(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    kept = await owner.deliveries.get(rest.strip())
    if kept is None or kept.state != "pending":
        raise CommandError(f"no undelivered message {rest.strip()!r} waiting (see /undelivered)")
    if kept.kind == "owner_note":  # it was for you: here it is
        await owner.deliveries.resolve(kept.id, "resent")
        return f"The note that did not reach you:\n{kept.text}"
    if not owner.outbox.reaches(kept.platform):
        raise CommandError(f"cannot reach {kept.platform} from here")
    audited = DeliveryRecord(
        of=kept.audit_id, platform=kept.platform, chat=kept.chat_id, resent=kept.id, by=ctx.sender.identity
    )
    try:
        await owner.outbox.send(kept.platform, kept.chat_id, kept.text)
    except Exception as exc:
        error = exc.error if isinstance(exc, DeliveryFailed) else type(exc).__name__
        if maybe_delivered(exc):  # it may be there now: the ledger must say so
            await owner.audit.write(audited.model_copy(update={"delivered": False, "outcome": UNKNOWN}))
            raise CommandError(
                f"no answer from {kept.platform} ({error}): it may have been delivered; kept as {kept.id}"
            ) from None
        raise CommandError(f"still not delivered ({error}); kept as {kept.id}") from None
    await owner.deliveries.resolve(kept.id, "resent")
    # counts from now: the ledger has its facts told to the reader from this record on
    await owner.audit.write(audited.model_copy(update={"delivered": True}))
    return f"Sent {kept.id} to {kept.contact or kept.chat_id}."


@commands.command("discard", "ID", summary="drop an undelivered message")
async def discard(owner: OwnerServices, rest: str, ctx: CommandContext) -> str:
    undelivered_id = rest.strip()
    kept = await owner.deliveries.get(undelivered_id)
    if kept is None or not await owner.deliveries.resolve(undelivered_id, "discarded"):
        raise CommandError(f"no undelivered message {undelivered_id!r} waiting (see /undelivered)")
    # names the reply decision: its facts never reached the reader (unless its delivery was
    # unknown: then they stay possibly known, whatever the owner drops now)
    await owner.record_change(
        {"action": DISCARD_ACTION, "undelivered": undelivered_id, "of": kept.audit_id, "by": ctx.sender.identity}
    )
    if kept.unknown:
        return f"Discarded {undelivered_id}; it may have been delivered, so the audit still counts it as possibly read."
    return f"Discarded {undelivered_id}."
