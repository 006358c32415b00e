"""Looking for what to consult the owner about, after the reply has gone (issue 38).

The second relevance pass over closed facts (``PrivacyEngine.closed_candidates``) costs time
only when closed facts are near the question: a reply that waited for it would arrive later
whenever a secret exists, and a contact could time that. So the reply to a contact never waits
for anything that depends on facts the contact may not know: the agent hands the reply back
with ``Outbound.after``, the connector sends it and then calls ``Outbound.delivered`` (running
the look beside the reply's own sending would slow it down on the same event loop: measured, a
p95 some 20% higher on Slack), and only then this task looks for what to consult about and sends
the owner's note through the outbox (``Outbox.tell_owner``: kept for ``/undelivered`` when no platform
reaches the owner). Failures are logged and audited and fail closed: no consultation.

The tasks are tracked (:class:`Background`): ``epmem run`` lets them finish on shutdown, and a
test or benchmark awaits them (``drain``) before it looks for the owner's note.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

import structlog

from connectors.base import Action, Inbound
from epmem.audit import ConsultationSkippedRecord
from epmem.policy import Resolved
from epmem.reply import Answer, ClosedCandidates

from bot.consultations.flow import ask_about
from bot.services import OwnerServices

log = structlog.get_logger(__name__)

#: how the owner's note goes out (``Outbox.tell_owner``).
Notify = Callable[[str, tuple[Action, ...]], Awaitable[object]]


class Background:
    """Work started after a reply, tracked so that shutdown and tests can await it."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()
        #: how many have finished (a test waits for the look after a reply it saw arrive).
        self.finished = 0

    def start(self, work: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.create_task(work, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self.finished += 1

    def when_sent(self, work: Callable[[], Coroutine[Any, Any, None]], name: str) -> Callable[[], None]:
        """What starts ``work`` once (``Outbound.after``: the connector calls it when the reply
        is out); never called, ``work`` never runs."""
        started = False

        def start() -> None:
            nonlocal started
            if not started:
                started = True
                self.start(work(), name)

        return start

    @property
    def running(self) -> int:
        return len(self._tasks)

    async def drain(self) -> None:
        """Until every task started so far (and any they started) has finished."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def stop(self, timeout_s: float = 10.0) -> None:
        """Let running tasks finish for up to ``timeout_s``, then cancel what is left."""
        pending = set(self._tasks)
        if pending:
            _, pending = await asyncio.wait(pending, timeout=timeout_s)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


async def consult_after_reply(
    owner: OwnerServices,
    inbound: Inbound,
    sender: Resolved,
    audience: Sequence[Resolved],
    question: str,
    answer: Answer,
    audit_id: str,
    notify: Notify,
    *,
    looked: ClosedCandidates | None = None,
) -> None:
    """The reply with ``audit_id`` has been handed to the connector: which closed facts would have
    answered it (unless ``looked``: the owner's opt-in ``learn_after`` already asked, before the
    reply), and the consultations for the best of them and those sure to answer, in one note to
    the owner sent through ``notify``."""
    try:
        candidates = looked
        if candidates is None:
            told = {d.fact.id for d in answer.projection.used}
            readers = [r.recipient for r in audience]
            candidates = await owner.engine.closed_candidates(question, readers, sender.recipient, told)
        if not candidates:
            return
        # the best, and those the cross-encoder is sure answer: one message (``per_message``)
        asking = list(dict.fromkeys([candidates.facts[0], *candidates.sure]))
        note, actions = await ask_about(owner, inbound, sender, audience, question, asking, audit_id)
    except Exception as exc:  # fail closed: no consultation, and the owner can see why in the audit
        log.exception("consult_failed", audit_id=audit_id, error=type(exc).__name__)
        try:
            await owner.audit.write(
                ConsultationSkippedRecord(
                    platform=inbound.platform,
                    chat=inbound.chat_id,
                    contact=sender.label,
                    reason="error",
                    reply_audit=audit_id,
                    error=type(exc).__name__,
                ),
                contact=sender.label,
            )
        except Exception:
            log.exception("consult_failed_unaudited", audit_id=audit_id)
        return
    if note is not None:
        await notify(note, actions)
