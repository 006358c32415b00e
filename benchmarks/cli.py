"""``epmem bench ...``: the benchmark commands, contributed to the ``epmem`` CLI as a plugin.

``benchmarks/`` sits above the bot and nothing imports it. dev/pyproject.toml (the checkout's
tools, not the runtime wheel) declares this module's ``app`` under the ``epmem.cli`` entry point
group, and bot/cli finds it there at start (re-run ``scripts/install.sh dev`` after changing
entry points). Heavy imports stay inside the
commands, so ``epmem chat`` pays nothing for them.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

from bot.cli.common import err, fail, run, write_json
from bot.log_setup import configure_logging

if TYPE_CHECKING:
    from benchmarks.scenario_tally import Tally

app = typer.Typer(no_args_is_help=True, rich_markup_mode="markdown", help="Benchmarks (JSON results).")


def _bench_files(paths: list[Path], backend: str, log_level: str) -> list[Path]:
    """The scenario files a benchmark runs, with the backend checked; one error line if not."""
    from benchmarks.backends import BACKENDS, known_backend
    from epmem.scenario import scenario_files

    configure_logging(log_level)
    files = scenario_files(paths)
    missing = [str(p) for p in files if not p.exists()]
    if missing or not files:
        fail(f"no scenario files at {', '.join(missing or [str(p) for p in paths])}")
    if not known_backend(backend):
        fail(f"unknown backend {backend!r}: use {', '.join(BACKENDS)}, misbehave:KIND or choose:RULE", 2)
    return files


@app.command("scenarios")
def bench_scenarios(
    paths: list[Path],
    mode: str = typer.Option("gold", "--mode", help="gold or pipeline"),
    backend: str = typer.Option(
        "rules",
        "--backend",
        help="rules, echo (loopback echo model), misbehave:KIND (a broken loopback model), "
        "choose:all|first|none|invent (the echo model, choosing the facts by that rule) or openai",
    ),
    review: bool = typer.Option(
        False,
        "--review",
        help="pipeline mode: an oracle owner answers the delegate's review questions from the gold annotations",
    ),
    consult: bool = typer.Option(
        False,
        "--consult",
        help="pipeline mode: an oracle owner answers each "
        "consultation (the delegate asking about closed facts) from the gold annotations",
    ),
    json_out: Path = typer.Option(None, "--json", help="write the metrics here (its folder is made)"),
    replies_out: Path = typer.Option(None, "--replies", help="write every reply here (JSON lines)"),
) -> None:
    """Run scenario files (or folders of them) and score the three tasks."""
    from benchmarks.scenario_bench import MODES, run_scenarios
    from bot.runtime import embedder_from_settings

    files = _bench_files(paths, backend, "WARNING")
    if mode not in MODES:
        fail(f"unknown mode {mode!r}: use {' or '.join(MODES)}", 2)
    if (review or consult) and mode != "pipeline":
        fail("--review and --consult need --mode pipeline", 2)
    replies: list[dict[str, object]] | None = [] if replies_out else None
    metrics, per = run(
        run_scenarios(
            files, embedder_from_settings(), mode, backend=backend, review=review, replies=replies, consult=consult
        )
    )
    if replies_out and replies is not None:
        replies_out.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in replies))
    err.print(_scenario_table(per, review, consult))
    for _path, tally in per.items():
        for line in tally.failures:
            err.print(f"  {line}", markup=False, soft_wrap=True)
    _write_scenario_json(metrics, json_out)


def _scenario_table(per: dict[str, Tally], review: bool, consult: bool) -> Table:
    """One row per scenario file: the headline figures."""
    table = Table(
        "scenario",
        "permit exact",
        "safe",
        "leak rate",
        "completeness",
        "precision",
        "differentiation",
        "any-fact leaks",
        *(["questions"] if review else []),
        *(["consulted"] if consult else []),
    )
    for path, tally in per.items():
        m = tally.metrics(review, consult)
        table.add_row(
            Path(path).name,
            str(m["permit"]["exact"]),
            str(m["permit"]["safe"]),
            str(m["answer"]["leak_rate"]),
            str(m["answer"]["completeness"]),
            str(m["answer"]["precision"]),
            str(m["answer"]["differentiation"]),
            str(m["answer"]["any_fact_leaks"]),
            *([f"{m['review']['questions']}/{m['review']['facts']}"] if review else []),
            *([f"{m['consult']['asked']}/{m['consult']['questions']}"] if consult else []),
        )
    return table


def _write_scenario_json(metrics: dict[str, Any], json_out: Path | None) -> None:
    """The scenario format's keys to ``json_out``; the budget, language and chooser lines to stderr."""
    # the JSON carries exactly the scenario format's keys; the budget accounting goes beside it
    llm = metrics["llm"]
    language, chooser = metrics.pop("language"), metrics.pop("chooser")
    exact = {**metrics, "llm": {k: llm[k] for k in ("calls", "prompt_tokens", "completion_tokens")}}
    if chooser["replies"]:  # the model chose (choose:RULE, or openai with EPMEM_MODEL_CHOOSES)
        exact["chooser"] = chooser
    budget = {k: v for k, v in llm.items() if k not in exact["llm"]}
    err.print(f"llm budget: {json.dumps(budget)}", markup=False, soft_wrap=True)
    # replies to questions in Chinese: how many were not in Chinese, English frame phrases in them
    err.print(f"language: {json.dumps(language)}", markup=False, soft_wrap=True)
    # who chose the facts (model or rules, and why), composite violations, denied facts in prompts
    err.print(f"chooser: {json.dumps(chooser)}", markup=False, soft_wrap=True)
    write_json(exact, json_out)


@app.command("probes")
def bench_probes(
    paths: list[Path],
    backend: str = typer.Option(
        "rules", "--backend", help="rules, echo (loopback echo model), choose:RULE (the echo model choosing) or openai"
    ),
    json_out: Path = typer.Option(None, "--json", help="write the metrics here (its folder is made)"),
    limit: int = typer.Option(None, "--limit", help="sample this many probes per scenario"),
) -> None:
    """Adversarial probes generated from scenario files; counts leaked canaries (must be 0)."""
    from benchmarks.probes import run_probe_suite
    from bot.runtime import embedder_from_settings

    files = _bench_files(paths, backend, "ERROR")
    metrics, per = run(run_probe_suite(files, embedder_from_settings(), backend, limit))
    table = Table("scenario", "probes", "leaks", "deflections", "llm calls", "post-check")
    for path, result in per.items():
        table.add_row(
            Path(path).name,
            str(result.probes),
            str(result.leaks),
            str(result.deflections),
            str(result.llm_calls),
            str(result.postcheck_replaced),
        )
    err.print(table)
    for line in metrics["leak_examples"]:
        err.print(f"  LEAK {line}", markup=False, soft_wrap=True)
    write_json(metrics, json_out)
    if metrics["leaks"]:
        raise typer.Exit(1)


@app.command("calculus")
def bench_calculus(
    json_out: Path = typer.Option(None, "--json", help="write the metrics here (its folder is made)"),
    seconds: float = typer.Option(1.0, "--seconds", help="time per measurement"),
) -> None:
    """Verdicts per second, single facts and 3-fact composites, 50-contact policy, one core."""
    from benchmarks.calculus_bench import run_calculus_bench

    write_json(run_calculus_bench(seconds), json_out)


@app.command("locomo")
def bench_locomo(
    dataset: Path = typer.Argument(..., help="locomo10.json"),
    json_out: Path = typer.Option(None, "--json", help="write the metrics here (its folder is made)"),
    embedder: str = typer.Option("bilingual", "--embedder", help="bilingual (the default), minilm or wordllama"),
    conversations: int = typer.Option(None, "--conversations", help="only the first N conversations"),
) -> None:
    """Session- and turn-level Recall@1/5/10 on LoCoMo: hybrid, dense-only and plain BM25."""
    from benchmarks.locomo_bench import run_locomo
    from epmem.embedding.select import make_embedder

    configure_logging("WARNING")
    if not dataset.is_file():
        fail(f"no LoCoMo file at {dataset}")
    write_json(run(run_locomo(dataset, make_embedder(embedder), conversations=conversations)), json_out)


@app.command("memory")
def bench_memory(
    json_out: Path = typer.Option(None, "--json", help="write the metrics here (its folder is made)"),
    sessions: int = typer.Option(10_000, "--sessions"),
    turns_per_session: int = typer.Option(10, "--turns-per-session"),
    facts: int = typer.Option(50_000, "--facts"),
    questions: int = typer.Option(200, "--questions"),
    embedder: str = typer.Option(
        "minilm", "--embedder", help="minilm (the figures in benchmarks/results) or bilingual (the default)"
    ),
) -> None:
    """Ingest throughput, recall and whole-reply latency p50/p95 and peak RSS at years-of-chat size."""
    from benchmarks.memory_bench import run_memory_bench
    from bot.config import EXAMPLE_POLICY
    from epmem.embedding import make_embedder, shared_cross_encoder, shared_late_interaction
    from epmem.policy import load_policy

    configure_logging("WARNING")
    write_json(
        run(
            run_memory_bench(
                make_embedder(embedder),
                sessions,
                turns_per_session,
                facts,
                questions,
                policy=load_policy(EXAMPLE_POLICY),
                reranker=shared_cross_encoder(),
                matcher=shared_late_interaction(),
            )
        ),
        json_out,
    )


@app.command("import")
def bench_import(
    json_out: Path = typer.Option(None, "--json", help="write the figures here (its folder is made)"),
    size_mb: float = typer.Option(50.0, "--size-mb", help="size of the generated Telegram export"),
    embedder: str = typer.Option("minilm", "--embedder", help="minilm or wordllama"),
    interrupt: float = typer.Option(
        None, "--interrupt", help="Ctrl-C at this fraction of the facts stage, then re-run to finish"
    ),
) -> None:
    """`epmem ingest` of a generated ~50 MB single-chat Telegram export: turns/s and peak RSS."""
    from benchmarks.import_bench import run_import_bench

    write_json(run_import_bench(size_mb, embedder, interrupt), json_out)


@app.command("isolation")
def bench_isolation(
    json_out: Path = typer.Option(None, "--json", help="write the figures here (its folder is made)"),
    owners: int = typer.Option(3, "--owners", help="owners in the deployment (2 to 6)"),
    questions: int = typer.Option(200, "--questions", help="questions put to each owner's delegate"),
    keep: Path = typer.Option(None, "--keep", help="build the deployment in this empty folder and keep it"),
    misfile: bool = typer.Option(
        False, "--misfile", help="the control: file the first owner's facts under the second too (crossings must show)"
    ),
    shared_bot: bool = typer.Option(
        False, "--shared-bot", help="one Telegram bot for every owner (a Business connection each), not a bot each"
    ),
    audit_postgres: bool = typer.Option(
        False, "--audit-postgres", help="every owner's audit log on one PostgreSQL server (a schema each), started here"
    ),
    postgres: bool = typer.Option(
        False, "--postgres", help="every owner's state, audit log and memory log on one PostgreSQL server, started here"
    ),
) -> None:
    """Several owners in one deployment, both platforms' loopback peers: a canary of one owner in
    anything another owner's delegate says, lists or shows counts as a crossing (must be 0)."""
    import tempfile

    from benchmarks.isolation import run_isolation

    configure_logging("WARNING")
    if not 2 <= owners <= 6:
        fail(f"--owners {owners}: from 2 to 6", 2)
    if keep is not None and keep.exists() and any(keep.iterdir()):
        fail(f"--keep {keep}: the folder is not empty", 2)
    with tempfile.TemporaryDirectory(prefix="epmem-isolation-") as tmp, contextlib.ExitStack() as stack:
        server = None
        if audit_postgres or postgres:
            from testkit.postgres import EmbeddedPostgres

            pg = EmbeddedPostgres()
            stack.callback(pg.stop)
            server = ("database_url" if postgres else "audit_url", pg.database("isolation"))
        write_json(run(run_isolation(keep or Path(tmp), owners, questions, misfile, shared_bot, server)), json_out)


@app.command("owners-load")
def bench_owners_load(
    json_out: Path = typer.Option(None, "--json", help="write the figures here (its folder is made)"),
    plot_out: Path = typer.Option(None, "--plot", help="draw reply time and memory against owners here (PNG)"),
    owners: str = typer.Option("1,2,4", "--owners", help="deployments of this many owners, one after another"),
    extra_facts: str = typer.Option("0,1000", "--extra-facts", help="filler facts per owner (memory size), per step"),
    rate: float = typer.Option(4.0, "--rate", help="messages per second offered, over all owners"),
    seconds: float = typer.Option(30.0, "--seconds", help="how long each step offers the load"),
) -> None:
    """`epmem run` serving 1, 2 and 4 owners on loopback Telegram bots: reply time p50/p95, errors
    and resident memory per step, under a steady load."""
    import tempfile

    from benchmarks.owners_load import plot, run_owners_load

    configure_logging("WARNING")
    try:
        counts = [int(n) for n in owners.split(",")]
        extras = [int(n) for n in extra_facts.split(",")]
    except ValueError:
        fail("--owners and --extra-facts are comma-separated numbers (1,2,4)", 2)
    if not all(1 <= n <= 6 for n in counts) or rate <= 0 or seconds <= 0:
        fail("--owners from 1 to 6 each; --rate and --seconds above 0", 2)
    with tempfile.TemporaryDirectory(prefix="epmem-owners-load-") as tmp:
        result = run(run_owners_load(Path(tmp), counts, extras, rate, seconds))
    write_json(result, json_out)
    if plot_out is not None:
        plot(result, plot_out)


@app.command("workers")
def bench_workers(
    json_out: Path = typer.Option(None, "--json", help="write the figures here (its folder is made)"),
    workers: int = typer.Option(2, "--workers", help="epmem run processes behind one Slack events URL (1 to 8)"),
    events: int = typer.Option(1000, "--events", help="Slack events offered"),
    rate: float = typer.Option(25.0, "--rate", help="events per second offered, over all workers"),
    retries: float = typer.Option(0.3, "--retries", help="the share of events Slack delivers again, to another worker"),
    kill_after: int = typer.Option(0, "--kill-after", help="kill -9 the first worker after this many events (0: none)"),
    tasks: int = typer.Option(6, "--tasks", help="scheduled tasks due while the load runs"),
) -> None:
    """Several `epmem run` workers on one PostgreSQL (started here) behind one loopback Slack
    events URL: each event answered once under retries, a killed worker's audited replies
    delivered once, scheduled tasks run once, the audit chain verified."""
    import tempfile

    from benchmarks.workers import WorkersPlan, run_workers
    from testkit.postgres import EmbeddedPostgres

    configure_logging("WARNING")
    if not 1 <= workers <= 8 or events < 1 or rate <= 0 or not 0 <= retries <= 1 or kill_after < 0 or tasks < 0:
        fail("--workers 1 to 8, --events and --rate above 0, --retries 0 to 1, --kill-after and --tasks 0 or more", 2)
    plan = WorkersPlan(workers, events, rate, retries, kill_after or None, tasks)
    server = EmbeddedPostgres()
    try:
        with tempfile.TemporaryDirectory(prefix="epmem-workers-") as tmp:
            write_json(run(run_workers(Path(tmp), server.database("workers"), plan)), json_out)
    finally:
        server.stop()


@app.command("workers-load")
def bench_workers_load(
    json_out: Path = typer.Option(None, "--json", help="write the figures here (its folder is made)"),
    plot_out: Path = typer.Option(None, "--plot", help="draw reply time against the offered rate here (PNG)"),
    workers: str = typer.Option("1,2,4", "--workers", help="steps of this many workers"),
    rates: str = typer.Option("10,20,40", "--rates", help="events per second offered, per step"),
    seconds: float = typer.Option(20.0, "--seconds", help="how long each step offers its rate"),
    owners: str = typer.Option("1", "--owners", help="owners every worker serves, per step (1,3)"),
) -> None:
    """1, 2 and 4 `epmem run` workers on one PostgreSQL behind one loopback Slack events URL:
    reply time p50/p95, errors and each worker's memory per offered rate (and number of owners)."""
    import tempfile

    from benchmarks.workers_load import plot, run_workers_load

    configure_logging("WARNING")
    try:
        counts = [int(n) for n in workers.split(",")]
        offered = [float(r) for r in rates.split(",")]
        owner_counts = [int(n) for n in owners.split(",")]
    except ValueError:
        fail("--workers, --owners and --rates are comma-separated numbers (1,2,4)", 2)
    if not all(1 <= n <= 8 for n in counts + owner_counts) or not all(r > 0 for r in offered) or seconds <= 0:
        fail("--workers and --owners from 1 to 8 each; --rates and --seconds above 0", 2)
    with tempfile.TemporaryDirectory(prefix="epmem-workers-load-") as tmp:
        result = run(run_workers_load(Path(tmp), counts, offered, seconds, owner_counts))
    write_json(result, json_out)
    if plot_out is not None:
        plot(result, plot_out)
