"""First-reply latency with and without a relevant closed fact: can a contact time a secret?

Issue 38: the second relevance pass over closed facts (what a consultation asks the owner about)
used to run before the reply was sent, so a reply took longer whenever a closed fact answered
the question. Now the reply goes first and the look runs after it (bot/consult_later.py). This
measures what an asker sees, message in to reply out, in two data folders that differ only in
one thing: ``with`` also holds Maya's chat with her sister, taken in by the distiller, so a
closed, undecided fact (the torn ligament) answers every question below and a consultation
opens; ``without`` holds the house example alone. The same 50 questions (rotating over six
contacts who all get the same open answer) go to both, interleaved one by one, the order of
each pair alternating, so that machine noise hits both conditions alike. Between two
measurements each folder's background look is awaited: each figure is a first reply, not a
reply queued behind the previous one's look (which starts once the connector has the platform's
answer, possibly after the asker saw the reply: each measurement waits for it). A reply is timed to the moment the platform
received it (the fake's own stamp of the call; the console: the write of the reply), not to
when the measuring coroutine woke: it shares the event loop with the bot, and the look after
the reply may run in between, which no real asker would see.

Three ways in: the console connector (in process), Telegram (python-telegram-bot polling the
loopback Bot API, testkit/fake_telegram.py) and Slack (signed events into the real Bolt app,
posting to the loopback Web API, testkit/fake_slack.py), each through ``epmem run``'s Service.
Acceptance: medians within 10% of each other, p95 within 20%: per round of 50 questions, and
over all rounds pooled (``--rounds``: on a busy machine one p95 of 50 moves by 20% on its own).

    .venv/bin/python -m benchmarks.consult_latency --rounds 8 --json benchmarks/results/consult_latency.json
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import platform
import shutil
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.cli.common import write_json
from bot.log_setup import configure_logging
from bot.platforms import PlatformSettings
from bot.runtime import Runtime
from bot.serve import Service
from connectors.console import ConsoleConnector
from connectors.slack import SlackConnector
from testkit.consulting import KNEE
from testkit.fake_slack import FakeSlackApi, SlackSender, event_envelope, im_message
from testkit.fake_telegram import FakeTelegram
from testkit.house import SLACK, TG, house_runtime
from testkit.sessions import session

#: every one of them is answered from the open house memory (the Bath half marathon), and the
#: closed knee fact of the ``with`` folder would answer each: a consultation looks at it.
QUESTIONS = (
    "How is Maya's marathon training going?",
    "What is Maya training for?",
    "Is Maya running the Bath half marathon?",
    "How is Maya's running going?",
    "Is Maya still training for the half marathon?",
)
ASKERS = ("leo", "raj", "ana", "kim", "grace", "ben")
CONDITIONS = ("with", "without")
SECRET = "consult-latency-secret"
#: one question and one reply: a stuck reply fails the run rather than hang it.
TIMEOUT_S = 30.0

Ask = Callable[[str, str], Awaitable[float]]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


async def make_folder(path: Path, closed: bool) -> None:
    """The house example's memory; ``closed``: and Maya's chat with her sister (closed facts)."""
    runtime = await house_runtime(path)
    try:
        if closed:
            await runtime.distiller.ingest(session(KNEE, sid="s8", participants=["owner", "grace"]))
    finally:
        await runtime.close()


@dataclass
class Bot:
    runtime: Runtime
    ask: Ask


class Stamped(io.StringIO):
    """The console's stdout, noting when the reply was written (the asker's moment)."""

    written: float | None = None

    def write(self, text: str) -> int:
        if self.written is None:
            self.written = time.perf_counter()
        return super().write(text)


@asynccontextmanager
async def console_bot(data: Path) -> AsyncIterator[Bot]:
    runtime = await house_runtime(data, load=False)

    async def ask(who: str, text: str) -> float:
        out = Stamped()
        console = ConsoleConnector(f"console:{who}", runtime.agent.handle, stdout=out, stderr=io.StringIO())
        started = time.perf_counter()
        await console.handle_line(text)
        assert out.written is not None, "no reply"
        return out.written - started

    try:
        yield Bot(runtime, ask)
    finally:
        await runtime.close()


@asynccontextmanager
async def served(data: Path, env: dict[str, str]) -> AsyncIterator[tuple[Runtime, Service]]:
    """``epmem run``'s Service over ``data``, its platform settings read from ``env``."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        runtime = await house_runtime(data, load=False)
        service = Service(runtime, PlatformSettings())
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    await service.start()
    try:
        yield runtime, service
    finally:
        try:
            await service.stop()
        finally:
            await runtime.close()


@asynccontextmanager
async def telegram_bot(data: Path) -> AsyncIterator[Bot]:
    async with FakeTelegram() as tg, served(data, tg.service_env(EPMEM_SEND_PACING="0")) as (runtime, _):
        tg.clock = time.perf_counter  # stamps each call as the Bot API receives it

        async def ask(who: str, text: str) -> float:
            chat, calls = TG[who], len(tg.calls)
            before = sum(1 for m in tg.sent_messages if m["chat"]["id"] == chat)
            started = time.perf_counter()
            tg.private_text(FakeTelegram.user(chat, who.title()), text)
            await tg.wait_for(lambda: sum(1 for m in tg.sent_messages if m["chat"]["id"] == chat) > before, TIMEOUT_S)
            # when the reply reached the platform, not when this coroutine woke (it shares the
            # event loop with the bot, and the look after the reply may run in between)
            [at, *_] = [
                tg.call_times[i][1]
                for i in range(calls, len(tg.calls))
                if tg.calls[i][0] == "sendMessage" and str(tg.calls[i][1].get("chat_id")) == str(chat)
            ]
            return at - started

        yield Bot(runtime, ask)


@asynccontextmanager
async def slack_bot(data: Path) -> AsyncIterator[Bot]:
    api = FakeSlackApi(members={})
    await api.start()
    env = {
        "SLACK_BOT_TOKEN": "xoxb-latency",
        "SLACK_SIGNING_SECRET": SECRET,
        "EPMEM_SLACK_API_URL": api.api_url,
        "EPMEM_SLACK_PORT": "0",
        "EPMEM_SLACK_HOST": "127.0.0.1",
        "EPMEM_SEND_PACING": "0",
    }
    try:
        async with served(data, env) as (runtime, service):
            [connector] = service.connectors
            assert isinstance(connector, SlackConnector)
            sender = SlackSender(SECRET, lambda: connector.port)
            events = iter(range(1, 1_000_000))
            api.clock = time.perf_counter  # stamps each call as the Web API receives it

            async def ask(who: str, text: str) -> float:
                channel, n, calls = f"D{SLACK[who]}", next(events), len(api.calls)
                before = len(api.posts(channel))
                message = im_message(SLACK[who], text, channel=channel, ts=f"17000{n:05d}.000100")
                started = time.perf_counter()
                status, body = await sender.event(event_envelope(message, event_id=f"Ev-latency-{n}"))
                if status != 200:
                    raise RuntimeError(f"the bot answered HTTP {status} to a signed event: {body}")
                await api.wait_for(lambda: len(api.posts(channel)) > before, TIMEOUT_S)
                [at, *_] = [  # when the reply reached the platform (as on Telegram)
                    api.call_times[i][1]
                    for i in range(calls, len(api.calls))
                    if api.calls[i].method == "chat.postMessage" and api.calls[i].params.get("channel") == channel
                ]
                return at - started

            yield Bot(runtime, ask)
    finally:
        await api.stop()


WAYS = {"console": console_bot, "telegram": telegram_bot, "slack": slack_bot}


async def settled(bot: Bot, looks: int, timeout_s: float = 10.0) -> None:
    """Until the look after this reply has run (it starts when the connector has the platform's
    answer, which may come after the asker saw the reply), so that it delays no later question."""
    later = bot.runtime.agent.later
    deadline = time.perf_counter() + timeout_s
    while later.finished <= looks and time.perf_counter() < deadline:
        await asyncio.sleep(0.002)
    await later.drain()


def summary(seconds: list[float]) -> dict[str, float]:
    return {
        "median_ms": round(statistics.median(seconds) * 1000, 1),
        "p95_ms": round(percentile(seconds, 0.95) * 1000, 1),
        "min_ms": round(min(seconds) * 1000, 1),
        "max_ms": round(max(seconds) * 1000, 1),
    }


def compare(times: dict[str, list[float]]) -> dict[str, Any]:
    w, wo = summary(times["with"]), summary(times["without"])
    ratio_median, ratio_p95 = w["median_ms"] / wo["median_ms"], w["p95_ms"] / wo["p95_ms"]
    return {
        "questions": len(times["with"]),
        "with_closed_fact": w,
        "without": wo,
        "ratio_median": round(ratio_median, 3),
        "ratio_p95": round(ratio_p95, 3),
        "medians_within_10pct": abs(ratio_median - 1) <= 0.10,
        "p95_within_20pct": abs(ratio_p95 - 1) <= 0.20,
    }


async def measure(way: str, folders: dict[str, Path], questions: int, warmup: int) -> dict[str, list[float]]:
    """``questions`` per condition, interleaved; ``warmup`` pairs first, not counted."""
    times: dict[str, list[float]] = {c: [] for c in CONDITIONS}
    async with AsyncExitStack() as stack:
        bots = {c: await stack.enter_async_context(WAYS[way](folders[c])) for c in CONDITIONS}
        for i in range(warmup + questions):
            who, text = ASKERS[i % len(ASKERS)], QUESTIONS[(i // len(ASKERS)) % len(QUESTIONS)]
            for c in CONDITIONS if i % 2 == 0 else tuple(reversed(CONDITIONS)):
                looks = bots[c].runtime.agent.later.finished
                elapsed = await bots[c].ask(who, text)
                await settled(bots[c], looks)
                if i >= warmup:
                    times[c].append(elapsed)
        opened = await bots["with"].runtime.audit.records(kind="consultation")
        control = await bots["without"].runtime.audit.records(kind="consultation")
    if not opened or control:  # the closed fact was there to be found, and only there
        raise RuntimeError(f"consultations opened: with {len(opened)}, without {len(control)}")
    return times


async def run(questions: int, warmup: int, ways: list[str], rounds: int = 1) -> dict[str, Any]:
    """Each way ``rounds`` times, each round on fresh copies of the two folders; every round's
    figures, and all rounds pooled (a busy machine moves a p95 of 50 a lot)."""
    with tempfile.TemporaryDirectory(prefix="epmem-consult-latency-") as tmp:
        built = {c: Path(tmp) / c for c in CONDITIONS}
        for c, path in built.items():
            await make_folder(path, closed=c == "with")
        results: dict[str, Any] = {}
        for way in ways:
            pooled: dict[str, list[float]] = {c: [] for c in CONDITIONS}
            each = []
            for r in range(rounds):  # fresh copies: one round's consultations do not bound the next
                folders = {c: Path(shutil.copytree(built[c], Path(tmp) / f"{way}-{r}" / c)) for c in CONDITIONS}
                times = await measure(way, folders, questions, warmup)
                each.append(compare(times))
                for c in CONDITIONS:
                    pooled[c] += times[c]
            results[way] = {"rounds": each, "pooled": compare(pooled)}
    return {
        "benchmark": "consult_first_reply_latency",
        "backend": "rules",
        "questions_per_round": questions,
        "rounds": rounds,
        "warmup_pairs": warmup,
        "acceptance": "medians within 10%, p95 within 20%",
        "passed_every_round": all(
            r["medians_within_10pct"] and r["p95_within_20pct"] for w in results.values() for r in w["rounds"]
        ),
        "passed_pooled": all(
            w["pooled"]["medians_within_10pct"] and w["pooled"]["p95_within_20pct"] for w in results.values()
        ),
        **results,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--questions", type=int, default=50, help="per condition")
    parser.add_argument("--warmup", type=int, default=4, help="pairs first, not counted")
    parser.add_argument("--way", action="append", choices=tuple(WAYS), help="default: all three")
    parser.add_argument("--rounds", type=int, default=1, help="each on fresh folders; pooled too")
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args()
    configure_logging("WARNING", "console")
    result = asyncio.run(run(args.questions, args.warmup, args.way or list(WAYS), args.rounds))
    write_json(result, args.json)


if __name__ == "__main__":
    main()
