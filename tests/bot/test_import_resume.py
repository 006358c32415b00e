"""Imports that survive interruption (issue 9, item 7): re-running finishes what is missing.

Real `epmem ingest` subprocesses on a real data folder, with a generated Telegram Desktop
export. An import stopped during fact extraction used to keep every turn and only part of the
facts, and a re-run said "0 new" and never extracted the rest.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.telegram_export import policy_yaml, write_full_export
from epmem.ingest import ImportRun, open_export
from testkit.house import house_runtime

#: real imports in subprocesses, one stopped and resumed: more than the suite's 120 s on busy cores
pytestmark = pytest.mark.timeout(600)

REPO = Path(__file__).resolve().parents[2]


def _env(tmp_path: Path, data: Path) -> dict[str, str]:
    policy = tmp_path / "policy.yaml"
    if not policy.exists():
        policy.write_text(policy_yaml(contacts=12))
    return {
        **os.environ,
        "EPMEM_DATA_DIR": str(data),
        "EPMEM_POLICY": str(policy),
        "EPMEM_LOG_LEVEL": "WARNING",
        "EPMEM_EMBEDDER": "wordllama",
    }


def epmem(tmp_path: Path, data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", *args],
        capture_output=True,
        text=True,
        env=_env(tmp_path, data),
        cwd=REPO,
        timeout=300,
    )


def facts(tmp_path: Path, data: Path) -> list[tuple[str, str, str | None, int | None, str]]:
    listed = epmem(tmp_path, data, "facts", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    return sorted((f["session_id"], f["text"], f["category"], f["level"], f["state"]) for f in rows)


def test_a_rerun_extracts_the_facts_an_earlier_import_left(tmp_path: Path) -> None:
    export = write_full_export(tmp_path / "result.json", chats=4, messages_per_chat=60, confided_every=7)
    reference = tmp_path / "reference"
    assert epmem(tmp_path, reference, "ingest", str(export)).returncode == 0
    expected = facts(tmp_path, reference)
    assert expected
    data = tmp_path / "data"
    # the state an import interrupted during extraction leaves: every turn, no facts
    turns_only = epmem(tmp_path, data, "ingest", str(export), "--no-facts")
    assert turns_only.returncode == 0, turns_only.stderr
    assert facts(tmp_path, data) == []
    again = epmem(tmp_path, data, "ingest", str(export))
    assert again.returncode == 0, again.stderr
    assert "resumed: extracted the facts of" in again.stdout, again.stdout
    assert facts(tmp_path, data) == expected
    # and once complete, a re-run has nothing left to do
    third = epmem(tmp_path, data, "ingest", str(export))
    assert "(0 new)" in third.stdout and "resumed" not in third.stdout
    assert facts(tmp_path, data) == expected


def test_ctrl_c_during_extraction_stops_cleanly_and_a_rerun_finishes(tmp_path: Path) -> None:
    export = write_full_export(tmp_path / "result.json", chats=12, messages_per_chat=120, confided_every=9)
    reference = tmp_path / "reference"
    done = epmem(tmp_path, reference, "ingest", str(export))
    assert done.returncode == 0, done.stderr
    expected = facts(tmp_path, reference)
    data = tmp_path / "data"
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "ingest", str(export)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(tmp_path, data),
        cwd=REPO,
    )
    assert proc.stderr is not None
    seen: list[str] = []
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        if line.startswith("extracting facts: "):
            done_n, total = map(int, line.split()[2].split("/"))
            if 0 < done_n < total:
                proc.send_signal(signal.SIGINT)
                break
    else:
        proc.kill()
    out, err = proc.communicate(timeout=240)
    err = "".join(seen) + err
    assert proc.returncode == 130, (proc.returncode, out, err)
    assert "Traceback" not in err
    assert "stopping at the next safe point" in err
    assert "To finish, run the same command again: epmem ingest" in err
    partial = facts(tmp_path, data)
    assert len(partial) < len(expected)
    again = epmem(tmp_path, data, "ingest", str(export))
    assert again.returncode == 0, again.stderr
    assert "resumed: extracted the facts of" in again.stdout
    assert facts(tmp_path, data) == expected


async def _import(data: Path, policy_file: Path, export: Path, stop_after: int | None = None) -> bool:
    """One import in its own runtime (what one `epmem ingest` process is); True if stopped."""
    runtime = await house_runtime(data, load=False, policy_file=policy_file)
    try:
        extracted = 0

        def progress(stage: str, n: int, _turns: int) -> None:
            nonlocal extracted
            extracted += n if stage == "facts" else 0

        run = ImportRun(runtime.conversations, runtime.journal, runtime.distiller, source=str(export), batch=16)
        stop = (lambda: False) if stop_after is None else (lambda: extracted >= stop_after)
        report = await run.run(open_export(export, runtime.policy, None).sessions(), stop, progress)
        return report.interrupted
    finally:
        await runtime.close()


async def _everything(data: Path, policy_file: Path) -> list[tuple[object, ...]]:
    runtime = await house_runtime(data, load=False, policy_file=policy_file)
    try:
        return sorted(
            (
                f.session_id,
                f.id,
                f.text,
                f.event_id,
                f.version,
                f.covers,
                f.category,
                f.level,
                f.domain,
                f.state,
                tuple(f.whitelist),
                tuple(f.blacklist),
            )
            for f in await runtime.memory.all()
        )
    finally:
        await runtime.close()


async def test_a_resumed_import_is_exactly_an_uninterrupted_one_wherever_it_stopped(tmp_path: Path) -> None:
    """Every fact, event link and list the same, whichever session the import stopped after.

    The same sentence said in several chats used to be merged into whichever copy a vector
    search ranked first among equals, so a fact's level depended on the store's order, and
    that differs in a new process: a resumed import came out different.
    """
    export = write_full_export(tmp_path / "result.json", chats=6, messages_per_chat=80, confided_every=5)
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(policy_yaml(contacts=6))
    assert not await _import(tmp_path / "reference", policy_file, export)
    expected = await _everything(tmp_path / "reference", policy_file)
    assert len({row[2] for row in expected}) < len(expected)  # the same words in several sessions
    for stop_after in (1, 9, 17, 25):
        data = tmp_path / f"stopped-{stop_after}"
        assert await _import(data, policy_file, export, stop_after)
        assert len(await _everything(data, policy_file)) < len(expected)
        assert not await _import(data, policy_file, export)
        assert await _everything(data, policy_file) == expected, stop_after
