"""`epmem ingest` and `epmem reindex` as a user runs them (the command in-process through
typer's runner, :mod:`testkit.cli`), on a real data folder."""

from __future__ import annotations

import subprocess
from pathlib import Path

from testkit.cli import run_cli

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "ingest"


def epmem(*args: str, data: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {
        "EPMEM_DATA_DIR": str(data),
        "EPMEM_POLICY": str(FIXTURES / "policy.yaml"),
        "EPMEM_LOG_LEVEL": "WARNING",
        **(env or {}),
    }
    return run_cli(list(args), full_env)


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
    assert "reindexed 5 sessions, 11 turns and 6 facts" in rebuilt.stdout
    again = epmem("ingest", str(FIXTURES / "telegram"), data=data, env=switched)
    assert again.returncode == 0 and "(0 new)" in again.stdout


def test_a_bad_file_is_one_line_naming_file_and_place_and_writes_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    cases = {
        "bad.yaml": ("format: epmem-scenario/1\nname: x\nsessions: [unclosed\n", ":4: (document): bad YAML"),
        "bad.jsonl": (
            '{"chat":"c","id":1,"sender":"owner","text":"hi"}\n{"chat": "c", "id": 2 "sender": "x"}\n',
            ": line 2: not valid JSON",
        ),
        "result.json": (
            '{"name": "A", "type": "personal_chat", "id": 2, "messages": [\n'
            ' {"id": 1, "type": "message", "date_unixtime": "1772359092", "from": "Sam Rivera",\n'
            '  "from_id": "user1000001", "text": "hi"},\n {"id": 2 "text": "x"}]}\n',
            ": line 4, column 11: not valid JSON",
        ),
    }
    for name, (body, where) in cases.items():
        path = tmp_path / name
        path.write_text(body)
        result = epmem("ingest", str(path), data=data)
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert result.returncode == 1 and len(errors) == 1, result.stderr
        assert errors[0].startswith(f"error: {path}{where}"), errors
        assert "Traceback" not in result.stderr
    assert epmem("facts", "list", "--json", data=data).stdout == ""
    # the valid first message of the broken export was not written: fixed, it is all new
    fixed = tmp_path / "result.json"
    fixed.write_text(
        cases["result.json"][0].replace(
            '{"id": 2 "text"', '{"id": 2, "type": "message", "date_unixtime": "1772359099", "text"'
        )
    )
    assert "imported 1 sessions (1 new)" in epmem("ingest", str(fixed), data=data).stdout
