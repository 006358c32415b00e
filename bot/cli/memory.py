"""What the delegate remembers: ``epmem load``, ``epmem facts``, ``epmem ingest``, ``epmem reindex``.

A failed import writes nothing: every file is checked before the first write.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from epmem.memory import Fact
from epmem.policy import load_policy

from bot.cli.common import err, out, run, settings, with_runtime
from bot.runtime import Runtime

facts_app = typer.Typer(no_args_is_help=True, help="List and import facts.")

#: imports with more sessions than this show a progress bar.
PROGRESS_FROM = 50


def load(scenario_file: Path) -> None:
    """Replace the memory with a scenario's gold facts and make its policy active."""
    from epmem.scenario import load_scenario

    from bot.runtime import activate_policy, load_scenario_memory

    s = settings()

    async def go() -> tuple[int, Path]:
        scenario = load_scenario(scenario_file)
        runtime = await Runtime.open(s, policy=scenario.effective_policy())
        try:
            n = await load_scenario_memory(runtime, scenario)
        finally:
            await runtime.close()
        target = s.data_dir / "policy.yaml"
        if s.policy is None:
            target = activate_policy(s, scenario, scenario_file)
        return n, target

    n, target = run(go())
    out.print(f"loaded {n} facts from {scenario_file} into {s.data_dir}; active policy: {s.policy or target}",
              markup=False)


@facts_app.command("list")
def facts_list(as_json: bool = typer.Option(False, "--json")) -> None:
    """Every fact in memory with its annotation."""
    s = settings()

    async def go(runtime: Runtime) -> list[Fact]:
        return list(await runtime.memory.all())

    facts = run(with_runtime(s, go))
    if as_json:
        for f in facts:
            sys.stdout.write(f.model_dump_json() + "\n")
        return
    table = Table("id", "event", "version", "category", "level", "domain", "state", "text")
    for f in facts:
        table.add_row(f.id, f.event_id, f.version, f.category or "", str(f.effective_level()), f.domain or "",
                      f.state, f.text)
    out.print(table)


@facts_app.command("import")
def facts_import(file: Path) -> None:
    """Add facts from a YAML list (the `facts:` shape of a scenario, canary optional)."""
    from bot.facts_file import read_facts_file

    s = settings()

    async def go() -> int:
        policy = load_policy(s.policy_path())
        facts = read_facts_file(file, policy)
        runtime = await Runtime.open(s, policy=policy)
        try:
            await runtime.memory.add(facts)
        finally:
            await runtime.close()
        return len(facts)

    n = run(go())
    out.print(f"imported {n} facts from {file} into {s.data_dir}", markup=False)


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
    from epmem.ingest import read_export
    from epmem.ingest import write_sessions

    s = settings()

    async def go() -> tuple[Any, int]:
        policy = load_policy(s.policy_path())
        sessions = read_export(path, policy, fmt)
        runtime = await Runtime.open(s, policy=policy)
        try:
            memory = runtime.conversations
            before = await memory.existing([x.id for x in sessions])
            new = [x for x in sessions if x.id not in before]
            turns = sum(len(x.turns) for x in sessions)
            show = len(sessions) >= PROGRESS_FROM and err.is_terminal
            with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                          console=err, disable=not show) as bar:
                task = bar.add_task("importing turns", total=turns)
                stats = await write_sessions(memory, sessions, lambda _s, t: bar.advance(task, t))
                n_facts = 0
                if facts and new:
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
              f"from {path} into {s.data_dir}", markup=False)


def reindex() -> None:
    """Rebuild every vector with the configured embedder (after changing EPMEM_EMBEDDER)."""
    from bot.reindex import reindex_all

    s = settings()
    counts = run(reindex_all(s))
    out.print(f"reindexed {counts['sessions']} sessions, {counts['turns']} turns and {counts['facts']} facts "
              f"in {s.data_dir}", markup=False)


def register(app: typer.Typer) -> None:
    app.command()(load)
    app.add_typer(facts_app, name="facts")
    app.command("ingest")(ingest)
    app.command("reindex")(reindex)
