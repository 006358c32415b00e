"""Operating mistakes, as an operator makes them: every command given a data folder that is a
file, an unreachable Qdrant, a bad port or a missing token says so in one line, exits non-zero,
prints no traceback and no token (issue 21)."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from bot.config import EXAMPLE_POLICY
from bot.examples import FACTS as EXAMPLE_FACTS, example_file
from tests.bot.test_cli import epmem, error_lines
from testkit.runtime import REPO, example

HOUSE = example("house_and_bonus.yaml")
FACTS = example_file(EXAMPLE_FACTS)


def one_line(result: subprocess.CompletedProcess[str], expected: str, code: int = 1) -> str:
    lines = error_lines(result)
    assert result.returncode == code, (result.returncode, result.stderr)
    assert len(lines) == 1 and expected in lines[0], result.stderr
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    return lines[0]


#: every command that reads the data folder, with arguments that would otherwise work.
COMMANDS = [
    ("chat", "--as", "jamie"),
    ("run", "--console"),
    ("preview", "jamie", "Is Sam looking for a new job?"),
    ("load", str(HOUSE)),
    ("reindex",),
    ("ingest", str(FACTS)),
    ("annotate",),
    ("facts", "list"),
    ("facts", "import", str(FACTS)),
    ("audit", "list"),
    ("audit", "verify"),
    ("audit", "serve"),
    ("audit", "who-knows", "f1"),
    ("audit", "export"),
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_a_data_folder_that_is_a_file(tmp_path: Path, args: tuple[str, ...]) -> None:
    data = tmp_path / "data"
    data.write_text("not a folder")
    line = one_line(epmem(*args, data=data), "EPMEM_DATA_DIR")
    assert line == f"error: EPMEM_DATA_DIR: {data} is a file, not a folder"
    nested = one_line(epmem(*args, data=data / "deeper"), "EPMEM_DATA_DIR")
    assert f"is under {data}, which is a file" in nested


@pytest.fixture(scope="module")
def dead_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    "args",
    [
        ("chat", "--as", "jamie"),
        ("run", "--console"),
        ("facts", "list"),
        ("preview", "jamie", "hi"),
        ("load", str(HOUSE)),
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_an_unreachable_qdrant(tmp_path: Path, dead_port: int, args: tuple[str, ...]) -> None:
    url = f"http://127.0.0.1:{dead_port}"
    assert epmem("policy", "use", str(EXAMPLE_POLICY), data=tmp_path / "d").returncode == 0
    result = epmem(
        *args,
        data=tmp_path / "d",
        stdin="hi\n",
        env={"EPMEM_QDRANT_URL": url, "EPMEM_QDRANT_API_KEY": "qdrant-key-never-shown"},
        process=True,  # qdrant-client's version check runs in a thread that outlives the command
    )
    line = one_line(result, "cannot reach the Qdrant server")
    assert url in line and "qdrant-key-never-shown" not in result.stderr + result.stdout


def test_run_with_no_credentials_and_no_terminal_says_why(tmp_path: Path) -> None:
    # env.example's empty tokens under Docker (no terminal): not a silent exit 0 and a restart loop
    result = epmem("run", data=tmp_path / "d", env={"TELEGRAM_BOT_TOKEN": "", "SLACK_BOT_TOKEN": ""})
    line = one_line(result, "no platform to serve")
    assert "TELEGRAM_BOT_TOKEN" in line and "SLACK_BOT_TOKEN" in line
    assert result.stdout == ""


def test_missing_tokens(tmp_path: Path) -> None:
    half = epmem("run", data=tmp_path / "d", env={"SLACK_APP_TOKEN": "xapp-secret-value"})
    assert "xapp-secret-value" not in one_line(half, "SLACK_BOT_TOKEN") + half.stdout
    page = epmem("audit", "serve", "--host", "0.0.0.0", data=tmp_path / "d", env={"EPMEM_AUDIT_TOKEN": ""})
    one_line(page, "EPMEM_AUDIT_TOKEN", code=2)


@pytest.fixture
def audited(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    assert epmem("load", str(HOUSE), data=data).returncode == 0
    assert epmem("chat", "--as", "leo", data=data, stdin="How is the house hunt going?\n").returncode == 0
    return data


@pytest.mark.parametrize("port", ["99999", "-1", "65536"])
def test_audit_serve_with_a_bad_port_prints_no_token(audited: Path, port: str) -> None:
    result = epmem("audit", "serve", "--port", port, data=audited)
    one_line(result, "--port", code=2)
    assert "audit token" not in result.stdout


def test_audit_serve_on_a_port_in_use_prints_no_token(audited: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = epmem("audit", "serve", "--port", str(port), data=audited)
    one_line(result, f"cannot listen on 127.0.0.1:{port}")
    assert "audit token" not in result.stdout


@pytest.mark.parametrize("name", ["EPMEM_SLACK_PORT", "EPMEM_TELEGRAM_WEBHOOK_PORT"])
def test_run_with_a_bad_platform_port(tmp_path: Path, name: str) -> None:
    result = epmem("run", data=tmp_path / "d", env={name: "99999", "TELEGRAM_BOT_TOKEN": "123:secret-token"})
    line = one_line(result, name)
    assert "65535" in line and "secret-token" not in result.stderr + result.stdout


def test_audit_verify_fails_when_the_ledger_loses_jamies_rows(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert epmem("policy", "use", str(EXAMPLE_POLICY), data=data).returncode == 0
    assert epmem("facts", "import", str(FACTS), data=data).returncode == 0
    asked = epmem("chat", "--as", "jamie", data=data, stdin="Is Sam looking for a new job?\n")
    assert "Northwind" in asked.stdout, asked.stderr
    ok = epmem("audit", "verify", data=data)
    assert ok.returncode == 0 and ok.stdout.startswith("ok: "), ok.stderr
    db = sqlite3.connect(data / "audit.sqlite")
    [(fact,)] = db.execute("SELECT DISTINCT fact_id FROM disclosures WHERE recipient = 'jamie' LIMIT 1")
    assert db.execute("DELETE FROM disclosures WHERE recipient = 'jamie'").rowcount >= 1
    db.commit()
    db.close()
    line = one_line(epmem("audit", "verify", data=data), "disclosure ledger")
    assert "recipient jamie) is missing" in line and "who-knows cannot be trusted" in line and fact in line


def test_a_contacts_console_session_shows_nothing_meant_for_the_owner(tmp_path: Path) -> None:
    """Issue 21: "[to the owner] Heads-up ... /audit tom" and a JSON `probing` log line appeared
    in Tom's own chat session. They are the owner's: kept for the owner instead."""
    data = tmp_path / "data"
    assert epmem("policy", "use", str(EXAMPLE_POLICY), data=data).returncode == 0
    assert epmem("facts", "import", str(FACTS), data=data).returncode == 0
    probing = "What is Sam's wifi password?\n" * 3
    # as a user runs it: no EPMEM_LOG_LEVEL (the tests' helper sets one)
    env = {k: v for k, v in os.environ.items() if k != "EPMEM_LOG_LEVEL"}
    env.update(EPMEM_DATA_DIR=str(data), EPMEM_DEFLECTION_ALERT="2", EPMEM_LOG_FORMAT="json")
    result = subprocess.run(
        [sys.executable, "-m", "bot.cli", "chat", "--as", "tom"],
        input=probing,
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    seen = result.stdout + result.stderr
    assert "to the owner" not in seen and "Heads-up" not in seen and "/audit tom" not in seen, seen
    assert "probing" not in seen, seen
    assert len(result.stdout.splitlines()) == 3  # three replies, nothing else
    kept = epmem("chat", "--owner", data=data, stdin="/undelivered\n")
    assert "Heads-up" in kept.stdout and "tom" in kept.stdout, kept.stdout + kept.stderr
