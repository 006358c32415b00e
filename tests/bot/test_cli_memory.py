"""`epmem ingest` and `epmem reindex` as a user runs them: real subprocesses, real data folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "ingest"


def epmem(*args: str, data: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "EPMEM_DATA_DIR": str(data), "EPMEM_POLICY": str(FIXTURES / "policy.yaml"),
                "EPMEM_LOG_LEVEL": "WARNING", **(env or {})}
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], capture_output=True, text=True, env=full_env,
                          cwd=REPO, timeout=180)


def test_ingest_is_idempotent_and_a_bad_export_changes_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = epmem("ingest", str(FIXTURES / "slack"), data=data)
    assert first.returncode == 0, first.stderr
    assert "imported 4 sessions (4 new), 8 turns, " in first.stdout
    again = epmem("ingest", str(FIXTURES / "slack"), "--format", "slack", data=data)
    assert again.returncode == 0 and "(0 new)" in again.stdout
    bad = epmem("ingest", str(FIXTURES / "slack_malformed"), data=data)
    assert bad.returncode == 1
    assert "slack_malformed/general/2026-03-04.json: line 6, column 32: not valid JSON" in bad.stderr
    assert "Traceback" not in bad.stderr
    after = epmem("ingest", str(FIXTURES / "slack"), data=data)
    assert "(0 new)" in after.stdout  # the failed import added nothing


def test_embedder_change_asks_for_reindex_which_rebuilds(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert epmem("ingest", str(FIXTURES / "telegram"), data=data).returncode == 0
    switched = {"EPMEM_EMBEDDER": "wordllama"}
    refused = epmem("ingest", str(FIXTURES / "telegram"), data=data, env=switched)
    assert refused.returncode == 1 and "epmem reindex" in refused.stderr
    rebuilt = epmem("reindex", data=data, env=switched)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "reindexed 5 sessions, 11 turns and 4 facts" in rebuilt.stdout
    again = epmem("ingest", str(FIXTURES / "telegram"), data=data, env=switched)
    assert again.returncode == 0 and "(0 new)" in again.stdout
