"""What happens later survives a restart and fires on time; the tests move the clock, not sleep.

Each test acts, closes the runtime, opens it again on the same folder (a restart), and then
drives the scheduler with an injected clock: ``run_due`` at a moment just before and just after
the due time. One test lets APScheduler itself fire a rebuilt job (its ``next_run_time`` moved
to now), to show the alarm clock is wired to the same code.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime, time, timedelta, timezone
from pathlib import Path

import pytest

from bot.runtime import Runtime
from bot.scheduler import Scheduler, next_occurrence, parse_digest_time
from bot.tasks import Task
from connectors.base import Action
from testkit.house import COVER, HOUSE_Q, TRUTH, house_runtime, reopen
from testkit.runtime import ask

NOW = datetime.now(timezone.utc)


@dataclass
class Clock:
    now: datetime = NOW

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Notes:
    """The owner's channel: what the scheduler told the owner."""

    texts: list[str] = field(default_factory=list)

    async def __call__(self, text: str, actions: tuple[Action, ...] = ()) -> None:
        self.texts.append(text)


@pytest.fixture
async def house(tmp_path: Path) -> AsyncIterator[list[Runtime]]:
    """A one-slot box so a test can swap in the reopened runtime and still get it closed."""
    box = [await house_runtime(tmp_path / "data")]
    try:
        yield box
    finally:
        await box[0].close()


async def owner(runtime: Runtime, text: str) -> str:
    return (await runtime.agent.handle(ask("owner", text))).text or ""


async def said(runtime: Runtime, who: str, question: str = HOUSE_Q) -> str:
    return (await runtime.agent.handle(ask(who, question))).text or ""


def scheduler(runtime: Runtime, clock: Clock, notes: Notes | None = None, digest: bool = False) -> Scheduler:
    return Scheduler(
        runtime.owner,
        runtime.commands,
        notes,
        clock=clock,
        digest_at=time(8, 0, tzinfo=timezone.utc) if digest else None,
    )


async def test_exception_with_expiry_survives_restart_and_expires_on_time(house: list[Runtime]) -> None:
    reply = await owner(house[0], "/allow f1 to raj for 7d")
    until = datetime.fromisoformat((await house[0].audit.records(kind="policy_change"))[-1].body["until"])
    assert "until" in reply and TRUTH in await said(house[0], "raj")
    house[0] = await reopen(house[0])
    clock = Clock(until - timedelta(seconds=1))
    sched = scheduler(house[0], clock)
    await sched.ensure_digest()
    assert await sched.run_due() == []
    assert TRUTH in await said(house[0], "raj")
    clock.now = until
    assert await sched.run_due() == ["exception:1"]
    assert await house[0].overlay.exceptions() == []
    assert TRUTH not in await said(house[0], "raj")
    record = (await house[0].audit.records(kind="policy_change"))[-1]
    assert record.body["action"] == "expire" and record.body["target"] == "fact:f1" and record.body["by"] == "scheduler"
    assert await sched.run_due() == []  # fired once


async def test_embargo_lifts_on_its_date_after_restart(house: list[Runtime]) -> None:
    day = (NOW + timedelta(days=10)).date().isoformat()
    reply = await owner(house[0], f"/level f1 4 from {day}")
    assert reply.startswith("Scheduled ") and "/level fact:f1 4" in reply
    assert "fact:f1 4" in await owner(house[0], "/scheduled")
    house[0] = await reopen(house[0])
    due = datetime.fromisoformat(day).replace(tzinfo=timezone.utc)
    clock, notes = Clock(due - timedelta(minutes=1)), Notes()
    sched = scheduler(house[0], clock, notes)
    assert await sched.run_due() == []
    assert TRUTH not in await said(house[0], "raj")
    clock.now = due
    [fired] = await sched.run_due()
    assert fired.startswith("task:")
    assert TRUTH in await said(house[0], "raj")
    assert notes.texts and "Fact f1 is now level 4" in notes.texts[0]
    change = (await house[0].audit.records(kind="policy_change"))[-1]
    assert change.body["action"] == "level" and change.body["by"] == f"scheduler:{fired.replace(':', '-')}"
    assert "No scheduled changes" in await owner(house[0], "/scheduled")


async def test_cancelled_embargo_never_fires(house: list[Runtime]) -> None:
    reply = await owner(house[0], "/domain ana work in 2d")
    number = reply.split()[1].rstrip(":")
    assert "Cancelled" in await owner(house[0], f"/unschedule {number}")
    sched = scheduler(house[0], Clock(NOW + timedelta(days=3)))
    assert await sched.run_due() == []
    assert house[0].policy.contacts["ana"].domain == "life"


async def test_held_replies_survive_restart_then_one_is_approved_and_one_expires(house: list[Runtime]) -> None:
    await owner(house[0], "/approval 2")
    first = await house[0].agent.handle(ask("leo", HOUSE_Q))
    second = await house[0].agent.handle(ask("ana", HOUSE_Q))
    first_id = (first.to_owner or "").split()[2]
    second_id = (second.to_owner or "").split()[2]
    house[0] = await reopen(house[0])
    sent: list[tuple[str, str]] = []

    async def console_send(chat_id: str, text: str, actions: tuple[Action, ...] = ()) -> None:
        sent.append((chat_id, text))

    house[0].outbox.attach("console", console_send)
    assert first_id in await owner(house[0], "/pending") and second_id in await owner(house[0], "/pending")
    assert "Sent held reply" in await owner(house[0], f"/approve {first_id}")
    assert len(sent) == 1 and TRUTH in sent[0][1]

    held = await house[0].approvals.get(second_id)
    assert held is not None
    clock, notes = Clock(held.expires_at - timedelta(seconds=1)), Notes()
    sched = scheduler(house[0], clock, notes)
    assert await sched.run_due() == []
    clock.now = held.expires_at
    assert await sched.run_due() == [f"approval:{second_id}"]
    assert notes.texts == [f"Held reply {second_id} to ana expired unsent. They asked: \u201c{HOUSE_Q}\u201d"]
    expired = await house[0].audit.records(kind="approval_expired")
    assert [r.body["approval"] for r in expired] == [second_id]
    assert len(sent) == 1  # nothing went to Ana
    assert [d.recipient for d in await house[0].audit.who_knows("f1")] == ["leo"]


async def test_apscheduler_jobs_are_rebuilt_at_start_and_fire(house: list[Runtime]) -> None:
    await owner(house[0], "/allow f1 to raj for 3d")
    await owner(house[0], "/level raj 2 in 5d")
    await owner(house[0], "/approval 2")
    held = await house[0].agent.handle(ask("leo", HOUSE_Q))
    approval_id = (held.to_owner or "").split()[2]
    clock = Clock()
    house[0] = await reopen(house[0], clock)
    sched = house[0].scheduler  # the one `epmem run` starts, which every owner command re-arms
    await sched.start()
    try:
        assert sched.aps is not None
        jobs = {job.id: job.next_run_time for job in sched.aps.get_jobs()}
        tasks = {t.kind: t for t in await house[0].tasks.pending()}
        until = (await house[0].overlay.exceptions())[0][1].until
        assert until is not None
        assert jobs == {
            "exception:1": until,
            f"task:{tasks['command'].id}": tasks["command"].due_at,
            f"task:{tasks['digest'].id}": tasks["digest"].due_at,
            f"approval:{approval_id}": (await house[0].approvals.get(approval_id)).expires_at,  # type: ignore[union-attr]
        }
        # let the alarm clock fire the exception's job now, with our clock past its expiry
        clock.now = until + timedelta(seconds=1)
        sched.aps.get_job("exception:1").modify(next_run_time=datetime.now(timezone.utc))
        await sched.wait_for_runs(1)
        assert await house[0].overlay.exceptions() == []
        assert "exception:1" not in {job.id for job in sched.aps.get_jobs()}
        # an owner command re-arms the jobs at once
        await owner(house[0], "/deny f2 to kim for 1d")
        assert "exception:2" in {job.id for job in sched.aps.get_jobs()}
    finally:
        await sched.stop()


async def test_daily_digest_names_who_asked_what_was_said_and_withheld(house: list[Runtime]) -> None:
    clock, notes = Clock(NOW), Notes()
    sched = scheduler(house[0], clock, notes, digest=True)
    await sched.ensure_digest()
    [digest] = await house[0].tasks.pending("digest")
    assert digest.due_at == next_occurrence(time(8, 0, tzinfo=timezone.utc), NOW)
    assert COVER in await said(house[0], "raj")
    await said(house[0], "kim", "Did Maya get any money from work recently?")
    house[0] = await reopen(house[0])
    sched = scheduler(house[0], clock, notes, digest=True)
    await sched.ensure_digest()
    assert len(await house[0].tasks.pending("digest")) == 1  # not doubled by the restart
    clock.now = digest.due_at + timedelta(minutes=2)
    assert await sched.run_due() == [f"task:{digest.id}"]
    [text] = notes.texts
    assert "2 messages from 2 people" in text
    assert f"raj asked: {HOUSE_Q}" in text and COVER in text and "withheld: f1" in text
    assert "kim asked: Did Maya get any money from work recently?" in text and "(deflected)" in text
    [following] = await house[0].tasks.pending("digest")
    assert following.due_at == digest.due_at + timedelta(days=1)
    # the next digest only covers what came after this one: a quiet day sends nothing
    clock.now = following.due_at
    await sched.run_due()
    assert len(notes.texts) == 1


async def test_annotation_retry_hook_and_backoff(house: list[Runtime]) -> None:
    clock = Clock(NOW)
    sched = scheduler(house[0], clock)
    number = await sched.add_task("annotation_retry", NOW, {"facts": ["n1"]})
    assert await sched.run_due() == [f"task:{number}"]
    task = await house[0].tasks.get(number)
    assert task is not None and task.state == "pending" and task.attempts == 1
    assert task.result == "no handler registered" and task.due_at == NOW + timedelta(minutes=1)
    seen: list[Task] = []

    async def annotate(t: Task) -> bool:
        seen.append(t)
        return True

    sched.register("annotation_retry", annotate)
    assert await sched.run_due() == []  # not due yet
    clock.now = NOW + timedelta(minutes=1)
    await sched.run_due()
    assert [t.payload for t in seen] == [{"facts": ["n1"]}]
    assert (await house[0].tasks.get(number)).state == "done"  # type: ignore[union-attr]


def test_digest_time_parsing() -> None:
    assert parse_digest_time("off") is None
    at = parse_digest_time("07:30")
    assert at == time(7, 30, tzinfo=timezone.utc)
    morning = datetime(2026, 6, 19, 7, 30, tzinfo=timezone.utc)
    assert next_occurrence(time(7, 30, tzinfo=timezone.utc), morning) == morning + timedelta(days=1)
    assert next_occurrence(time(7, 30, tzinfo=timezone.utc), morning - timedelta(seconds=1)) == morning


async def test_the_digest_says_how_many_facts_wait_for_review(house: list[Runtime]) -> None:
    from tests.bot.test_review_command import PENDING, pending

    await house[0].memory.add([pending(*p) for p in PENDING[:3]])
    clock, notes = Clock(NOW), Notes()
    sched = scheduler(house[0], clock, notes, digest=True)
    await sched.ensure_digest()
    [digest] = await house[0].tasks.pending("digest")
    clock.now = digest.due_at
    await sched.run_due()  # a quiet day, but facts wait: the digest is sent for them
    [text] = notes.texts
    assert "3 facts wait for your review" in text and "/review" in text
    await owner(house[0], "/review p1 private")
    [following] = await house[0].tasks.pending("digest")
    clock.now = following.due_at
    await sched.run_due()
    assert "2 facts wait for your review" in notes.texts[1]
    [record] = [r for r in await house[0].audit.records(kind="digest")][-1:]
    assert record.body["waiting_review"] == 2 and record.body["sent"] is True
