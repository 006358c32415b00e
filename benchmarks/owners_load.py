"""Load on a deployment of several owners: what one ``epmem run`` process costs per owner.

``epmem bench owners-load`` builds deployments of 1, 2 and 4 owners (benchmarks/isolation_data.py:
each owner's policy and facts, plus ``--extra-facts`` filler facts per owner for memory size),
starts ``epmem run`` on each as a subprocess (one worker: SQLite and the embedded store), each
owner on their own loopback Telegram bot in this process, and offers a steady load: ``--rate``
messages per second in all, spread evenly over the owners and their four contacts, for
``--seconds``. Measured per step: the time from a message's arrival at the Bot API to the bot's
reply (p50, p95), messages not answered within 60 s (errors), and the process's resident memory
(now and at its peak), with the cost per owner. Several workers on one Postgres are not measured
here (not built yet); the figures are what one process does.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from bot.config import Settings
from testkit.fake_telegram import FakeTelegram

from benchmarks.isolation import load_memories
from benchmarks.isolation_data import CONTACTS, BenchOwner, owners, write_owner
from benchmarks.run_latency import BotProcess, bot_process, percentile, wait_polling

ANSWER_TIMEOUT_S = 60.0


class TimedTelegram(FakeTelegram):
    """The loopback Bot API, noting when each message was sent to each chat."""

    def __init__(self, token: str) -> None:
        super().__init__(token=token)
        self.sent_at: dict[int, deque[float]] = {}

    def _send_message(self, payload: Any) -> Any:
        self.sent_at.setdefault(int(payload["chat_id"]), deque()).append(time.perf_counter())
        return super()._send_message(payload)


@dataclass
class Step:
    owners: int
    facts_per_owner: int
    rate: float
    seconds: float
    asked_at: dict[tuple[int, int], deque[float]] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list)
    sent: int = 0

    def result(self, rss: dict[str, float], start_s: float) -> dict[str, Any]:
        answered = len(self.latencies_ms)
        return {
            "owners": self.owners,
            "facts_per_owner": self.facts_per_owner,
            "rate_per_s": self.rate,
            "sent": self.sent,
            "answered": answered,
            "errors": self.sent - answered,
            "reply_ms_p50": round(percentile(self.latencies_ms, 0.5), 1) if answered else None,
            "reply_ms_p95": round(percentile(self.latencies_ms, 0.95), 1) if answered else None,
            "start_s": round(start_s, 1),
            **rss,
            "rss_anon_per_owner_mb": round(rss.get("rss_anon_mb", 0.0) / self.owners, 1),
        }


def process_memory(pid: int) -> dict[str, float]:
    """The process's resident memory now and at its peak (MB), from /proc; and of it, the
    anonymous memory (the heap: what owners really cost) and the file-backed pages (mapped
    files: Qdrant Edge maps each collection's write-ahead log, ~48 MB per non-empty
    collection, clean page cache the kernel takes back under pressure)."""
    names = {"VmRSS": "rss_mb", "VmHWM": "rss_peak_mb", "RssAnon": "rss_anon_mb", "RssFile": "rss_file_mb"}
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in names:
            fields[names[name]] = round(int(value.split()[0]) / 1024, 1)
    return fields


def _filler(owner: BenchOwner, n: int) -> BenchOwner:
    """``owner`` with ``n`` more facts (everyday notes, open to all): a memory of that size."""
    if n <= 0:
        return owner
    scenario = owner.scenario.model_copy(deep=True)
    base = scenario.facts[0]
    topics = ("lunch", "a podcast", "the weather", "a film", "a recipe", "a bike ride", "a book", "the garden")
    for i in range(n):
        text = f"{owner.first} noted item {i}: talked about {topics[i % len(topics)]} on day {i % 365 + 1}."
        scenario.facts.append(
            base.model_copy(
                update={
                    "id": f"x{i}",
                    "event": f"e-x{i}",
                    "text": text,
                    "version": "truth",
                    "covers": None,
                    "category": "hobbies",
                    "level": 4,
                    "domain": None,
                    "whitelist": [],
                    "canary": f"item {i}",
                }
            )
        )
    return BenchOwner(owner.index, owner.owner_id, owner.name, scenario, owner.canaries)


async def _offer(step: Step, bench: list[BenchOwner], fakes: list[TimedTelegram]) -> None:
    """The load: one message every 1/rate seconds, round-robin over owners and contacts."""
    interval = 1.0 / step.rate
    started = time.perf_counter()
    total = int(step.rate * step.seconds)
    for i in range(total):
        await asyncio.sleep(max(0.0, started + i * interval - time.perf_counter()))
        owner_i = i % len(bench)
        contact = CONTACTS[(i // len(bench)) % len(CONTACTS)][2]
        question = bench[owner_i].questions()[(i // (len(bench) * len(CONTACTS))) % 25]
        step.asked_at.setdefault((owner_i, contact), deque()).append(time.perf_counter())
        fakes[owner_i].private_text(FakeTelegram.user(contact, f"c{contact}"), question)
        step.sent += 1


async def _collect(step: Step, fakes: list[TimedTelegram]) -> None:
    """Pair each reply with its question, in order per chat (PTB answers one update at a time)."""
    deadline = time.perf_counter() + step.seconds + ANSWER_TIMEOUT_S
    while time.perf_counter() < deadline:
        for owner_i, fake in enumerate(fakes):
            for chat, sent in fake.sent_at.items():
                asked = step.asked_at.get((owner_i, chat))
                while sent and asked:
                    step.latencies_ms.append((sent.popleft() - asked.popleft()) * 1000)
        if step.sent and len(step.latencies_ms) >= int(step.rate * step.seconds):
            return
        await asyncio.sleep(0.01)


def _write(root: Path, bench: list[BenchOwner], fakes: list[TimedTelegram]) -> None:
    for owner, fake in zip(bench, fakes, strict=True):
        write_owner(root, owner, fake.service_env(EPMEM_TELEGRAM_POLL_TIMEOUT="10"))


async def run_step(folder: Path, n: int, extra: int, rate: float, seconds: float) -> dict[str, Any]:
    bench = [_filler(o, extra) for o in owners(n)]
    fakes = [TimedTelegram(f"{200 + i}:LOAD-{i}") for i in range(n)]
    for fake in fakes:
        await fake.start()
    try:
        root = folder / f"owners-{n}-facts-{extra}"
        _write(root, bench, fakes)
        await load_memories(Settings(data_dir=root), [o for o in bench])
        env = {"EPMEM_DATA_DIR": str(root), "EPMEM_RATE_LIMIT_MESSAGES": "0", "EPMEM_DEFLECTION_ALERT": "0"}
        started = time.perf_counter()
        async with bot_process(None, env) as bot:
            for fake in fakes:
                await wait_polling(fake, bot, timeout=180)
            start_s = time.perf_counter() - started
            step = Step(n, len(bench[0].scenario.facts), rate, seconds)
            await asyncio.gather(_offer(step, bench, fakes), _collect(step, fakes))
            rss = process_memory(_pid(bot))
            await bot.terminate()
        return step.result(rss, start_s)
    finally:
        for fake in fakes:
            await fake.stop()


def _pid(bot: BotProcess) -> int:
    return int(bot.proc.pid)


async def run_owners_load(
    folder: Path, counts: list[int], extras: list[int], rate: float, seconds: float
) -> dict[str, Any]:
    steps = [await run_step(folder, n, extra, rate, seconds) for extra in extras for n in counts]
    return {"worker_processes": 1, "state": "sqlite", "vectors": "qdrant edge", "steps": steps}


def plot(result: dict[str, Any], path: Path) -> None:
    """Reply time (p50, p95) and resident memory against the number of owners, per memory size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (latency, memory) = plt.subplots(1, 2, figsize=(10, 4))
    for extra in sorted({s["facts_per_owner"] for s in result["steps"]}):
        steps = sorted((s for s in result["steps"] if s["facts_per_owner"] == extra), key=lambda s: s["owners"])
        xs = [s["owners"] for s in steps]
        latency.plot(xs, [s["reply_ms_p50"] for s in steps], marker="o", label=f"p50, {extra} facts/owner")
        latency.plot(
            xs, [s["reply_ms_p95"] for s in steps], marker="^", linestyle="--", label=f"p95, {extra} facts/owner"
        )
        memory.plot(xs, [s["rss_mb"] for s in steps], marker="o", label=f"resident, {extra} facts/owner")
        memory.plot(
            xs, [s["rss_anon_mb"] for s in steps], marker="s", linestyle=":", label=f"of it heap, {extra} facts/owner"
        )
    rate = result["steps"][0]["rate_per_s"]
    latency.set(xlabel="owners in one process", ylabel="reply time (ms)", title=f"reply time at {rate} msg/s in all")
    memory.set(xlabel="owners in one process", ylabel="resident memory (MB)", title="memory of the process")
    for ax in (latency, memory):
        ax.set_xticks(sorted({s["owners"] for s in result["steps"]}))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
