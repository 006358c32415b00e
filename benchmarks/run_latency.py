"""How fast ``epmem run`` answers: message in -> reply sent, on Telegram or Slack.

A real ``epmem run`` subprocess (rules backend, the house-and-bonus example with platform ids)
talks to a loopback fake of the platform. Telegram: the bot long-polls a fake Bot API; each
measurement queues one private message and times until the bot's ``sendMessage`` for that chat
arrives at the fake (PTB's poll returning, the agent, the send). Slack: the bot serves HTTP
events; each measurement posts one signed ``message.im`` event and times until the bot's
``chat.postMessage`` to that DM arrives at the fake Web API (Bolt's signature check and ack, the
agent, the post). Messages rotate over six contacts who all get an answer, so nobody nears the
per-sender rate limit and no owner note (a probing alert) interleaves with the replies. Each
contact asks again a fraction of a second after the last answer, faster than anyone types, so
the per-chat pacing (one message a second, measured by ``benchmarks.platform_delivery``) is
turned off here (``EPMEM_SEND_PACING=0``; code without pacing ignores it).

Run from a checkout (it borrows the test suite's fakes and example data):

    .venv/bin/python -m benchmarks.run_latency --updates 30 --json out/run_latency.json
    .venv/bin/python -m benchmarks.run_latency --platform slack --updates 30
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.cli.common import write_json
from testkit.fake_slack import FakeSlackApi, SlackSender, event_envelope, im_message
from testkit.fake_telegram import FakeTelegram
from testkit.house import SLACK, TG, house_runtime, write_policy

REPO = Path(__file__).resolve().parent.parent
#: questions every asker below gets an answer to (a truth or a cover), never a deflection.
QUESTIONS = ("How is the house hunt going?", "What is Maya training for?", "Is Maya moving house?")
#: contacts who get an answer (no deflection, so no owner notes interleave with replies).
ASKERS = ("leo", "raj", "ana", "kim", "grace", "ben")


async def prepare(folder: Path) -> dict[str, str]:
    """A data folder with the example's facts and an owner's policy file; the env for it."""
    policy = write_policy(folder / "policy.yaml")
    runtime = await house_runtime(folder / "data", policy_file=policy)
    await runtime.close()
    return {"EPMEM_DATA_DIR": str(folder / "data"), "EPMEM_POLICY": str(policy)}


@dataclass
class BotProcess:
    """A running ``epmem run``, its stdout (JSON log lines) collected as it goes."""

    proc: asyncio.subprocess.Process
    lines: list[str] = field(default_factory=list)
    reader: asyncio.Task[None] | None = None

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for raw in self.proc.stdout:
            self.lines.append(raw.decode(errors="replace").rstrip("\n"))

    def records(self) -> list[dict[str, Any]]:
        out = []
        for line in self.lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append({"unparsed": line})
        return out

    async def terminate(self, timeout: float = 30.0) -> tuple[int, float]:
        """SIGTERM; (exit code, seconds to exit)."""
        started = time.perf_counter()
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            self.proc.kill()
            code = await self.proc.wait()
        if self.reader is not None:
            await self.reader
        return code, time.perf_counter() - started


SLACK_SECRET = "bench-signing-secret"
SLACK_TOKEN = "xoxb-bench"


def telegram_env(fake: FakeTelegram) -> dict[str, str]:
    """What points ``epmem run`` at the fake Bot API."""
    return {
        "TELEGRAM_BOT_TOKEN": fake.token,
        "EPMEM_TELEGRAM_API_URL": fake.base_url,
        "EPMEM_TELEGRAM_POLL_TIMEOUT": "10",
    }


def slack_env(api: FakeSlackApi, secret: str = SLACK_SECRET) -> dict[str, str]:
    """What points ``epmem run`` at the fake Web API, serving HTTP events on a free loopback port."""
    return {
        "SLACK_BOT_TOKEN": SLACK_TOKEN,
        "SLACK_SIGNING_SECRET": secret,
        "EPMEM_SLACK_API_URL": api.api_url,
        "EPMEM_SLACK_PORT": "0",
        "EPMEM_SLACK_HOST": "127.0.0.1",
    }


@asynccontextmanager
async def bot_process(fake: FakeTelegram | None, env: dict[str, str]) -> AsyncIterator[BotProcess]:
    """``epmem run`` against ``fake`` (or whatever ``env`` points at); killed on the way out if
    still running."""
    full_env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("EPMEM_", "TELEGRAM_", "SLACK_", "OPENAI_")) and "PROXY" not in k.upper()
    }
    full_env.update({"EPMEM_LOG_FORMAT": "json", "EPMEM_LOG_LEVEL": "INFO", "EPMEM_SEND_PACING": "0"})
    full_env.update(telegram_env(fake) if fake is not None else {})
    full_env.update(env)
    full_env.update({"PYTHONUNBUFFERED": "1", "NO_PROXY": "127.0.0.1,localhost"})
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli",
        "run",
        cwd=REPO,
        env=full_env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    bot = BotProcess(proc)
    bot.reader = asyncio.create_task(bot._read())
    try:
        yield bot
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await bot.reader


async def wait_polling(fake: FakeTelegram, bot: BotProcess, timeout: float) -> None:
    """Until the bot's first getUpdates (it is serving), or fail with its output."""
    deadline = time.monotonic() + timeout
    while not any(m == "getUpdates" for m, _ in fake.calls):
        if bot.proc.returncode is not None or time.monotonic() > deadline:
            raise RuntimeError("epmem run did not start polling:\n" + "\n".join(bot.lines[-30:]))
        await asyncio.sleep(0.05)


async def ask(fake: FakeTelegram, user_id: int, text: str, timeout: float = 10.0) -> tuple[float, str]:
    """Queue one private message; seconds until the bot's reply to that chat, and the reply."""
    before = sum(1 for s in fake.sent if s["chat_id"] == user_id)
    started = time.perf_counter()
    fake.private_text(FakeTelegram.user(user_id, "Asker"), text)
    await fake.wait_for(lambda: sum(1 for s in fake.sent if s["chat_id"] == user_id) > before, timeout)
    elapsed = time.perf_counter() - started
    reply = [s["text"] for s in fake.sent if s["chat_id"] == user_id][-1]
    return elapsed, reply


async def wait_slack(bot: BotProcess, timeout: float) -> int:
    """Until the bot logs that Slack is serving; the HTTP port it bound."""
    deadline = time.monotonic() + timeout
    while True:
        for record in bot.records():
            if record.get("event") == "slack.started" and record.get("port"):
                return int(record["port"])
        if bot.proc.returncode is not None or time.monotonic() > deadline:
            raise RuntimeError("epmem run did not start Slack:\n" + "\n".join(bot.lines[-30:]))
        await asyncio.sleep(0.05)


async def ask_slack(
    api: FakeSlackApi, sender: SlackSender, user: str, text: str, event_id: str, timeout: float = 10.0
) -> tuple[float, str]:
    """Post one signed DM event from ``user``; seconds until the bot's post to that DM, and the post."""
    channel = f"D{user}"
    before = len(api.posts(channel))
    envelope = event_envelope(im_message(user, text, channel=channel, ts=f"{time.time():.6f}"), event_id=event_id)
    started = time.perf_counter()
    status, _ = await sender.event(envelope)
    if status != 200:
        raise RuntimeError(f"the bot answered HTTP {status} to a signed event")
    await api.wait_for(lambda: len(api.posts(channel)) > before, timeout)
    elapsed = time.perf_counter() - started
    return elapsed, str(api.posts(channel)[-1].get("text"))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def question(i: int) -> str:
    return QUESTIONS[(i // len(ASKERS)) % len(QUESTIONS)]


async def measure_telegram(
    folder: Path, env: dict[str, str], updates: int, warmup: int
) -> tuple[list[float], BotProcess, float, tuple[int, float]]:
    async with FakeTelegram() as fake:
        started = time.perf_counter()
        async with bot_process(fake, env) as bot:
            await wait_polling(fake, bot, timeout=120)
            startup = time.perf_counter() - started
            latencies = []
            for i in range(warmup + updates):
                elapsed, _ = await ask(fake, TG[ASKERS[i % len(ASKERS)]], question(i))
                if i >= warmup:
                    latencies.append(elapsed)
            stopped = await bot.terminate()
    return latencies, bot, startup, stopped


async def measure_slack(
    folder: Path, env: dict[str, str], updates: int, warmup: int
) -> tuple[list[float], BotProcess, float, tuple[int, float]]:
    api = FakeSlackApi()
    await api.start()
    try:
        started = time.perf_counter()
        async with bot_process(None, {**env, **slack_env(api)}) as bot:
            port = await wait_slack(bot, timeout=120)
            startup = time.perf_counter() - started
            sender = SlackSender(SLACK_SECRET, lambda: port)
            latencies = []
            for i in range(warmup + updates):
                elapsed, _ = await ask_slack(api, sender, SLACK[ASKERS[i % len(ASKERS)]], question(i), f"Ev{i}")
                if i >= warmup:
                    latencies.append(elapsed)
            stopped = await bot.terminate()
    finally:
        await api.stop()
    return latencies, bot, startup, stopped


async def run(updates: int, warmup: int, platform_name: str = "telegram") -> dict[str, Any]:
    measure = measure_slack if platform_name == "slack" else measure_telegram
    with tempfile.TemporaryDirectory(prefix="epmem-run-bench-") as tmp:
        env = await prepare(Path(tmp))
        latencies, bot, startup, (code, shutdown) = await measure(Path(tmp), env, updates, warmup)
        agent_ms = [float(r["latency_ms"]) for r in bot.records() if r.get("event") == "replied"][warmup:]
    return {
        "benchmark": f"epmem_run_{platform_name}_reply_latency",
        "backend": "rules",
        "updates": updates,
        "warmup": warmup,
        "median_ms": round(statistics.median(latencies) * 1000, 1),
        "p95_ms": round(percentile(latencies, 0.95) * 1000, 1),
        "min_ms": round(min(latencies) * 1000, 1),
        "max_ms": round(max(latencies) * 1000, 1),
        "target_ms": 1000,
        # the agent's own share (recall to reply text), from its log lines
        "agent_median_ms": round(statistics.median(agent_ms), 1) if agent_ms else None,
        "startup_s": round(startup, 2),
        "shutdown_s": round(shutdown, 2),
        "exit_code": code,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--platform", choices=("telegram", "slack"), default="telegram")
    parser.add_argument("--updates", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args()
    result = asyncio.run(run(args.updates, args.warmup, args.platform))
    write_json(result, args.json)


if __name__ == "__main__":
    main()
