"""What an owner command (and the scheduler) may use: the bot's parts, built once, passed in.

Commands used to reach through the agent (``self.agent.engine.policy``), which tied agent,
commands and admin commands into a cycle and meant an agent built outside the runtime silently
lacked parts. Now bot/runtime.py builds one :class:`OwnerServices` from the same parts it gives
the agent, and every command gets it as its first argument.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from epmem.audit import AuditLog, PolicyChangeRecord, PreviewRecord
from epmem.ingest import Distiller, ReviewQueue
from epmem.memory import Conversations, EventLinks, FactMemory
from epmem.policy import Directory, Overlay, Policy, PolicyHolder, Recipient, Skipped
from epmem.reply import PrivacyEngine

from bot.annotator import BackgroundAnnotator
from bot.approvals import Approvals
from bot.clock import Clock, utcnow
from bot.connector_state import ConnectorState
from bot.headsup import StrangerHeadsUp
from bot.outbox import Outbox
from bot.tasks import Tasks

if TYPE_CHECKING:  # the package's flows take OwnerServices: only the type is named here
    from bot.consultations.service import Consultations

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class OwnerServices:
    policies: PolicyHolder
    directory: Directory
    engine: PrivacyEngine
    memory: FactMemory
    conversations: Conversations
    distiller: Distiller
    overlay: Overlay
    audit: AuditLog
    approvals: Approvals
    tasks: Tasks
    outbox: Outbox
    #: what the connectors keep: undelivered messages (``/undelivered``, ``/resend``), routes, event ids.
    deliveries: ConnectorState
    clock: Clock = utcnow
    #: the owner's review queue (epmem.ingest.review): /review asks, the digest counts.
    review: ReviewQueue | None = None
    #: model annotation in the background (/annotations shows its progress, /reannotate requeues).
    annotator: BackgroundAnnotator | None = None
    #: the owner asked about closed facts someone's question needed (bot/consultations/): the
    #: one service, built by bot/runtime.py or left out (None: nothing consults the owner).
    consultations: Consultations | None = None
    #: which events are one matter (epmem/memory/links.py): /matter, /unmatter, /annotations.
    links: EventLinks | None = None
    #: heads-up notes about strangers, batched (bot/headsup.py); the digest lists what waits.
    headsup: StrangerHeadsUp | None = None

    @property
    def policy(self) -> Policy:
        """The effective policy now (the file plus the owner's command-made changes)."""
        return self.policies.current

    async def refresh_policy(self) -> list[Skipped]:
        """Re-apply the owner's contact overrides to the policy file; every reader sees it at once."""
        skipped = self.policies.apply(await self.overlay.contact_overrides())
        for s in skipped:
            log.warning("policy.override_skipped", contact=s.contact, reason=s.reason)
        return skipped

    async def record_change(self, body: dict[str, Any]) -> None:
        """Audit a change the owner made (or the scheduler made for them)."""
        await self.audit.write(PolicyChangeRecord.model_validate(body), contact="owner")

    async def preview(self, contact_ids: Sequence[str], question: str) -> tuple[str, str, list[Recipient]]:
        """What these people would be told; audited as a preview, nothing is sent."""
        started = time.perf_counter()
        resolved = [self.directory.resolve(self.directory.contact_identity(c)) for c in contact_ids]
        audience = [r.recipient for r in resolved]
        answer = await self.engine.answer(question, audience, audience[0])
        record = await self.audit.write(
            PreviewRecord.model_validate(
                {
                    "audience": [r.label for r in resolved],
                    "question": question,
                    **answer.audit_body(),
                    "preview_ms": round((time.perf_counter() - started) * 1000, 2),
                }
            ),
            contact="owner",
        )
        return answer.reply, record.id, audience
