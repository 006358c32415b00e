"""What the delegate remembers: ``epmem load``, ``epmem facts``, ``epmem reindex`` (``epmem ingest`` is in imports.py).

A failed import writes nothing: every file is checked before the first write.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.table import Table

from epmem.ingest import Unread
from epmem.memory import Fact

from bot.cli.common import HELP_MARKUP, out, run, settings, with_runtime
from bot.owner_policy import resolve_policy
from bot.runtime import Runtime

facts_app = typer.Typer(no_args_is_help=True, rich_markup_mode=HELP_MARKUP, help="List and import facts.")


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
    out.print(
        f"loaded {n} facts from {scenario_file} into {s.data_dir}; active policy: {s.policy or target}", markup=False
    )


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
        table.add_row(
            f.id, f.event_id, f.version, f.category or "", str(f.effective_level()), f.domain or "", f.state, f.text
        )
    out.print(table)


@facts_app.command("unread")
def facts_unread(clear: bool = typer.Option(False, "--clear", help="forget the list once you have read it")) -> None:
    """What imports could not turn into facts: session, turn, who said it and a quote.

    Nothing anyone said is lost silently (docs/DESIGN.md sec. 6.2): these statements are in the chat
    history but in no fact, so the delegate tells nobody about them; /remember what should be."""
    s = settings()

    async def go(runtime: Runtime) -> tuple[list[Unread], int]:
        listed = await runtime.journal.unread()
        return listed, (await runtime.journal.clear_unread() if clear else 0)

    listed, cleared = run(with_runtime(s, go))
    if not listed:
        out.print(
            "every imported statement was turned into a fact or is filler (questions, greetings, cues)", markup=False
        )
        return
    table = Table("session", "turn", "who", "said")
    for u in listed:
        table.add_row(u.session_id, str(u.turn), u.speaker, u.quote)
    out.print(table)
    if cleared:
        out.print(f"cleared {cleared}", markup=False)


@facts_app.command("import")
def facts_import(file: Path) -> None:
    """Add facts from a YAML list (the `facts:` shape of a scenario, canary optional)."""
    from bot.facts_file import import_facts_file

    s = settings()
    n = run(import_facts_file(s, resolve_policy(s), file))
    out.print(f"imported {n} facts from {file} into {s.data_dir}", markup=False)


def reindex() -> None:
    """Rebuild every vector with the configured embedder (after changing EPMEM_EMBEDDER)."""
    from bot.reindex import reindex_all

    s = settings()
    counts = run(reindex_all(s))
    out.print(
        f"reindexed {counts['sessions']} sessions, {counts['turns']} turns and {counts['facts']} facts in {s.data_dir}",
        markup=False,
    )


def register(app: typer.Typer) -> None:
    app.command()(load)
    app.add_typer(facts_app, name="facts")
    app.command("reindex")(reindex)
