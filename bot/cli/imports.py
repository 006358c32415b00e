"""Chat history into memory: ``epmem ingest`` and ``epmem annotate``.

Every user-caused failure (a malformed export, a locked data folder) is one line on stderr and
exit 1, and a failed import writes nothing: the whole export is checked before the first write.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from epmem.ingest import IngestError

from bot.cli.common import err, fail, out, run, settings

#: imports with more sessions than this show a progress bar.
PROGRESS_FROM = 50


def ingest(
    path: Path = typer.Argument(..., help="a Telegram result.json (or its folder), a Slack export (zip or "
                                          "folder), a JSONL of messages, or a scenario file"),
    fmt: str = typer.Option(None, "--format", help="telegram|slack|jsonl|scenario (detected when omitted)"),
    facts: bool = typer.Option(True, "--facts/--no-facts", help="distil F2 facts from the new sessions"),
) -> None:
    """Import chat history into the owner's memory (re-importing the same export adds nothing).

    The whole export is checked first (nothing is written if any of it is malformed); then
    sessions are written in batches, each followed by its facts. Ctrl-C stops at the next safe
    point; running the same command again finishes whatever is missing. With a model backend
    the facts wait for the model, which `epmem run` (or `epmem annotate`) works through in the
    background: the import never waits for it.
    """

    from epmem.ingest import open_export
    from epmem.ingest import ImportReport, ImportRun
    from epmem.policy import load_policy

    from bot.importing import Interrupts, open_journal, summary_lines
    from bot.runtime import Runtime

    s = settings()
    policy = load_policy(s.policy_path())
    plain = not err.is_terminal
    try:
        export = open_export(path, policy, fmt)
        if plain:
            err.print(f"checking {path}", markup=False, soft_wrap=True)
        checked = export.validate()
    except IngestError as exc:
        fail(str(exc))
    interrupts = Interrupts(lambda line: err.print(line, markup=False, soft_wrap=True))

    async def go() -> tuple[ImportReport, int]:
        runtime = await Runtime.open(s, policy=policy)
        report = ImportReport()
        try:
            journal = await open_journal(runtime)
            pipeline = ImportRun(runtime.conversations, journal, runtime.distiller if facts else None,  # type: ignore[arg-type]
                                 source=str(path))
            with _progress(err, checked.sessions, plain) as advance, interrupts.installed():
                try:
                    report = await pipeline.run(export.sessions(), interrupts, advance)
                except asyncio.CancelledError:
                    report.interrupted = True
            waiting = await runtime.review.waiting() if runtime.review is not None else 0
            return report, waiting
        finally:
            await runtime.close()

    report, waiting = run(go())
    command = "epmem ingest " + str(path) + (f" --format {fmt}" if fmt else "") + ("" if facts else " --no-facts")
    lines = summary_lines(report, str(path), str(s.data_dir), 0 if report.queued else waiting, command)
    for line in lines:
        (err if report.interrupted else out).print(line, markup=False, soft_wrap=True)
    if report.interrupted:
        raise typer.Exit(130)


@contextmanager
def _progress(err: Console, sessions: int, plain: bool) -> Iterator[Callable[[str, int, int], None]]:
    """A bar on a terminal; elsewhere a line when each stage starts and every tenth of the way."""
    if plain:
        done = {"turns": 0, "facts": 0}
        step = max(1, sessions // 10)

        def line(stage: str, n: int, _turns: int) -> None:
            before = done[stage]
            done[stage] += n
            if before == 0 or done[stage] // step != before // step or done[stage] == sessions:
                label = "writing sessions" if stage == "turns" else "extracting facts"
                err.print(f"{label}: {done[stage]}/{sessions} sessions", markup=False)

        yield line
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, disable=sessions < PROGRESS_FROM) as bar:
        tasks = {"turns": bar.add_task("writing sessions", total=sessions),
                 "facts": bar.add_task("extracting facts", total=sessions)}
        yield lambda stage, n, _turns: bar.advance(tasks[stage], n)


def register(app: typer.Typer) -> None:
    app.command("ingest")(ingest)
