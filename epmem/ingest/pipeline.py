"""An import as stages that survive interruption and size.

Sessions stream in (epmem.ingest.load.open_export), are written in batches (turns and session
points, the session point last), and each session's facts are extracted right after its batch
is written, so an interrupted import has whole sessions and whole fact sets, never half of one.
The journal (epmem.ingest.journal) records each finished stage; running the same import again
skips what is done and finishes what is missing: sessions not yet written, and written sessions
whose facts were never extracted (an import stopped during extraction, or one run with
``--no-facts``). With a model backend the facts wait ``pending`` and the session is queued in
the journal for background annotation: the import itself never calls the model, so a slow or
failing model cannot hold it up.

``stop()`` is polled at safe points (between sessions); when it says so, the import returns
with ``interrupted`` set and everything written so far consistent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from epmem.embedding.once import embedding_once
from epmem.ingest.distill import Distiller
from epmem.ingest.journal import ImportJournal
from epmem.ingest.unread import Unread
from epmem.memory.conversations import Conversations
from epmem.memory.sessions import Session

#: sessions embedded and written together (bounded memory: one batch at a time).
BATCH = 64
#: how many statements that became no fact an import report quotes (the journal keeps all).
UNREAD_QUOTED = 5


@dataclass(slots=True)
class ImportReport:
    #: sessions and turns the export holds (as far as the import got, when interrupted).
    sessions: int = 0
    turns: int = 0
    #: sessions written by this run.
    written: int = 0
    #: sessions complete before this run (turns and facts): nothing to do.
    already: int = 0
    #: sessions whose facts this run extracted, and how many of them an earlier run had written
    #: without facts (interrupted during extraction, or run with ``--no-facts``).
    extracted: int = 0
    resumed_facts: int = 0
    facts: int = 0
    #: sessions whose facts now wait for the model (background annotation).
    queued: int = 0
    interrupted: bool = False
    #: statements this run could not turn into facts (epmem/ingest/unread.py), and the first of
    #: them to quote (all are in the journal: ``epmem facts unread``).
    unread: int = 0
    unread_first: list[Unread] = field(default_factory=list)


Progress = Callable[[str, int, int], None]


@dataclass
class ImportRun:
    conversations: Conversations
    journal: ImportJournal
    #: None: sessions and turns only (``--no-facts``); their facts can be extracted by a later run.
    distiller: Distiller | None
    source: str = ""
    batch: int = BATCH

    async def run(
        self, sessions: Iterable[Session], stop: Callable[[], bool] = lambda: False, progress: Progress | None = None
    ) -> ImportReport:
        """``progress(stage, sessions_done, turns_done)``, stage ``turns`` or ``facts``.

        Each text (turn, statement) is embedded once in the whole run (epmem/embedding/once.py)."""
        with embedding_once():
            return await self._run(sessions, stop, progress)

    async def _run(
        self, sessions: Iterable[Session], stop: Callable[[], bool], progress: Progress | None
    ) -> ImportReport:
        report = ImportReport()
        batch: list[Session] = []
        for session in sessions:
            batch.append(session)
            if len(batch) >= self.batch:
                await self._batch(batch, report, stop, progress)
                batch = []
                if report.interrupted or stop():
                    report.interrupted = True
                    return report
        if batch:
            await self._batch(batch, report, stop, progress)
        return report

    async def _batch(
        self, batch: list[Session], report: ImportReport, stop: Callable[[], bool], progress: Progress | None
    ) -> None:
        ids = [s.id for s in batch]
        stored = await self.conversations.existing(ids)
        stages = await self.journal.stages(ids)
        missing = [s for s in batch if s.id not in stored]
        if missing:
            await self.conversations.add(missing)
        # recorded for every session of the batch: an older import may have stored it unrecorded
        await self.journal.turns_written(
            [(s.id, self.source, len(s.turns)) for s in batch if s.id not in stages or s.id not in stored]
        )
        report.sessions += len(batch)
        report.turns += sum(len(s.turns) for s in batch)
        report.written += len(missing)
        if progress is not None:
            progress("turns", len(batch), sum(len(s.turns) for s in batch))
        if self.distiller is None:
            return
        for s in batch:
            stage = stages.get(s.id)
            if stage is not None and stage.facts_done:
                report.already += s.id in stored
                if progress is not None:
                    progress("facts", 1, 0)
                continue
            if s.id in stored and stage is None and await self.distiller.memory.of_session(s.id):
                # stored by an import that predates the journal, facts and all
                await self.journal.facts_done(s.id, None)
                report.already += 1
                if progress is not None:
                    progress("facts", 1, 0)
                continue
            if stop():
                report.interrupted = True
                return
            outcome = await self.distiller.extract(s)
            queued = self.distiller.model is not None
            await self.journal.facts_done(s.id, "queued" if queued else None)
            report.extracted += 1
            report.resumed_facts += s.id in stored
            report.facts += len(outcome.facts)
            report.queued += queued
            await self.journal.record_unread(s.id, outcome.unread)
            report.unread += len(outcome.unread)
            report.unread_first += outcome.unread[: max(0, UNREAD_QUOTED - len(report.unread_first))]
            if progress is not None:
                progress("facts", 1, len(s.turns))
