"""Load over 1, 2 and 4 workers on one PostgreSQL (issue 42, "Load"): reply time and errors per
offered rate, and each worker's memory, with the run of benchmarks/workers.py as one step.

Each step is a fresh database and fresh worker folders: the workers replay the owner's memory
from the write log, take events round robin (a tenth delivered twice, to another worker), and
answer; nothing is killed. What grows with the number of owners and the size of each owner's
memory in one process is benchmarks/owners_load.py's; this one is what more processes buy on
one machine, which here has two cores: past two workers they share the cores, and the figures
say what that costs rather than what a larger machine would gain.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.workers import WorkersPlan, run_workers
from testkit.postgres import EmbeddedPostgres


async def run_workers_load(
    root: Path, workers: list[int], rates: list[float], seconds: float, owners: list[int] | None = None
) -> dict[str, Any]:
    """Every (owners, workers, rate) step in turn; ``owners``: owners each worker serves (the
    events round robin over them), [1] by default."""
    server = EmbeddedPostgres()
    steps = []
    try:
        for o in owners or [1]:
            for n in workers:
                for rate in rates:
                    events = max(1, round(rate * seconds))
                    plan = WorkersPlan(workers=n, events=events, rate=rate, retry_share=0.1, tasks=0, owners=o)
                    folder = root / f"o{o}-w{n}-r{rate:g}"
                    folder.mkdir(parents=True)
                    result = await run_workers(folder, server.database("load"), plan)
                    steps.append(_step(o, n, rate, result))
    finally:
        server.stop()
    return {"seconds_per_step": seconds, "steps": steps}


def _step(owners: int, workers: int, rate: float, result: dict[str, Any]) -> dict[str, Any]:
    rss = result.get("worker_rss_mb") or []
    return {
        "owners": owners,
        "workers": workers,
        "rate_per_s": rate,
        "events": result["events"],
        "offered_per_s": result["offered_per_s"],
        "reply_ms_p50": result["reply_ms"]["p50"],
        "reply_ms_p95": result["reply_ms"]["p95"],
        "unanswered": result["unanswered"],
        "answered_twice_or_more": result["answered_twice_or_more"],
        "answered_by_another_owner": result["answered_by_another_owner"],
        "audit_verified": result["audit_verify"]["first_bad"] is None,
        "rss_mb_per_worker": round(sum(rss) / len(rss), 1) if rss else None,
        "rss_mb_all_workers": round(sum(rss), 1) if rss else None,
    }


def plot(result: dict[str, Any], path: Path) -> None:
    """Reply time (p50, p95) against the offered rate, a line per worker count; and memory."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (latency, memory) = plt.subplots(1, 2, figsize=(11, 4.5))
    groups = sorted({(s.get("owners", 1), s["workers"]) for s in result["steps"]})
    for owners, n in groups:
        steps = sorted(
            (s for s in result["steps"] if (s.get("owners", 1), s["workers"]) == (owners, n)),
            key=lambda s: s["rate_per_s"],
        )
        xs = [s["rate_per_s"] for s in steps]
        who = f"{owners} owner{'s' * (owners > 1)}, {n} worker{'s' * (n > 1)}"
        (line,) = latency.plot(xs, [s["reply_ms_p50"] for s in steps], marker="o", label=who)
        latency.plot(xs, [s["reply_ms_p95"] for s in steps], marker="^", linestyle="--", color=line.get_color())
    labels = [f"{o}o/{n}w" for o, n in groups]
    peaks = [
        max(s["rss_mb_per_worker"] or 0 for s in result["steps"] if (s.get("owners", 1), s["workers"]) == g)
        for g in groups
    ]
    memory.bar(labels, peaks)
    latency.set(
        xlabel="events offered per second (all owners)",
        ylabel="reply time (ms): p50 solid, p95 dashed",
        title="Slack events through one load balancer",
    )
    latency.set_yscale("log")
    memory.set(xlabel="owners / workers", ylabel="resident memory per worker (MB)", title="memory of each worker")
    for ax in (latency, memory):
        ax.grid(alpha=0.3)
    latency.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
