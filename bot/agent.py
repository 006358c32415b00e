"""The delegate agent: one inbound message in, one audited decision and reply out.

Every path through :meth:`DelegateAgent.handle` that answers a non-owner writes its audit
record before returning, so no reply can leave without a record of why it said what it said.
"""

from __future__ import annotations

import time
import uuid
from collections import deque
from collections.abc import Sequence

import structlog

from connectors.base import Inbound, Outbound
from epmem.audit import AuditLog
from epmem.calculus import Recipient
from epmem.directory import Directory, Resolved
from epmem.engine import PrivacyEngine

from bot.commands import CommandContext, OwnerCommands, looks_like_command

log = structlog.get_logger(__name__)

NON_TEXT_NOTE = "I can only read text messages, sorry."
TOO_LONG_NOTE = "That message is too long for me to read. Could you keep it shorter?"


class DelegateAgent:
    def __init__(self, engine: PrivacyEngine, audit: AuditLog, max_message_chars: int = 4000,
                 recent_turns: int = 6) -> None:
        self.engine = engine
        self.audit = audit
        self.directory = Directory(engine.policy)
        self.max_message_chars = max_message_chars
        self.commands = OwnerCommands(self)
        self._recent: dict[str, deque[str]] = {}
        self._recent_len = recent_turns

    async def handle(self, inbound: Inbound) -> Outbound:
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(request_id=uuid.uuid4().hex[:12], platform=inbound.platform)
        sender = self.directory.resolve(inbound.sender)
        log.info("inbound", contact=sender.label, chat_kind=inbound.chat_kind, chars=len(inbound.text))
        try:
            if sender.is_owner:
                return await self._handle_owner(inbound, sender)
            return await self._handle_other(inbound, sender)
        finally:
            structlog.contextvars.clear_contextvars()

    # ------------------------------------------------------------------ owner

    async def _handle_owner(self, inbound: Inbound, sender: Resolved) -> Outbound:
        text = inbound.text.strip()
        if inbound.non_text:
            return Outbound(None)
        if looks_like_command(text):
            reply = await self.commands.run(text, CommandContext(inbound, sender))
            return Outbound(reply)
        if not text:
            return Outbound(None)
        answer = await self.engine.owner_recall(text[: self.max_message_chars])
        return Outbound(answer.reply)

    # ------------------------------------------------------------------ everyone else

    def audience(self, inbound: Inbound) -> list[Resolved]:
        """Everyone who will read the reply, the owner excepted (the owner may know it all)."""
        readers = [self.directory.resolve(i) for i in dict.fromkeys(inbound.readers())]
        return [r for r in readers if not r.is_owner]

    async def _handle_other(self, inbound: Inbound, sender: Resolved) -> Outbound:
        base = {
            "platform": inbound.platform,
            "chat": inbound.chat_id,
            "chat_kind": inbound.chat_kind,
            "sender": inbound.sender,
            "contact": sender.label,
        }
        if inbound.non_text and inbound.non_text != "too_long":
            reply = NON_TEXT_NOTE if inbound.chat_kind == "direct" else None
            rec = await self.audit.append("non_text", {**base, "non_text": inbound.non_text, "reply": reply},
                                          contact=sender.label)
            return Outbound(reply, audit_id=rec.id)
        if await self.engine.overlay.get_flag("paused", False):
            rec = await self.audit.append("paused", {**base, "reply": None}, contact=sender.label)
            return Outbound(None, audit_id=rec.id)
        text = inbound.text.strip()
        if not text:
            rec = await self.audit.append("empty", {**base, "reply": None}, contact=sender.label)
            return Outbound(None, audit_id=rec.id)
        if inbound.non_text == "too_long" or len(text) > self.max_message_chars:
            rec = await self.audit.append(
                "rejected", {**base, "reason": "too_long", "chars": len(inbound.text), "reply": TOO_LONG_NOTE},
                contact=sender.label,
            )
            return Outbound(TOO_LONG_NOTE, audit_id=rec.id)

        audience = self.audience(inbound)
        recent = self._recent.setdefault(inbound.chat_id, deque(maxlen=self._recent_len))
        answer = await self.engine.answer(
            text, [r.recipient for r in audience], sender.recipient, recent_turns=tuple(recent)
        )
        recent.append(f"{sender.recipient.name}: {text}")
        kind = "attempted_command" if looks_like_command(text) else "reply"
        record = await self.audit.append(
            kind,
            {**base, "audience": [r.label for r in audience], "question": text, **answer.audit_body()},
            contact=sender.label,
            disclosed=[(d.fact.id, d.fact.event_id) for d in answer.used],
            recipients=[r.label for r in audience],
        )
        log.info("replied", audit_id=record.id, kind=kind, disclosed=len(answer.used), deflected=answer.deflected,
                 latency_ms=round(answer.latency_ms, 1))
        return Outbound(answer.reply, audit_id=record.id)

    async def preview(self, contact_ids: Sequence[str], question: str) -> tuple[str, str, list[Recipient]]:
        """What these people would be told; audited as a preview, nothing is sent."""
        started = time.perf_counter()
        resolved = [self.directory.resolve(self.directory.contact_identity(c)) for c in contact_ids]
        audience = [r.recipient for r in resolved]
        answer = await self.engine.answer(question, audience, audience[0])
        record = await self.audit.append(
            "preview",
            {"audience": [r.label for r in resolved], "question": question, **answer.audit_body(),
             "preview_ms": round((time.perf_counter() - started) * 1000, 2)},
            contact="owner",
        )
        return answer.reply, record.id, audience
