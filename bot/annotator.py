"""Model annotation in the background, with its own progress, resumable across restarts.

An import never waits for the model (epmem.ingest.pipeline): it stores the rules' facts as
``pending`` (level 0: nobody hears them) and queues each session in the import journal. This
worker takes the queue from the journal, one session at a time, and hands it to the
distiller's retrying annotation; each outcome is recorded (``done``, or ``failed`` after the
last retry, which ``/reannotate`` queues again). Because the queue lives in the journal, a
restart (or Ctrl-C during ``epmem annotate``) loses nothing: the next run picks up where this
one stopped. A failing model only ever leaves facts pending, never open.

When the queue runs dry and facts still wait for the owner, ``prompt`` is told once, so the
owner hears that there is something to /review.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import structlog

from epmem.ingest import Distiller, ImportJournal, ReviewQueue
from epmem.memory import Conversations

log = structlog.get_logger(__name__)

Prompt = Callable[[str], Awaitable[object]]


@dataclass
class Progress:
    queued: int = 0
    done: int = 0
    failed: int = 0
    current: str | None = None
    errors: dict[str, list[str]] = field(default_factory=dict)

    def line(self) -> str:
        now = f", now {self.current}" if self.current else ""
        return f"model annotation: {self.done} of {self.queued} sessions done, {self.failed} failed{now}"


class BackgroundAnnotator:
    def __init__(
        self,
        distiller: Distiller,
        conversations: Conversations,
        journal: ImportJournal,
        review: ReviewQueue | None = None,
        prompt: Prompt | None = None,
    ) -> None:
        self.distiller = distiller
        self.conversations = conversations
        self.journal = journal
        self.review = review
        self.prompt = prompt
        self.progress = Progress()
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._stop = False

    @property
    def enabled(self) -> bool:
        return self.distiller.model is not None

    def start(self) -> None:
        """Work through the journal's queue in the background (no-op without a model)."""
        if self.enabled and self._task is None:
            self._task = asyncio.create_task(self._loop(), name="annotator")

    def wake(self) -> None:
        """New sessions were queued (live chats): look at the journal again."""
        self._wake.set()

    async def stop(self) -> None:
        self._stop = True
        self._wake.set()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def requeue(self, session_ids: Sequence[str] | None = None) -> list[str]:
        """Failed sessions (all, or those named) go back on the queue."""
        failed = await self.journal.with_model("failed")
        chosen = [s for s in failed if session_ids is None or s in session_ids]
        await self.journal.set_model(chosen, "queued")
        self._wake.set()
        return chosen

    async def run(
        self, stop: Callable[[], bool] = lambda: False, on_session: Callable[[Progress], None] | None = None
    ) -> Progress:
        """Annotate every queued session now (``epmem annotate``); stops between sessions."""
        queue = await self.journal.with_model("queued")
        self.progress.queued += len(queue)
        for sid in queue:
            if stop() or self._stop:
                break
            await self._one(sid)
            if on_session is not None:
                on_session(self.progress)
        return self.progress

    async def _loop(self) -> None:
        while not self._stop:
            progress = await self.run()
            if progress.queued and self.prompt is not None:
                await self._tell_owner(progress)
            self._wake.clear()
            await self._wake.wait()

    async def _one(self, session_id: str) -> None:
        self.progress.current = session_id
        try:
            found = await self.conversations.sessions([session_id])
            if not found:  # erased since it was queued (/forget)
                await self.journal.forget([session_id])
                return
            outcome = await self.distiller.annotate_with_retries(found[0])
            ok = outcome.state == "annotated"
            await self.journal.set_model([session_id], "done" if ok else "failed")
            if ok:
                self.progress.done += 1
            else:
                self.progress.failed += 1
                self.progress.errors[session_id] = list(outcome.errors)
        finally:
            self.progress.current = None

    async def _tell_owner(self, progress: Progress) -> None:
        waiting = await self.review.waiting() if self.review is not None else 0
        text = f"The model has been through your import: {progress.done} sessions annotated, {progress.failed} failed"
        text += " (/reannotate to try again)." if progress.failed else "."
        if waiting:
            text += f" {waiting} facts wait for your review: /review"
        try:
            assert self.prompt is not None
            await self.prompt(text)
        except Exception:
            log.exception("annotator.prompt_failed")
