"""Chat history into memory: ``epmem ingest`` and ``epmem annotate``.

Every user-caused failure (a malformed export, a locked data folder) is one line on stderr and
exit 1, and a failed import writes nothing: the whole export is checked before the first write.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from epmem.ingest import IngestError

if TYPE_CHECKING:
    from epmem.ingest import Export, ExportSummary
    from epmem.policy import Policy

from bot.cli.common import err, fail, out, run, settings

#: imports with more sessions than this show a progress bar.
PROGRESS_FROM = 50


def ingest(
    path: Path = typer.Argument(
        ...,
        help="a Telegram result.json (or its folder), a Slack export (zip or "
        "folder), a JSONL of messages, or a scenario file",
    ),
    fmt: str = typer.Option(None, "--format", help="telegram|slack|jsonl|scenario (detected when omitted)"),
    facts: bool = typer.Option(True, "--facts/--no-facts", help="distil F2 facts from the new sessions"),
    owner: list[str] = typer.Option(
        [],
        "--owner",
        help="your own account in this export (telegram:123, "
        "slack:T01/U02), besides the policy's owner.identities; repeatable. A "
        "display name never makes anyone the owner",
    ),
) -> None:
    """Import chat history into the owner's memory (re-importing the same export adds nothing).

    The whole export is checked first (nothing is written if any of it is malformed); then
    sessions are written in batches, each followed by its facts. Ctrl-C stops at the next safe
    point; running the same command again finishes whatever is missing. With a model backend
    the facts wait for the model, which `epmem run` (or `epmem annotate`) works through in the
    background: the import never waits for it.
    """

    from epmem.ingest import ImportReport, ImportRun
    from epmem.policy import load_policy

    from bot.importing import REVIEW_PROMPT_FLAG, Interrupts, open_journal, summary_lines
    from bot.owner_policy import resolve_policy
    from bot.runtime import Runtime

    s = settings()
    policy = load_policy(resolve_policy(s))
    plain = not err.is_terminal
    export, checked = _checked(path, policy, fmt, owner, plain)
    interrupts = Interrupts(lambda line: err.print(line, markup=False, soft_wrap=True))

    async def go() -> tuple[ImportReport, int]:
        runtime = await Runtime.open(s, policy=policy)
        report = ImportReport()
        try:
            journal = open_journal(runtime)
            pipeline = ImportRun(
                runtime.conversations,
                journal,
                runtime.distiller if facts else None,
                source=str(path),
            )
            with _progress(err, checked.sessions, plain) as advance, interrupts.installed():
                try:
                    report = await pipeline.run(export.sessions(), interrupts, advance)
                except asyncio.CancelledError:
                    report.interrupted = True
            waiting = await runtime.review.waiting()
            if waiting and report.extracted and not report.queued:
                await runtime.overlay.set_flag(REVIEW_PROMPT_FLAG, f"Your import of {path.name} is in.")
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


def _checked(
    path: Path, policy: Policy, fmt: str | None, owner: list[str], plain: bool
) -> tuple[Export, ExportSummary]:
    """The export, checked whole before anything is written (one line and exit 1 if it is not
    right); the accounts named like the owner that were not taken for the owner are listed."""
    from epmem.ingest import open_export
    from epmem.policy import PolicyError

    try:
        export = open_export(path, policy, fmt, owner)
        if plain:
            err.print(f"checking {path}", markup=False, soft_wrap=True)
        checked = export.validate()
        if plain:
            err.print(
                f"checked {path}: {checked.messages} messages, {checked.sessions} sessions, nothing wrong",
                markup=False,
                soft_wrap=True,
            )
        for ident, name in sorted(checked.lookalikes.items()):
            err.print(
                f"not taken for you: {ident} ({name}), named like you; its messages are kept as someone "
                f"else's (if it is your account: --owner {ident})",
                markup=False,
                soft_wrap=True,
            )
    except IngestError as exc:
        fail(str(exc))
    except PolicyError as exc:  # a scenario file: bad YAML, or a scenario that does not check out
        for problem in exc.problems:
            err.print(f"error: {problem.render(exc.source)}", markup=False, soft_wrap=True)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        err.print(f"interrupted while checking {path}; nothing was written", markup=False, soft_wrap=True)
        raise typer.Exit(130) from None
    return export, checked


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
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=sessions < PROGRESS_FROM,
    ) as bar:
        tasks = {
            "turns": bar.add_task("writing sessions", total=sessions),
            "facts": bar.add_task("extracting facts", total=sessions),
        }
        yield lambda stage, n, _turns: bar.advance(tasks[stage], n)


def annotate(
    retry_failed: bool = typer.Option(
        False, "--retry-failed", help="also try again the sessions the model failed on before"
    ),
) -> None:
    """Let the model annotate the imported sessions waiting for it, now, with a progress bar.

    `epmem run` does the same in the background; this is for when the bot is not running.
    Ctrl-C stops between two sessions; running it again goes on where it stopped. A session
    the model fails on keeps its facts pending (nobody hears them) until the owner settles them
    (/review) or a later try succeeds.
    """

    from bot.importing import Interrupts
    from bot.runtime import Runtime

    s = settings()
    interrupts = Interrupts(lambda line: err.print(line, markup=False, soft_wrap=True))

    async def go() -> tuple[int, int, int, int]:
        runtime = await Runtime.open(s)
        try:
            annotator = runtime.annotator
            if not annotator.enabled:
                fail("the rules backend annotates as it imports: set EPMEM_LLM_BACKEND=openai to use a model")
            if retry_failed:
                await annotator.requeue()
            queued = len(await runtime.journal.with_model("queued"))
            with (
                Progress(
                    TextColumn("{task.description}"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TimeElapsedColumn(),
                    console=err,
                    disable=not err.is_terminal or not queued,
                ) as bar,
                interrupts.installed(),
            ):
                task = bar.add_task("annotating sessions", total=queued)
                try:
                    progress = await annotator.run(interrupts, lambda _p: bar.advance(task))
                except asyncio.CancelledError:
                    progress = annotator.progress
            left = len(await runtime.journal.with_model("queued"))
            return progress.done, progress.failed, left, await runtime.review.waiting()
        finally:
            await runtime.close()

    done, failed, left, waiting = run(go())
    out.print(
        f"annotated {done} sessions, {failed} failed"
        + (
            " (their facts stay pending: nobody hears them; `epmem annotate --retry-failed` tries again)"
            if failed
            else ""
        )
        + (f"; {left} still queued: run `epmem annotate` again to go on" if left else ""),
        markup=False,
        soft_wrap=True,
    )
    if waiting:
        out.print(f"{waiting} facts wait for your review: /review", markup=False)
    if interrupts.requested:
        raise typer.Exit(130)


def register(app: typer.Typer) -> None:
    app.command("ingest")(ingest)
    app.command("annotate")(annotate)
