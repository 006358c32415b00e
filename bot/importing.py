"""``epmem ingest`` and ``epmem annotate`` as the owner runs them: stages, Ctrl-C, and what to say.

The stages themselves are the library's (epmem.ingest.pipeline). What lives here is the part a
person at a terminal meets: the first Ctrl-C asks the import to stop at the next safe point
(between two sessions: everything written so far is whole, and the journal knows it), a second
one stops at once (still safe to resume: a half-written batch is rewritten next time), and the
closing lines say what was done, what is left, and how to finish it.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from epmem.ingest import ImportJournal, ImportReport

from bot.runtime import Runtime

#: set when an import leaves facts for the owner's review: `epmem run` tells the owner on start.
REVIEW_PROMPT_FLAG = "review_prompt"


def open_journal(runtime: Runtime) -> ImportJournal:
    """The import journal (in the state database, beside the overlay; opened with the runtime)."""
    return runtime.journal


@dataclass
class Interrupts:
    """SIGINT as a request: the first one sets :attr:`requested`, the second cancels ``task``."""

    notify: Callable[[str], None]
    requested: bool = False
    task: asyncio.Task[object] | None = None
    _count: int = field(default=0, repr=False)

    def __call__(self) -> bool:
        return self.requested

    def _on_signal(self) -> None:
        self._count += 1
        if self._count == 1:
            self.requested = True
            self.notify("stopping at the next safe point (Ctrl-C again to stop at once; either way nothing is lost)")
        elif self.task is not None:
            self.task.cancel()

    @contextmanager
    def installed(self) -> Iterator[None]:
        loop = asyncio.get_running_loop()
        self.task = asyncio.current_task()
        try:
            loop.add_signal_handler(signal.SIGINT, self._on_signal)
        except (NotImplementedError, RuntimeError):  # not the main thread, or no signals here
            yield
            return
        try:
            yield
        finally:
            loop.remove_signal_handler(signal.SIGINT)


def next_after_import() -> str:
    """The last line of an import: what to do next (the platforms' settings from the registry)."""
    from bot.platforms import nothing_to_serve_hint

    return (
        "next: review what the delegate is unsure of with `epmem chat --owner` then /review; "
        f"go live: {nothing_to_serve_hint()}, then epmem run"
    )


def summary_lines(report: ImportReport, source: str, data_dir: str, pending_facts: int, command: str) -> list[str]:
    """What the owner reads at the end of an import (and of an interrupted one)."""
    lines: list[str] = []
    if report.interrupted:
        lines.append(
            f"interrupted after {report.sessions} sessions ({report.written} written, "
            f"{report.extracted} distilled into {report.facts} facts); nothing is lost. "
            f"To finish, run the same command again: {command}"
        )
    else:
        new = report.written
        lines.append(
            f"imported {report.sessions} sessions ({new} new), {report.turns} turns, {report.facts} facts "
            f"from {source} into {data_dir}"
        )
    if report.resumed_facts:
        lines.append(
            f"resumed: extracted the facts of {report.resumed_facts} sessions an earlier import had left without them"
        )
    if report.queued:
        lines.append(
            f"{report.queued} sessions wait for the model: `epmem run` annotates them in the background "
            f"(/annotations shows how far it is), or `epmem annotate` does it now"
        )
    if pending_facts:
        lines.append(
            f"{pending_facts} facts wait for your review (until you decide, only the people who heard them said are told them back): "
            f"/review in your chat with the bot, or `epmem chat --owner` then /review"
        )
    if report.unread:
        n = report.unread
        lines.append(
            f"{n} statement{'s' * (n != 1)} could not be turned into facts (kept in the chat history, "
            f"not in what the delegate tells; /remember what should be):"
        )
        lines += [f'  {u.session_id} turn {u.turn} ({u.speaker}): "{u.quote}"' for u in report.unread_first]
        if n > len(report.unread_first):
            lines.append(f"  ... and {n - len(report.unread_first)} more")
        lines.append("  all of them: `epmem facts unread`")
    if not report.interrupted:
        lines.append(next_after_import())
    return lines
