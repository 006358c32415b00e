"""The delegate agent: one inbound message in, one audited decision and reply out.

Every path through :meth:`DelegateAgent.handle` that answers a non-owner writes its audit
record before returning, so no reply can leave without a record of why it said what it said.
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Awaitable, Callable

import structlog

from connectors.base import Action, Inbound, Outbound
from epmem.identity import LOCAL
from epmem.audit import (
    AttemptedCommandRecord,
    DelegateSilentRecord,
    EmptyRecord,
    HeldRecord,
    NonTextRecord,
    PausedRecord,
    RateLimitedRecord,
    RecordBody,
    RejectedRecord,
    ReplyRecord,
)
from epmem.language import say
from epmem.policy import Directory, Resolved
from epmem.reply import Answer, PrivacyEngine

from bot import delegation
from bot.abuse import AbuseGuard, Admission
from bot.approvals import APPROVAL_FLAG, new_id
from bot.commands import CommandContext, CommandRegistry, looks_like_command
from bot.commands.answering import PAUSED_FLAG
from bot.consult_later import Background, Notify, consult_after_reply
from bot.consulting import may_consult, open_as_learned
from bot.quoting import quote
from bot.services import OwnerServices

log = structlog.get_logger(__name__)

#: the notes in English (epmem/language/ says them in the language of the message, or the
#: contact's when a message has no words: a sticker).
NON_TEXT_NOTE = say("non_text")
TOO_LONG_NOTE = say("too_long")
RATE_LIMIT_NOTE = say("rate_limited")
#: non-text events that are audited but not answered (edits of answered messages, pins, a
#: message the owner answered before the delegate could).
QUIET_NON_TEXT = frozenset({"edited", "service", "owner_answered"})

#: called after every owner command (the scheduler re-reads what is due).
OwnerChanged = Callable[[], Awaitable[None]]


async def _nothing() -> None:
    return None


class DelegateAgent:
    """Built by bot/runtime.py, which hands it every part it uses; it owns none of them."""

    def __init__(
        self,
        engine: PrivacyEngine,
        owner: OwnerServices,
        commands: CommandRegistry,
        *,
        guard: AbuseGuard | None = None,
        max_message_chars: int = 4000,
        recent_turns: int = 6,
        on_owner_change: OwnerChanged = _nothing,
    ) -> None:
        self.engine = engine
        self.owner = owner
        self.commands = commands
        self.audit = owner.audit
        self.max_message_chars = max_message_chars
        self.guard = guard or AbuseGuard()
        self._on_owner_change = on_owner_change
        self._recent: dict[str, deque[str]] = {}
        self._recent_len = recent_turns
        #: the looks for what to consult about, started after each reply (bot/consult_later.py).
        self.later = Background()
        #: how the owner's consultation notes go out (the outbox: kept when nothing reaches them).
        self.notify: Notify = owner.outbox.tell_owner

    @property
    def _learns(self) -> bool:
        """The owner's opt-in ``EPMEM_CONSULT_LEARN_AFTER``: closed facts decided before the reply."""
        store = self.owner.consultations
        return store is not None and store.config.learn_after > 0

    @property
    def directory(self) -> Directory:
        return self.owner.directory

    async def handle(self, inbound: Inbound) -> Outbound:
        # a connector may already have bound a request id for this update; keep it, so its
        # lines and ours share one id. Bound here, reset on the way out either way.
        request_id = structlog.contextvars.get_contextvars().get("request_id") or uuid.uuid4().hex[:12]
        with structlog.contextvars.bound_contextvars(request_id=request_id, platform=inbound.platform):
            sender = self.directory.resolve(inbound.sender)
            log.info("inbound", contact=sender.label, chat_kind=inbound.chat_kind, chars=len(inbound.text))
            if sender.is_owner:
                return await self._handle_owner(inbound, sender)
            return await self._handle_other(inbound, sender)

    # ------------------------------------------------------------------ owner

    async def _handle_owner(self, inbound: Inbound, sender: Resolved) -> Outbound:
        text = inbound.text.strip()
        if inbound.non_text:
            return Outbound(None)
        if looks_like_command(text):
            reply = await self.commands.respond(text, self.owner, CommandContext(inbound, sender))
            await self._owner_changed()
            return self._to_owner_only(inbound, reply.text, reply.actions)
        if not text:
            return Outbound(None)
        answer = await self.engine.owner_recall(text[: self.max_message_chars])
        return self._to_owner_only(inbound, answer.reply)

    def _to_owner_only(self, inbound: Inbound, reply: str, actions: tuple[Action, ...] = ()) -> Outbound:
        """Command output and full recall are for the owner's eyes: typed in a chat that
        others read (a group), they are sent to the owner privately instead (buttons too)."""
        if self.audience(inbound):
            return Outbound(None, to_owner=reply, actions=actions)
        return Outbound(reply, actions=actions)

    async def _owner_changed(self) -> None:
        try:
            await self._on_owner_change()
        except Exception:
            log.exception("owner_change_hook_failed")

    # ------------------------------------------------------------------ everyone else

    def audience(self, inbound: Inbound) -> list[Resolved]:
        """Everyone who will read the reply, the owner excepted (the owner may know it all)."""
        return self.directory.readers(inbound.readers())

    async def _audited(
        self,
        entry: RecordBody,
        inbound: Inbound,
        sender: Resolved,
        audience: list[Resolved] | None = None,
        disclosed: list[tuple[str, str]] | None = None,
    ) -> str:
        """The one way the agent writes to the log: ``entry`` with where the message came from
        (and, as the owner, how the reply would go out); the facts in ``disclosed`` go into the
        ledger for everyone in ``audience``. Returns the record's id."""
        chat = {
            "platform": inbound.platform,
            "chat": inbound.chat_id,
            "chat_kind": inbound.chat_kind,
            "sender": inbound.sender,
            "contact": sender.label,
        }
        if inbound.delegation is not None:
            chat["delegation"] = inbound.delegation
        typed = type(entry).model_validate({**chat, **entry.body()})
        record = await self.audit.write(
            typed, contact=sender.label, disclosed=disclosed or (), recipients=[r.label for r in audience or ()]
        )
        return record.id

    async def _handle_other(self, inbound: Inbound, sender: Resolved) -> Outbound:
        # as the owner (Business chats, the owner's Slack DMs): the notes below are the bot's
        # voice, so they are not sent there; what is, follows the owner's /delegate choice.
        as_owner = inbound.delegation is not None
        # paused first: a paused delegate says nothing at all, not even a note about stickers.
        if await self.owner.overlay.get_flag(PAUSED_FLAG, False):
            return Outbound(None, audit_id=await self._audited(PausedRecord(reply=None), inbound, sender))
        mode = await self._delegate_mode(inbound, sender)
        if mode is None:
            return Outbound(None)
        if mode == "silent":
            return Outbound(None, audit_id=await self._audited(DelegateSilentRecord(reply=None), inbound, sender))
        lang = self.engine.language_for(inbound.text[: self.max_message_chars], sender.recipient)
        # the local terminal is the operator at the keyboard (and the benchmark): not rate limited.
        admission = Admission.OK if inbound.platform == LOCAL.platform else self.guard.admit(inbound.sender)
        if admission is Admission.LIMITED_AGAIN:
            log.info("rate_limited", contact=sender.label)
            return Outbound(None)
        if admission is Admission.LIMITED:
            reply = say("rate_limited", lang) if inbound.chat_kind == "direct" and not as_owner else None
            return Outbound(reply, audit_id=await self._audited(RateLimitedRecord(reply=reply), inbound, sender))
        if inbound.non_text and inbound.non_text != "too_long":
            # a sticker deserves a word; an edit (already answered) or a pin does not.
            quiet = inbound.non_text in QUIET_NON_TEXT or inbound.chat_kind != "direct" or as_owner
            reply = None if quiet else say("non_text", lang)
            entry = NonTextRecord(non_text=inbound.non_text, reply=reply)
            return Outbound(reply, audit_id=await self._audited(entry, inbound, sender))
        text = inbound.text.strip()
        if not text:
            return Outbound(None, audit_id=await self._audited(EmptyRecord(reply=None), inbound, sender))
        if inbound.non_text == "too_long" or len(text) > self.max_message_chars:
            note = None if as_owner else say("too_long", lang)
            rejected = RejectedRecord(reason="too_long", chars=len(inbound.text), reply=note)
            return Outbound(note, audit_id=await self._audited(rejected, inbound, sender))

        audience = self.audience(inbound)
        answer, learned, may = await self._answer(inbound, sender, audience, text)
        # a deflection ("I'll let Maya know you asked") cannot come from Maya's own account
        unsent = as_owner and answer.deflected
        if not unsent and (mode == "hold" or await self._needs_approval(answer)):
            return await self._hold(inbound, sender, audience, text, answer)
        model = AttemptedCommandRecord if looks_like_command(text) else ReplyRecord
        body = {"audience": [r.label for r in audience], "question": text, **answer.audit_body()}
        if unsent:
            body.update(reply=None, unsent="deflection as the owner")
        audit_id = await self._audited(
            model.model_validate(body), inbound, sender, audience, [(d.fact.id, d.fact.event_id) for d in answer.used]
        )
        log.info(
            "replied",
            audit_id=audit_id,
            kind=model.kind,
            disclosed=len(answer.used),
            deflected=answer.deflected,
            latency_ms=round(answer.latency_ms, 1),
        )
        reply = None if unsent else answer.reply
        after = None
        if may:  # once the connector has handed the reply to the platform (bot/consult_later.py)
            after = self.later.when_sent(
                lambda: consult_after_reply(
                    self.owner, inbound, sender, audience, text, answer, audit_id, self.notify, looked=self._learns
                ),
                name=f"consult-{audit_id}",
            )
        notes = [n for n in (learned, self._probe_note(inbound, sender, text, answer)) if n]
        return Outbound(reply, audit_id=audit_id, to_owner="\n\n".join(notes) or None, after=after)

    async def _answer(
        self, inbound: Inbound, sender: Resolved, audience: list[Resolved], text: str
    ) -> tuple[Answer, str | None, bool]:
        """The reply for everyone in ``audience``, and the owner's note when the owner's opt-in
        opened what answers it (bot/consulting.py ``open_as_learned``): then it is answered again;
        and whether this reply may consult the owner (``may_consult``)."""
        recent = self._recent.setdefault(inbound.chat_id, deque(maxlen=self._recent_len))
        readers = [r.recipient for r in audience]
        # the closed facts are looked at after the reply has gone (bot/consult_later.py), except
        # under the owner's opt-in to open without asking, which decides before the reply
        may = may_consult(self.owner, inbound, sender, audience)
        closed = self._learns and may
        answer = await self.engine.answer(
            text, readers, sender.recipient, recent_turns=tuple(recent), with_closed=closed
        )
        learned = await open_as_learned(self.owner, inbound, sender, audience, text, answer)
        if learned is not None:
            answer = await self.engine.answer(
                text, readers, sender.recipient, recent_turns=tuple(recent), with_closed=closed
            )
        recent.append(f"{sender.recipient.name}: {text}")
        return answer, learned, may

    async def _delegate_mode(self, inbound: Inbound, sender: Resolved) -> delegation.Mode | None:
        """How a reply sent as the owner behaves (bot/delegation.py); "answer" for everything
        else. None: a mention of the owner while the owner has not turned mentions on."""
        if inbound.delegation is None:
            return "answer"
        settings = await delegation.load(self.owner.overlay)
        if inbound.delegation == "mention" and not settings.mentions:
            log.info("delegate_mention_off", contact=sender.label)
            return None
        return settings.mode_for(sender.contact_id)

    def _probe_note(self, inbound: Inbound, sender: Resolved, text: str, answer: Answer) -> str | None:
        """A note for the owner when someone keeps drawing deflections (probing for secrets)."""
        if not answer.deflected:
            return None
        count = self.guard.deflected(inbound.sender)
        if count is None:
            return None
        log.warning("probing", contact=sender.label, deflections=count)
        if sender.recipient.is_stranger and self.owner.headsup is not None:  # batched (bot/headsup.py)
            return self.owner.headsup.add(inbound.sender, inbound.platform, count, text)
        minutes = round(self.guard.deflection_window / 60)
        return (
            f"Heads-up: {sender.label} ({inbound.sender}) drew {count} deflections in {minutes} minutes "
            f"on {inbound.platform}. Latest question: \u201c{quote(text, 200)}\u201d\n/audit {sender.contact_id}"
        )

    async def _needs_approval(self, answer: Answer) -> bool:
        """Approval mode holds a reply that would disclose a fact at the set level or deeper."""
        if answer.deflected or not answer.used:
            return False
        level = await self.owner.overlay.get_flag(APPROVAL_FLAG)
        if not isinstance(level, int):
            return False
        return any(d.fact.effective_level() <= level for d in answer.used)

    async def _hold(
        self, inbound: Inbound, sender: Resolved, audience: list[Resolved], text: str, answer: Answer
    ) -> Outbound:
        """Store the draft for the owner; the asker hears nothing until the owner decides.
        Nothing enters the disclosure ledger until the reply is actually sent."""
        approval_id = new_id()
        disclosed = [(d.fact.id, d.fact.event_id) for d in answer.used]
        entry = HeldRecord.model_validate(
            {
                "audience": [r.label for r in audience],
                "question": text,
                **answer.audit_body(),
                "disclosed": [],
                "would_disclose": [f for f, _ in disclosed],
                "reply": None,
                "draft": answer.reply,
                "approval": approval_id,
            }
        )
        audit_id = await self._audited(entry, inbound, sender)
        held = await self.owner.approvals.hold(
            platform=inbound.platform,
            chat_id=inbound.chat_id,
            chat_kind=inbound.chat_kind,
            sender=inbound.sender,
            contact=sender.label,
            question=text,
            draft=answer.reply,
            disclosed=disclosed,
            recipients=[r.label for r in audience],
            audit_id=audit_id,
            approval_id=approval_id,
            delegation=inbound.delegation,
        )
        log.info("held", audit_id=audit_id, approval=held.id, facts=len(disclosed))
        return Outbound(None, audit_id=audit_id, to_owner=held.note(), actions=held.actions())
