"""Two ``epmem run`` processes on one PostgreSQL behind one Slack events URL (benchmarks/workers.py
at a size CI affords; ``epmem bench workers`` runs the 1,000 events of the acceptance figures).

Slack delivers a third of the events twice, to the other worker, at once or a moment later; the
first worker is killed (SIGKILL) in the middle. Every event is answered at most once; every
reply either worker audited is delivered exactly once (the killed worker's by the other, after
its lease ran out); each scheduled task runs once; the audit chain verifies."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.workers import WorkersPlan, run_workers
from testkit.postgres import EmbeddedPostgres

pytestmark = pytest.mark.timeout(600)


async def test_two_workers_answer_each_event_once_through_retries_and_a_kill(
    tmp_path: Path, postgres_server: EmbeddedPostgres
) -> None:
    plan = WorkersPlan(workers=2, events=90, rate=10.0, retry_share=0.35, kill_after=45, tasks=3)
    result = await run_workers(tmp_path, postgres_server.database("workers"), plan)
    assert result["events_delivered_more_than_once"] >= 20  # the retries happened
    assert result["answered_twice_or_more"] == 0 and result["audited_twice"] == 0
    # every reply audited, before the kill or after, posted once and recorded delivered once;
    # the killed worker's replies in flight (posted, the answer lost) by the other worker
    # (half of them posted before the kill, half still on their way: found, or sent now, once)
    taken = result["taken_over"]
    assert taken.get("found_posted", 0) >= 2 and taken.get("sent_now", 0) >= 2 and not taken.get("kept")
    assert result["audited_replies_delivered_once"] == result["audited_replies"] >= 60
    assert result["replies_recorded_delivered_once"] == result["audited_replies"]
    assert result["unanswered_and_audited"] == 0
    # what the killed worker acknowledged and never audited is lost with it: a few at most
    assert result["answered_once"] + result["unanswered"] == plan.events and result["unanswered"] <= 9
    assert result["tasks_run_once"] == plan.tasks and result["tasks_run_twice"] == 0
    assert result["audit_verify"]["first_bad"] is None and result["audit_verify"]["records"] >= 120


async def test_without_a_shared_database_two_workers_answer_twice(
    tmp_path: Path, postgres_server: EmbeddedPostgres
) -> None:
    """The control: the same load on two workers that do not share their state (each its own
    SQLite files) answers every retried event twice; what the shared database prevents shows."""
    plan = WorkersPlan(workers=2, events=30, rate=15.0, retry_share=1.0, kill_after=None, tasks=0)
    result = await run_workers(tmp_path, postgres_server.database("workers"), plan, shared=False)
    assert result["answered_twice_or_more"] >= 20


async def test_the_load_steps_measure_each_worker_count_for_two_owners_and_draw_the_plot(tmp_path: Path) -> None:
    """Two owners, each with their own Slack app, served by every worker (their memories and
    chains in schemas of their own on the one server): each event answered once by its owner's
    delegate, each owner's chain verifies; the plot is drawn."""
    from benchmarks.workers_load import plot, run_workers_load

    result = await run_workers_load(tmp_path / "run", [1, 2], [6.0], 2.0, owners=[2])
    assert [(s["owners"], s["workers"], s["events"]) for s in result["steps"]] == [(2, 1, 12), (2, 2, 12)]
    for step in result["steps"]:
        assert step["unanswered"] == 0 and step["answered_twice_or_more"] == 0 and step["audit_verified"]
        assert step["answered_by_another_owner"] == 0
        assert 0 < step["reply_ms_p50"] <= step["reply_ms_p95"] and step["rss_mb_per_worker"] > 100
    assert result["steps"][1]["rss_mb_all_workers"] > result["steps"][0]["rss_mb_all_workers"]
    plot(result, tmp_path / "load.png")
    assert (tmp_path / "load.png").read_bytes().startswith(b"\x89PNG")
