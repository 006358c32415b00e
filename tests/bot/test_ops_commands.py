"""`epmem health` (the running bot's report) and `epmem doctor` (a deployment's settings), as an
operator runs them: real subprocesses; the bot itself is the real service on a loopback
Telegram (testkit's fake Bot API)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.config import EXAMPLE_POLICY
from bot.platforms import PlatformSettings
from bot.serve import Service
from testkit.fake_telegram import FakeTelegram
from testkit.house import house_runtime
from testkit.runtime import REPO


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("EPMEM_", "TELEGRAM_", "SLACK_", "OPENAI_"))}
    full.update(EPMEM_LOG_LEVEL="WARNING", **env)
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", *args], capture_output=True, text=True, env=full, cwd=REPO, timeout=120
    )


async def test_health_says_which_platforms_are_connected_and_whether_the_stores_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    env = {"EPMEM_DATA_DIR": str(data)}
    before = await asyncio.to_thread(cli, "health", env=env)
    assert before.returncode == 1 and "no health report" in before.stdout and "epmem run" in before.stdout
    async with FakeTelegram() as tg:
        for name, value in tg.service_env().items():
            monkeypatch.setenv(name, value)
        runtime = await house_runtime(data)
        service = Service(runtime, PlatformSettings())
        try:
            await service.start()
            running = await asyncio.to_thread(cli, "health", env=env)
            assert running.returncode == 0, running.stdout + running.stderr
            lines = running.stdout.splitlines()
            assert "telegram: connected" in lines
            assert {"vector store: ok", "state store: ok", "audit store: ok"} <= set(lines)
            report = json.loads((await asyncio.to_thread(cli, "health", "--json", env=env)).stdout)
            assert report["ok"] and report["platforms"] == {"telegram": "connected"}
            assert tg.token not in running.stdout and tg.token not in (data / "health.json").read_text()
        finally:
            await service.stop()
            await runtime.close()
    stopped = await asyncio.to_thread(cli, "health", env=env)
    assert stopped.returncode == 1 and "the bot stopped" in stopped.stdout


def test_a_stale_report_is_not_healthy(tmp_path: Path) -> None:
    from bot import health

    path = tmp_path / "health.json"
    health.write(
        path,
        {"ok": True, "epoch": 1000.0, "time": "then", "platforms": {"slack": "connected"}, "stores": {"vector": "ok"}},
    )
    ok, lines = health.read(path, now=1000.0 + health.STALE_S + 1)
    assert not ok and any("stopped reporting" in line for line in lines)
    assert health.read(path, now=1001.0)[0]


def test_doctor_says_what_is_missing_one_line_each(tmp_path: Path) -> None:
    bare = cli("doctor", env={"EPMEM_DATA_DIR": str(tmp_path / "d"), "TELEGRAM_BOT_TOKEN": ""})
    assert bare.returncode == 1 and "Traceback" not in bare.stderr
    lines = bare.stdout.splitlines()
    assert all(line.split(":", 1)[0] in {"ok", "warn", "missing", "error"} for line in lines), lines
    assert any(line.startswith("missing: no platform: set TELEGRAM_BOT_TOKEN") for line in lines)
    assert any(line.startswith("warn: EPMEM_AUDIT_TOKEN is not set") for line in lines)
    secret = "123456:telegram-secret-token"
    worse = cli(
        "doctor",
        env={
            "EPMEM_DATA_DIR": str(tmp_path / "d"),
            "EPMEM_POLICY": str(EXAMPLE_POLICY),  # a policy to check the owner's identities in
            "TELEGRAM_BOT_TOKEN": secret,
            "EPMEM_QDRANT_URL": "http://127.0.0.1:1",
            "EPMEM_AUDIT_TOKEN": "short",
            "EPMEM_LLM_BACKEND": "openai",
        },
    )
    text = worse.stdout
    assert worse.returncode == 1 and secret not in text and "short" not in text
    assert "error: EPMEM_QDRANT_URL http://127.0.0.1:1: no answer" in text
    assert "missing: EPMEM_AUDIT_TOKEN has 5 characters" in text
    assert "missing: EPMEM_LLM_BACKEND=openai needs EPMEM_LLM_MODEL" in text
    assert "owner.identities has no telegram: identity" in text
    bad = cli("doctor", env={"EPMEM_DATA_DIR": str(tmp_path / "d"), "EPMEM_SLACK_PORT": "99999"})
    assert bad.returncode == 1 and "error: EPMEM_SLACK_PORT: Input should be less than or equal to 65535" in bad.stdout


def test_doctor_says_a_missing_data_folder_is_made_by_init_or_demo(tmp_path: Path) -> None:
    """run, chat and preview refuse a data folder that does not exist (they never make one for
    the wrong owner), so doctor must not call it fine: it names the commands that make it."""
    missing = tmp_path / "not-yet"
    done = cli("doctor", env={"EPMEM_DATA_DIR": str(missing), "EPMEM_POLICY": str(EXAMPLE_POLICY)})
    assert done.returncode == 1
    assert f"error: EPMEM_DATA_DIR {missing}: does not exist; `epmem init`" in done.stdout, done.stdout
    assert not missing.exists()


def test_doctor_checks_the_shared_database_and_names_no_password(tmp_path: Path, postgres_server: object) -> None:
    """EPMEM_DATABASE_URL: the server answers (or not, in one line without the password); a
    worker's missing folder is fine, its first start makes it."""
    from testkit.postgres import EmbeddedPostgres

    assert isinstance(postgres_server, EmbeddedPostgres)
    env = {"EPMEM_DATA_DIR": str(tmp_path / "w1"), "EPMEM_POLICY": str(EXAMPLE_POLICY), "TELEGRAM_BOT_TOKEN": ""}
    good = cli("doctor", env={**env, "EPMEM_DATABASE_URL": postgres_server.database()})
    assert "ok: state, audit log and memory log: PostgreSQL at postgresql://" in good.stdout, good.stdout
    assert f"ok: EPMEM_DATA_DIR {tmp_path / 'w1'}: made at the first start" in good.stdout
    assert "a replica of the memory's log on EPMEM_DATABASE_URL" in good.stdout
    polling = cli("doctor", env={**env, "EPMEM_DATABASE_URL": postgres_server.database(), "TELEGRAM_BOT_TOKEN": "1:x"})
    assert "warn: EPMEM_DATABASE_URL with Telegram polling for updates" in polling.stdout, polling.stdout
    refused = cli("doctor", env={**env, "EPMEM_DATABASE_URL": "postgresql://epmem:hunter2@127.0.0.1:1/epmem"})
    assert refused.returncode == 1 and "hunter2" not in refused.stdout + refused.stderr
    assert "error: EPMEM_DATABASE_URL postgresql://epmem@127.0.0.1:1/epmem: no answer" in refused.stdout
