"""With a model backend the import never waits for the model (issue 9, item 7).

`epmem ingest` against a loopback OpenAI-compatible server that fails every request: the
import returns without calling it at all, the facts wait pending (nobody hears them) and the
sessions are queued; `epmem annotate` then works through the queue, and a model that keeps
failing leaves every fact pending, never open.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

from benchmarks.telegram_export import policy_yaml, write_full_export
from testkit.fake_openai import FakeOpenAI

REPO = Path(__file__).resolve().parents[2]


async def epmem(env: dict[str, str], *args: str) -> tuple[int, str, str, float]:
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli",
        *args,
        cwd=REPO,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 300)
    return proc.returncode or 0, out.decode(), err.decode(), time.perf_counter() - started


async def test_ingest_returns_without_waiting_for_a_failing_model(tmp_path: Path) -> None:
    export = write_full_export(tmp_path / "result.json", chats=2, messages_per_chat=30, confided_every=6)
    policy = tmp_path / "policy.yaml"
    policy.write_text(policy_yaml(contacts=3))
    async with FakeOpenAI() as llm:
        llm.set_status(500)
        env = {
            **os.environ,
            "EPMEM_DATA_DIR": str(tmp_path / "data"),
            "EPMEM_POLICY": str(policy),
            "EPMEM_LOG_LEVEL": "WARNING",
            "EPMEM_EMBEDDER": "wordllama",
            "EPMEM_LLM_BACKEND": "openai",
            "OPENAI_BASE_URL": llm.base_url,
            "OPENAI_API_KEY": "sk-test",
            "EPMEM_LLM_MODEL": "fake-model",
            "EPMEM_LLM_MAX_RETRIES": "0",
            "EPMEM_ANNOTATE_ATTEMPTS": "2",
            "EPMEM_ANNOTATE_BACKOFF_S": "0",
        }
        code, out, err, _seconds = await epmem(env, "ingest", str(export))
        assert code == 0, err
        assert llm.requests == []  # the import never called the model
        assert "sessions wait for the model: `epmem run` annotates them in the background" in out
        code, listed, err, _ = await epmem(env, "facts", "list", "--json")
        facts = [json.loads(line) for line in listed.splitlines()]
        assert facts and all(f["state"] == "pending" and f["whitelist"] == [] for f in facts)
        # the queue: the failing model is tried (twice per session), and the facts stay pending
        code, out, err, _ = await epmem(env, "annotate")
        assert code == 0, err
        sessions = len({f["session_id"] for f in facts})
        assert len(llm.requests) >= 2 * sessions
        assert f"annotated 0 sessions, {sessions} failed" in out and "stay pending" in out
        code, listed, err, _ = await epmem(env, "facts", "list", "--json")
        assert all(json.loads(line)["state"] == "pending" for line in listed.splitlines())
        # nothing left queued: a second run does not call the model again, --retry-failed does
        before = len(llm.requests)
        code, out, err, _ = await epmem(env, "annotate")
        assert "annotated 0 sessions, 0 failed" in out and len(llm.requests) == before
        code, out, err, _ = await epmem(env, "annotate", "--retry-failed")
        assert len(llm.requests) > before
