"""Several owners in one deployment (bot/owners.py), end to end: the isolation benchmark on both
platforms' loopback peers (benchmarks/isolation.py), its control, and ``epmem run`` serving two
owners from one process, each on their own Telegram bot."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from benchmarks.isolation import load_memories, run_isolation
from benchmarks.isolation_data import owners
from benchmarks.run_latency import ask, bot_process, wait_polling
from bot.config import Settings
from bot.owners import OWNER_ENV
from testkit.fake_telegram import FakeTelegram

#: real models and several runtimes: more than the suite's 120 s on busy cores
pytestmark = pytest.mark.timeout(600)


async def test_no_owner_s_detail_reaches_another_owner_s_readers(tmp_path: Path) -> None:
    """3 owners x 24 questions (every shared contact and the other owners asking, on Telegram
    and on Slack), then each owner's /who-knows, /why, /facts, /audit, audit page and export."""
    result = await run_isolation(tmp_path, n_owners=3, per_owner=24)
    assert result["crossings"] == 0, result["crossing_examples"]
    assert result["questions"] == 72
    assert all(o["answered"] == o["asked"] == 24 for o in result["per_owner"].values())
    assert result["leaks"] == 0 and result["pin_told"] == 0
    assert result["foreign_audit_records"] == 0 and result["audit_verified"]
    # the control: each delegate did tell its own owner's details to those who may know them
    assert all(o["own_canaries_told"] > 0 for o in result["per_owner"].values())
    assert all(o["audit_pages_read"] >= 3 and o["command_answers"] >= 10 for o in result["per_owner"].values())


async def test_the_benchmark_sees_a_misfiled_fact(tmp_path: Path) -> None:
    """Its own control: with the first owner's facts filed under the second as well, what the
    second owner's delegate says and lists carries the first owner's details."""
    result = await run_isolation(tmp_path, n_owners=2, per_owner=12, misfile=True)
    assert result["crossings"] > 0
    assert all(c.startswith(("reply", "/facts", "sent by", "/who", "blake")) for c in result["crossing_examples"])


async def test_epmem_run_serves_each_owner_on_their_own_bot(tmp_path: Path) -> None:
    bench = owners(2)
    root = tmp_path / "data"
    async with FakeTelegram(token="101:OWNER-ONE") as one, FakeTelegram(token="102:OWNER-TWO") as two:
        for owner, fake in zip(bench, (one, two), strict=True):
            folder = root / "owners" / owner.owner_id
            folder.mkdir(parents=True)
            policy = owner.scenario.effective_policy().model_dump(mode="json")
            (folder / "policy.yaml").write_text(yaml.safe_dump(policy, sort_keys=False))
            env = fake.service_env(EPMEM_TELEGRAM_POLL_TIMEOUT="10")
            (folder / OWNER_ENV).write_text("".join(f"{k}={v}\n" for k, v in env.items()))
        await load_memories(Settings(data_dir=root), bench)
        async with bot_process(None, {"EPMEM_DATA_DIR": str(root)}) as bot:
            await wait_polling(one, bot, timeout=120)
            await wait_polling(two, bot, timeout=60)
            sam = 201  # the same account writes to both owners' bots; level 1 for Avery, 2 for Blake
            _, to_avery = await ask(one, sam, "Where is the house Avery made an offer on?", timeout=30)
            _, to_blake = await ask(two, sam, "Where is the house Blake made an offer on?", timeout=30)
            code, _ = await bot.terminate()
    assert code == 0, "\n".join(bot.lines[-20:])
    avery, blake = bench
    assert avery.canaries["street"] in to_avery and blake.canaries["street"] not in to_avery
    assert blake.canaries["street"] in to_blake and avery.canaries["street"] not in to_blake
    assert "stopped (2 owners)" in "\n".join(bot.lines)
    text = "\n".join(bot.lines)
    assert one.token not in text and two.token not in text
