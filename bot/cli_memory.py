"""``epmem ingest``, ``epmem reindex``, ``epmem bench locomo`` and ``epmem bench memory``.

Kept apart from bot/cli.py so the memory commands can grow without touching the chat and audit
commands; cli.py registers these functions. The CLI helpers are imported inside each command:
cli.py imports this module while it is itself being imported (also as ``__main__``).

Every user-caused failure (a malformed export, a locked data folder) is one line on stderr and
exit 1, and a failed import writes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from epmem.ingest import IngestError


#: imports with more sessions than this show a progress bar.
PROGRESS_FROM = 50


def ingest(
    path: Path = typer.Argument(..., help="a Telegram result.json (or its folder), a Slack export (zip or "
                                          "folder), a JSONL of messages, or a scenario file"),
    fmt: str = typer.Option(None, "--format", help="telegram|slack|jsonl|scenario (detected when omitted)"),
    facts: bool = typer.Option(True, "--facts/--no-facts", help="distil F2 facts from the new sessions"),
) -> None:
    """Import chat history into the owner's memory (re-importing the same export adds nothing).

    Sessions and turns are written first; then each session that was not there before is
    distilled into facts by the configured backend (only new ones: a re-import costs no LLM call).
    """
    from bot.cli import err, fail, out, run, settings

    from epmem.ingest import read_export
    from epmem.ingest.apply import write_sessions
    from epmem.policy.model import load_policy

    from bot.runtime import Runtime

    s = settings()
    policy = load_policy(s.policy_path())
    try:
        sessions = read_export(path, policy, fmt)
    except IngestError as exc:
        fail(str(exc))

    async def go() -> tuple[Any, int]:
        runtime = await Runtime.open(s, policy=policy)
        try:
            memory = runtime.conversations
            assert memory is not None
            before = await memory.existing([x.id for x in sessions])
            new = [x for x in sessions if x.id not in before]
            turns = sum(len(x.turns) for x in sessions)
            show = len(sessions) >= PROGRESS_FROM and err.is_terminal
            with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                          console=err, disable=not show) as bar:
                task = bar.add_task("importing turns", total=turns)
                stats = await write_sessions(memory, sessions, lambda _s, t: bar.advance(task, t))
                n_facts = 0
                if facts and runtime.distiller is not None and new:
                    task = bar.add_task("distilling facts", total=len(new))
                    for x in new:
                        outcome = await runtime.distiller.ingest(x, background=False)
                        n_facts += len(outcome.facts)
                        bar.advance(task)
            return stats, n_facts
        finally:
            await runtime.close()

    stats, n_facts = run(go())
    out.print(f"imported {stats.sessions} sessions ({stats.new_sessions} new), {stats.turns} turns, {n_facts} facts "
              f"from {path} into {s.data_dir}", markup=False, soft_wrap=True)


def reindex() -> None:
    """Rebuild every vector with the configured embedder (after changing EPMEM_EMBEDDER)."""
    from bot.cli import out, run, settings

    from bot.reindex import reindex_all

    s = settings()
    counts = run(reindex_all(s))
    out.print(f"reindexed {counts['sessions']} sessions, {counts['turns']} turns and {counts['facts']} facts "
              f"in {s.data_dir}", markup=False, soft_wrap=True)


def bench_locomo(
    dataset: Path = typer.Argument(..., help="locomo10.json"),
    json_out: Path = typer.Option(None, "--json", help="write the metrics here"),
    embedder: str = typer.Option("minilm", "--embedder", help="minilm or wordllama"),
    conversations: int = typer.Option(None, "--conversations", help="only the first N conversations"),
) -> None:
    """Session- and turn-level Recall@1/5/10 on LoCoMo: hybrid, dense-only and plain BM25."""
    from bot.cli import write_json, fail, run

    from benchmarks.locomo_bench import run_locomo
    from epmem.embedding.select import make_embedder

    from bot.logging import configure_logging

    configure_logging("WARNING")
    if not dataset.is_file():
        fail(f"no LoCoMo file at {dataset}")
    write_json(run(run_locomo(dataset, make_embedder(embedder), conversations=conversations)), json_out)


def bench_memory(
    json_out: Path = typer.Option(None, "--json", help="write the metrics here"),
    sessions: int = typer.Option(10_000, "--sessions"),
    turns_per_session: int = typer.Option(10, "--turns-per-session"),
    facts: int = typer.Option(50_000, "--facts"),
    questions: int = typer.Option(200, "--questions"),
) -> None:
    """Ingest throughput, recall latency p50/p95 and peak RSS at years-of-chat size."""
    from bot.cli import write_json, run

    from benchmarks.memory_bench import run_memory_bench
    from epmem.embedding.select import make_embedder

    from bot.logging import configure_logging

    configure_logging("WARNING")
    write_json(run(run_memory_bench(make_embedder("minilm"), sessions, turns_per_session, facts, questions)), json_out)


def register(app: typer.Typer, bench_app: typer.Typer) -> None:
    app.command("ingest")(ingest)
    app.command("reindex")(reindex)
    bench_app.command("locomo")(bench_locomo)
    bench_app.command("memory")(bench_memory)
