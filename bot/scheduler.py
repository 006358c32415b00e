"""Everything that happens later: expiring exceptions, embargoes, held replies, the digest.

The source of truth is SQLite (the overlay's exceptions with ``until``, the task table, the
held replies). APScheduler (an ``AsyncIOScheduler`` on the bot's loop) is only the alarm clock:
at start, and after every owner command, :meth:`Scheduler.sync` rebuilds one date job per
pending item from those tables, so a restart loses nothing and a change is picked up at once.
Every job does the same thing, :meth:`Scheduler.run_due`: handle whatever is due *now* by the
injected clock. Tests move that clock and call ``run_due`` (or move a job's ``next_run_time``);
nothing here sleeps.

An item that was due while the bot was down fires at the next start (late, never lost). A task
that fails is retried with a growing delay; a task nobody handles (an ``annotation_retry``
before the annotator registers its hook) waits the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, time, timedelta, timezone
import structlog
from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from connectors.base import Action, Inbound
from epmem.audit import ApprovalExpiredRecord, ConsultationExpiredRecord, DigestRecord
from epmem.policy import OWNER_ID, Recipient, Resolved

from bot.clock import Clock, aware, utcnow
from bot.commands import CommandContext, CommandRegistry
from bot.digest import build_digest
from bot.quoting import quote
from bot.headsup import lines_for
from bot.services import OwnerServices
from bot.tasks import Task

log = structlog.get_logger(__name__)

#: deliver a note to the owner (digest, expiry notices); by default the outbox's.
Notify = Callable[[str, tuple[Action, ...]], Awaitable[object]]
#: handle one task; True when done, False to try again later.
TaskHook = Callable[[Task], Awaitable[bool]]

DIGEST_SINCE_FLAG = "digest_since"
_RETRY_BASE = timedelta(minutes=1)
_RETRY_MAX = timedelta(hours=6)
#: the job that looks at the tables now and then when several workers share them.
_POLL = "poll"


@dataclass(frozen=True, slots=True)
class Due:
    """One pending item: the key of its job and when it is due."""

    key: str
    at: datetime


def parse_digest_time(value: str) -> time | None:
    """``"08:00"`` -> 08:00 UTC; ``"off"`` -> None."""
    if value == "off":
        return None
    hour, minute = value.split(":")
    return time(int(hour), int(minute), tzinfo=timezone.utc)


def next_occurrence(at: time, after: datetime) -> datetime:
    """The first moment strictly after ``after`` whose UTC time of day is ``at``."""
    after = aware(after).astimezone(timezone.utc)
    candidate = datetime.combine(after.date(), at.replace(tzinfo=None), tzinfo=timezone.utc)
    while candidate <= after:
        candidate += timedelta(days=1)
    return candidate


class Scheduler:
    def __init__(
        self,
        owner: OwnerServices,
        commands: CommandRegistry,
        notify: Notify | None = None,
        *,
        clock: Clock = utcnow,
        digest_at: time | None = time(8, 0, tzinfo=timezone.utc),
        workers_lease: timedelta | None = None,
    ) -> None:
        """``workers_lease``: one of several workers on a shared database (bot/workers.py):
        each task is claimed before it runs (a worker that dies mid-run leaves it due again
        after this long), the digest is ensured under a lock, and the tables are polled, since
        another worker may have added what this one's alarm clock does not know."""
        self.owner = owner
        self.commands = commands
        self.notify: Notify = notify or owner.outbox.tell_owner
        self.clock = clock
        self.digest_at = digest_at
        self.workers_lease = workers_lease
        #: kind -> handler, for task kinds other parts of the bot own (``annotation_retry``).
        self.hooks: dict[str, TaskHook] = {}
        self.aps: AsyncIOScheduler | None = None
        self._lock = asyncio.Lock()
        self._runs = 0
        self._ran = asyncio.Condition()

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Make sure a digest is scheduled, start the alarm clock, and build its jobs."""
        await self.ensure_digest()
        self.aps = AsyncIOScheduler(
            timezone=timezone.utc,
            job_defaults={"misfire_grace_time": None, "coalesce": True, "max_instances": 1},
        )
        self.aps.start()
        if self.workers_lease is not None:
            poll = min(self.workers_lease.total_seconds(), 60.0)
            self.aps.add_job(self._wake, "interval", seconds=poll, id=_POLL)
        await self.sync()
        log.info("scheduler.started", jobs=len(self.aps.get_jobs()))

    async def stop(self) -> None:
        if self.aps is not None:
            aps, self.aps = self.aps, None
            aps.shutdown(wait=False)

    def register(self, kind: str, hook: TaskHook) -> None:
        """Handle tasks of ``kind`` (the annotator registers ``annotation_retry`` here)."""
        self.hooks[kind] = hook

    async def add_task(self, kind: str, due: datetime, payload: dict[str, object]) -> int:
        """Schedule work for later; durable at once, its job armed at once."""
        number = await self.owner.tasks.add(kind, due, payload)
        await self.sync()
        return number

    # ------------------------------------------------------------------ jobs

    async def pending(self) -> list[Due]:
        """Everything that will need doing, from the SQLite tables (the source of truth)."""
        items = [
            Due(f"exception:{n}", aware(e.until))
            for n, e in await self.owner.overlay.exceptions()
            if e.until is not None
        ]
        items += [Due(f"task:{t.id}", t.due_at) for t in await self.owner.tasks.pending()]
        items += [Due(f"approval:{h.id}", h.expires_at) for h in await self.owner.approvals.pending()]
        return sorted(items, key=lambda d: (d.at, d.key))

    async def sync(self) -> None:
        """Rebuild the alarm clock's jobs: one per pending item, none for anything else."""
        if self.aps is None:
            return
        wanted = {d.key: d.at for d in await self.pending()}
        for job in self.aps.get_jobs():
            if job.id not in wanted and job.id != _POLL:
                try:
                    job.remove()
                except JobLookupError:  # fired and removed meanwhile
                    pass
        for key, at in wanted.items():
            self.aps.add_job(self._wake, "date", run_date=at, id=key, replace_existing=True)

    async def _wake(self) -> None:
        try:
            await self.run_due()
        except Exception:
            log.exception("scheduler.run_failed")
        await self.sync()

    async def wait_for_runs(self, n: int, timeout: float = 5.0) -> None:
        """For tests that let APScheduler fire a job: wait until ``run_due`` ran ``n`` times."""
        async with self._ran:
            await asyncio.wait_for(self._ran.wait_for(lambda: self._runs >= n), timeout)

    # ------------------------------------------------------------------ firing

    async def run_due(self, now: datetime | None = None) -> list[str]:
        """Do everything due at ``now`` (the clock by default); return the keys handled."""
        async with self._lock:
            now = now or self.clock()
            fired = await self._expire_exceptions(now)
            fired += await self._expire_approvals(now)
            fired += await self._expire_consultations(now)
            for task in await self.owner.tasks.due(now):
                if self.workers_lease is not None and not await self.owner.tasks.claim(task, now + self.workers_lease):
                    continue  # another worker runs it
                fired.append(f"task:{task.id}")
                await self._run_task(task, now)
        async with self._ran:
            self._runs += 1
            self._ran.notify_all()
        if fired:
            log.info("scheduler.fired", items=fired)
        return fired

    async def _expire_exceptions(self, now: datetime) -> list[str]:
        overlay = self.owner.overlay
        fired = []
        for number, exc in await overlay.exceptions():
            if exc.until is None or aware(exc.until) > now:
                continue
            if await overlay.revoke(number) is None:
                continue
            kind, target = exc.target()
            await self.owner.record_change(
                {
                    "action": "expire",
                    "exception": number,
                    "effect": exc.effect,
                    "target": f"{kind}:{target}",
                    "who": exc.who,
                    "until": aware(exc.until).isoformat(),
                    "by": "scheduler",
                }
            )
            fired.append(f"exception:{number}")
        return fired

    async def _expire_approvals(self, now: datetime) -> list[str]:
        fired = []
        for held in await self.owner.approvals.expire_due(now):
            await self.owner.audit.write(
                ApprovalExpiredRecord(
                    approval=held.id,
                    platform=held.platform,
                    chat=held.chat_id,
                    contact=held.contact,
                    held_audit=held.audit_id,
                    question=held.question,
                    reply=None,
                ),
                contact=held.contact,
            )
            await self._tell_owner(
                f"Held reply {held.id} to {held.contact} expired unsent. They asked: \u201c{quote(held.question, 200)}\u201d"
            )
            fired.append(f"approval:{held.id}")
        return fired

    async def _expire_consultations(self, now: datetime) -> list[str]:
        """An unanswered consultation expires (its asker had their reply; the owner's later word
        about the facts still applies to later askers, only the follow-up is lost)."""
        service = self.owner.consultations
        if service is None:
            return []
        fired = []
        for c in await service.store.expire_due(now):
            await self.owner.audit.write(
                ConsultationExpiredRecord(
                    consultation=c.id,
                    platform=c.platform,
                    chat=c.chat_id,
                    contact=c.contact,
                    event=c.event_id,
                    facts=list(c.facts),
                    question=c.question,
                ),
                contact=c.contact,
            )
            fired.append(f"consultation:{c.id}")
        return fired

    async def _run_task(self, task: Task, now: datetime) -> None:
        tasks = self.owner.tasks
        try:
            if task.kind == "command":
                result = await self._run_command(task)
                await tasks.finish(task.id, "done", result, now)
                await self._tell_owner(f"Scheduled change {task.id} done: {task.payload.get('text')}\n{result}")
                return
            if task.kind == "digest":
                await self._send_digest(task, now)
                return
            hook = self.hooks.get(task.kind)
            if hook is not None and await hook(task):
                await tasks.finish(task.id, "done", "ok", now)
                return
            reason = "no handler registered" if hook is None else "handler asked to retry"
        except Exception as exc:
            log.exception("scheduler.task_failed", task=task.id, kind=task.kind)
            reason = f"failed: {type(exc).__name__}"
        delay = min(_RETRY_BASE * (2 ** min(task.attempts, 16)), _RETRY_MAX)
        await tasks.postpone(task.id, now + delay, reason)

    async def _run_command(self, task: Task) -> str:
        """Run a scheduled owner command as the owner, audited as done by this task."""
        text = str(task.payload.get("text", ""))
        policy = self.owner.policy
        who = f"scheduler:task-{task.id}"
        sender = Resolved(who, OWNER_ID, Recipient(OWNER_ID, 0, None, policy.owner.name, "owner"))
        inbound = Inbound(platform="scheduler", chat_id=who, chat_kind="direct", sender=who, text=text, audience=(who,))
        return await self.commands.run(text, self.owner, CommandContext(inbound, sender, caller="scheduler"))

    # ------------------------------------------------------------------ digest

    async def ensure_digest(self) -> None:
        """Exactly one pending digest, at the configured time of day (none when off)."""
        if self.workers_lease is None:
            await self._ensure_digest()
            return
        async with self.owner.tasks.ensuring():
            await self._ensure_digest()

    async def _ensure_digest(self) -> None:
        now = self.clock()
        pending = await self.owner.tasks.pending("digest")
        keep = None
        for task in pending:
            right_time = (
                self.digest_at is not None
                and keep is None
                and task.due_at.astimezone(timezone.utc).timetz().replace(second=0, microsecond=0) == self.digest_at
            )
            if right_time:
                keep = task
            else:
                await self.owner.tasks.finish(task.id, "cancelled", "digest time changed", now)
        if keep is None and self.digest_at is not None:
            await self.owner.tasks.add("digest", next_occurrence(self.digest_at, now), {})

    async def _send_digest(self, task: Task, now: datetime) -> None:
        overlay = self.owner.overlay
        raw = await overlay.get_flag(DIGEST_SINCE_FLAG)
        since = datetime.fromisoformat(raw) if isinstance(raw, str) else now - timedelta(days=1)
        waiting = await self.owner.review.waiting() if self.owner.review is not None else 0
        journal = self.owner.annotator.journal if self.owner.annotator is not None else None
        unread = await journal.unread_count() if journal is not None else 0
        consulting = await self.owner.consultations.store.pending() if self.owner.consultations is not None else []
        digest = await build_digest(
            self.owner.audit,
            since,
            now,
            waiting,
            unread,
            [
                f"{c.contact} asked \u201c{quote(c.question, 120)}\u201d: /consult {c.id} tell | like | who | private"
                for c in consulting
            ],
            lines_for(self.owner.headsup.take()) if self.owner.headsup is not None else (),
        )
        send = bool(digest.questions or digest.waiting_review or consulting or digest.not_asked or digest.headsups)
        if send:
            await self._tell_owner(digest.text)
        await self.owner.audit.write(
            DigestRecord(
                since=since.isoformat(),
                until=now.isoformat(),
                messages=digest.questions,
                people=digest.people,
                waiting_review=waiting,
                sent=send,
            ),
            contact="owner",
        )
        await overlay.set_flag(DIGEST_SINCE_FLAG, now.isoformat())
        await self.owner.tasks.finish(task.id, "done", f"{digest.questions} messages", now)
        if self.digest_at is not None:
            await self.owner.tasks.add("digest", next_occurrence(self.digest_at, now), {})

    async def _tell_owner(self, text: str, actions: tuple[Action, ...] = ()) -> None:
        try:
            await self.notify(text, actions)
        except Exception:
            log.exception("scheduler.owner_note_failed")
