"""``epmem``: a thin synchronous CLI over the async library.

Every failure a user can cause (a broken policy, an unknown contact, a locked or corrupted data
folder) ends in one readable line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from epmem.audit.log import AuditCorrupted
from epmem.policy.model import STRANGER_ID, PolicyError, load_policy, policy_json_schema
from epmem.store.base import StoreLocked, StoreMismatch

from bot.config import Settings
from bot.logging import configure_logging

T = TypeVar("T")

app = typer.Typer(no_args_is_help=True, add_completion=False, help="EP-Mem Delegate: a privacy-aware delegate.")
policy_app = typer.Typer(no_args_is_help=True, help="Check and describe policy files.")
audit_app = typer.Typer(no_args_is_help=True, help="Read, verify and export the audit log.")
facts_app = typer.Typer(no_args_is_help=True, help="List and import facts.")
bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks (JSON results).")
app.add_typer(policy_app, name="policy")
app.add_typer(audit_app, name="audit")
app.add_typer(facts_app, name="facts")
app.add_typer(bench_app, name="bench")

err = Console(stderr=True, highlight=False)
out = Console(highlight=False)


def fail(message: str, code: int = 1) -> NoReturn:
    err.print(f"error: {message}", markup=False, soft_wrap=True)
    raise typer.Exit(code)


def _errors() -> tuple[type[BaseException], ...]:
    from epmem.embedding.minilm import EmbedderUnavailable

    from bot.config import ConfigError

    return (StoreLocked, StoreMismatch, AuditCorrupted, EmbedderUnavailable, ConfigError)


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine, turning the errors a user can cause into one line and exit 1."""
    try:
        return asyncio.run(coro)
    except PolicyError as exc:
        for problem in exc.problems:
            err.print(f"error: {problem.render(exc.source)}", markup=False, soft_wrap=True)
        raise typer.Exit(1) from None
    except _errors() as exc:
        fail(str(exc))


def settings(quiet: bool = False) -> Settings:
    """``quiet`` commands (an interactive chat) log warnings only unless EPMEM_LOG_LEVEL says."""
    s = Settings()
    level = "WARNING" if quiet and "log_level" not in s.model_fields_set else s.log_level
    configure_logging(level, s.log_format)
    return s


async def with_runtime(s: Settings, fn: Callable[[Any], Awaitable[T]]) -> T:
    from bot.runtime import Runtime

    runtime = await Runtime.open(s)
    try:
        return await fn(runtime)
    finally:
        await runtime.close()


# --------------------------------------------------------------------------- chat


@app.command()
def chat(
    as_: str = typer.Option(None, "--as", help="contact id to speak as, or 'stranger'"),
    owner: bool = typer.Option(False, "--owner", help="speak as the owner (commands, full recall)"),
) -> None:
    """Talk to the delegate on the console, one message per line."""
    from connectors.console import ConsoleConnector

    if owner == (as_ is not None):
        fail("give exactly one of --as CONTACT_ID (or --as stranger) and --owner", 2)
    s = settings(quiet=True)

    async def go(runtime: Any) -> int:
        policy = runtime.policy
        if owner:
            identity = policy.owner.identities[0] if policy.owner.identities else "console:owner"
            who = f"the owner ({policy.owner.name})"
        elif as_ == STRANGER_ID:
            identity, who = "console:unknown-stranger", "a stranger"
        elif as_ in policy.contacts:
            identity, who = f"console:{as_}", f"{policy.contacts[as_].name} ({as_})"
        else:
            known = ", ".join(sorted(policy.contacts)) or "none"
            fail(f"unknown contact {as_!r} in --as; known contacts: {known} (or --as stranger, --owner)")
        interactive = sys.stdin.isatty()
        if interactive:
            err.print(f"Speaking to {policy.owner.name}'s delegate as {who}. Ctrl-D to quit.")
        console = ConsoleConnector(identity, runtime.agent.handle, max_chars=s.max_message_chars,
                                   prompt="> " if interactive else "")
        await console.start()
        return console.rejected

    rejected = run(with_runtime(s, go))
    raise typer.Exit(1 if rejected and not sys.stdin.isatty() else 0)


@app.command("run")
def run_service(
    as_: str = typer.Option(None, "--as", help="console fallback only: speak as this contact (default: the owner)"),
) -> None:
    """Serve every platform whose credentials are set (Telegram, Slack; else the console),
    with the scheduler, until SIGINT/SIGTERM. Logs are JSON lines on stdout."""
    from bot.platforms import PlatformError, PlatformSettings
    from bot.runtime import Runtime
    from bot.serve import StartError, serve

    s = Settings()
    try:
        platforms = PlatformSettings()
        connected = platforms.telegram or platforms.slack
    except PlatformError as exc:
        fail(str(exc))
    # with platforms, stdout is the log stream; on the console fallback it is the chat, and
    # the logs (warnings only, unless EPMEM_LOG_LEVEL says) go to stderr as for `epmem chat`.
    level = s.log_level if connected or "log_level" in s.model_fields_set else "WARNING"
    configure_logging(level, s.log_format, stream=sys.stdout if connected else None)
    identity = "console:owner" if as_ is None else ("console:unknown-stranger" if as_ == STRANGER_ID
                                                    else f"console:{as_}")
    try:
        run(serve(lambda: Runtime.open(s), platforms, console_identity=identity))
    except StartError as exc:
        fail(str(exc))


@app.command()
def preview(contact: str, question: str) -> None:
    """What CONTACT (or a+b for a group chat) would be told; audited as a preview."""
    s = settings()

    async def go(runtime: Any) -> str:
        ids = contact.split("+")
        for cid in ids:
            if cid != STRANGER_ID and cid not in runtime.policy.contacts:
                fail(f"unknown contact {cid!r}")
        reply, audit_id, _ = await runtime.owner.preview(ids, question)
        return f"{reply}\n(preview audit id {audit_id})"

    out.print(run(with_runtime(s, go)), markup=False)


# --------------------------------------------------------------------------- load


@app.command()
def load(scenario_file: Path) -> None:
    """Replace the memory with a scenario's gold facts and make its policy active."""
    from epmem.scenario import load_scenario

    from bot.runtime import Runtime, activate_policy, load_scenario_memory

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
    out.print(f"loaded {n} facts from {scenario_file} into {s.data_dir}; active policy: {s.policy or target}")


# --------------------------------------------------------------------------- policy


@policy_app.command("check")
def policy_check(file: Path) -> None:
    """Report every problem in a policy file (with line numbers); exit 1 if any."""
    try:
        policy = load_policy(file)
    except PolicyError as exc:
        for problem in exc.problems:
            err.print(f"error: {problem.render(exc.source)}", markup=False, soft_wrap=True)
        raise typer.Exit(1) from None
    out.print(f"{file}: ok ({len(policy.contacts)} contacts, {len(policy.groups)} groups, "
              f"{len(policy.categories)} categories, {len(policy.exceptions)} exceptions)")


@policy_app.command("schema")
def policy_schema() -> None:
    """Print the policy's JSON Schema."""
    sys.stdout.write(json.dumps(policy_json_schema(), indent=2) + "\n")


# --------------------------------------------------------------------------- facts


@facts_app.command("list")
def facts_list(as_json: bool = typer.Option(False, "--json")) -> None:
    """Every fact in memory with its annotation."""
    s = settings()

    async def go(runtime: Any) -> list[Any]:
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
    from bot.runtime import Runtime

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
    out.print(f"imported {n} facts from {file} into {s.data_dir}")


# --------------------------------------------------------------------------- bench


def _bench_files(paths: list[Path], backend: str, log_level: str) -> list[Path]:
    """The scenario files a benchmark runs, with the backend checked; one error line if not."""
    from benchmarks.backends import BACKENDS
    from epmem.scenario import scenario_files

    configure_logging(log_level)
    files = scenario_files(paths)
    missing = [str(p) for p in files if not p.exists()]
    if missing or not files:
        fail(f"no scenario files at {', '.join(missing or [str(p) for p in paths])}")
    if backend not in BACKENDS:
        fail(f"unknown backend {backend!r}: use {', '.join(BACKENDS)}", 2)
    return files


def write_json(data: object, json_out: Path | None) -> None:
    text = json.dumps(data, indent=2)
    if json_out:
        json_out.write_text(text + "\n")
    sys.stdout.write(text + "\n")


@bench_app.command("scenarios")
def bench_scenarios(
    paths: list[Path],
    mode: str = typer.Option("gold", "--mode", help="gold or pipeline"),
    backend: str = typer.Option("rules", "--backend", help="rules, echo (loopback echo model) or openai"),
    review: bool = typer.Option(False, "--review", help="pipeline mode: an oracle owner answers the "
                                "delegate's review questions from the gold annotations"),
    json_out: Path = typer.Option(None, "--json", help="write the metrics here"),
) -> None:
    """Run scenario files (or folders of them) and score the three tasks."""
    from benchmarks.scenario_bench import MODES, run_scenarios

    from bot.runtime import embedder_from_settings

    files = _bench_files(paths, backend, "WARNING")
    if mode not in MODES:
        fail(f"unknown mode {mode!r}: use {' or '.join(MODES)}", 2)
    if review and mode != "pipeline":
        fail("--review needs --mode pipeline", 2)
    metrics, per = run(run_scenarios(files, embedder_from_settings(), mode, backend=backend, review=review))
    table = Table("scenario", "permit exact", "safe", "leak rate", "completeness", "precision", "differentiation",
                  *(["questions"] if review else []))
    for path, tally in per.items():
        m = tally.metrics(review)
        table.add_row(Path(path).name, str(m["permit"]["exact"]), str(m["permit"]["safe"]),
                      str(m["answer"]["leak_rate"]), str(m["answer"]["completeness"]), str(m["answer"]["precision"]),
                      str(m["answer"]["differentiation"]),
                      *([f"{m['review']['questions']}/{m['review']['facts']}"] if review else []))
    err.print(table)
    for path, tally in per.items():
        for line in tally.failures:
            err.print(f"  {line}", markup=False, soft_wrap=True)
    # the JSON carries exactly the scenario format's keys; the budget accounting goes beside it
    llm = metrics["llm"]
    exact = {**metrics, "llm": {k: llm[k] for k in ("calls", "prompt_tokens", "completion_tokens")}}
    budget = {k: v for k, v in llm.items() if k not in exact["llm"]}
    err.print(f"llm budget: {json.dumps(budget)}", markup=False, soft_wrap=True)
    write_json(exact, json_out)


@bench_app.command("probes")
def bench_probes(
    paths: list[Path],
    backend: str = typer.Option("rules", "--backend", help="rules, echo (loopback echo model) or openai"),
    json_out: Path = typer.Option(None, "--json", help="write the metrics here"),
    limit: int = typer.Option(None, "--limit", help="sample this many probes per scenario"),
) -> None:
    """Adversarial probes generated from scenario files; counts leaked canaries (must be 0)."""
    from benchmarks.probes import run_probe_suite

    from bot.runtime import embedder_from_settings

    files = _bench_files(paths, backend, "ERROR")
    metrics, per = run(run_probe_suite(files, embedder_from_settings(), backend, limit))
    table = Table("scenario", "probes", "leaks", "deflections", "llm calls", "post-check")
    for path, result in per.items():
        table.add_row(Path(path).name, str(result.probes), str(result.leaks), str(result.deflections),
                      str(result.llm_calls), str(result.postcheck_replaced))
    err.print(table)
    for line in metrics["leak_examples"]:
        err.print(f"  LEAK {line}", markup=False, soft_wrap=True)
    write_json(metrics, json_out)
    if metrics["leaks"]:
        raise typer.Exit(1)


@bench_app.command("calculus")
def bench_calculus(json_out: Path = typer.Option(None, "--json"),
                   seconds: float = typer.Option(1.0, "--seconds", help="time per measurement")) -> None:
    """Verdicts per second, single facts and 3-fact composites, 50-contact policy, one core."""
    from benchmarks.calculus_bench import run_calculus_bench

    write_json(run_calculus_bench(seconds), json_out)


# memory commands (ingest, reindex, bench locomo, bench memory) live in bot/cli_memory.py,
# the audit's (list, show, verify, export, who-knows, serve) in bot/cli_audit.py
from bot.cli_audit import register as _register_audit_commands  # noqa: E402
from bot.cli_memory import register as _register_memory_commands  # noqa: E402

_register_memory_commands(app, bench_app)
_register_audit_commands(audit_app)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
