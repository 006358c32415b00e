"""Damaged data and bad files, as a new user meets them: one line on stderr, exit 1, no traceback.

And output that is piped somewhere else is not cut at 80 columns.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import yaml

from bot.config import EXAMPLE_POLICY
from tests.bot.test_cli import epmem, error_lines
from testkit.runtime import example

HOUSE = example("house_and_bonus.yaml")


def one_error(result: object, expected: str) -> str:
    """The single error line, which must contain ``expected``; nothing like a traceback."""
    stderr: str = getattr(result, "stderr")  # noqa: B009 (result: any run's result)
    lines = error_lines(result)  # type: ignore[arg-type]
    assert getattr(result, "returncode") == 1, stderr  # noqa: B009
    assert len(lines) == 1 and expected in lines[0], stderr
    assert "Traceback" not in stderr and "Task exception" not in stderr, stderr
    return lines[0]


@pytest.fixture
def loaded(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    result = epmem("load", str(HOUSE), data=data)
    assert result.returncode == 0, result.stderr
    return data


def test_a_garbage_state_database(loaded: Path) -> None:
    for name in ("state.sqlite-wal", "state.sqlite-shm"):
        (loaded / name).unlink(missing_ok=True)
    (loaded / "state.sqlite").write_bytes(b"\x00garbage, not SQLite\xff" * 200)
    line = one_error(epmem("chat", "--as", "leo", data=loaded, stdin="hi\n"), "is corrupted")
    assert line == f"error: state database {loaded / 'state.sqlite'} is corrupted: file is not a database"


def _flip(path: Path, seed: int) -> None:
    rng = random.Random(seed)
    data = bytearray(path.read_bytes())
    for _ in range(max(1, len(data) // 20)):
        data[rng.randrange(len(data))] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damaged", ["epmem-collection.json", "edge_config.json", "segment.json"])
def test_byte_flipped_vector_files(loaded: Path, damaged: str) -> None:
    files = sorted((loaded / "qdrant").rglob(damaged))
    assert files
    for i, path in enumerate(files):
        _flip(path, i)
    one_error(epmem("chat", "--as", "leo", data=loaded, stdin="hi\n"), "is damaged")


def test_a_bad_yaml_file_given_to_ingest(tmp_path: Path) -> None:
    bad = tmp_path / "history.yaml"
    bad.write_text("format: epmem-scenario/1\nname: x\nsessions: [\n  - {id: s1\n")
    assert epmem("policy", "use", str(EXAMPLE_POLICY), data=tmp_path / "data").returncode == 0
    for args in (("ingest", str(bad)), ("ingest", str(bad), "--format", "scenario")):
        line = one_error(epmem(*args, data=tmp_path / "data"), "bad YAML")
        assert line.startswith(f"error: {bad}:")
    assert not (tmp_path / "data" / "qdrant").exists()  # nothing written


def test_audit_show_prints_the_record_and_nothing_else(loaded: Path) -> None:
    assert epmem("chat", "--as", "raj", data=loaded, stdin="How is the house hunt going?\n").returncode == 0
    [record] = [json.loads(x) for x in epmem("audit", "list", "--json", data=loaded).stdout.splitlines()]
    shown = epmem("audit", "show", record["id"], data=loaded)
    assert shown.returncode == 0 and json.loads(shown.stdout)["id"] == record["id"]
    assert shown.stderr == ""


def test_bench_json_makes_its_folder(tmp_path: Path) -> None:
    out = tmp_path / "out" / "deeper" / "calculus.json"
    result = epmem("bench", "calculus", "--seconds", "0.05", "--json", str(out), data=tmp_path / "d")
    assert result.returncode == 0, result.stderr
    assert json.loads(out.read_text()) == json.loads(result.stdout)


def test_piped_output_is_not_wrapped(loaded: Path) -> None:
    result = epmem(
        "preview", "leo", "How is the house hunt going, and is there anything new with the offer?", data=loaded
    )
    assert result.returncode == 0, result.stderr
    reply, audit_line = result.stdout.splitlines()
    assert len(reply) > 80 and reply.endswith("on Elm Road.")
    assert audit_line.startswith("(preview audit id ")
    again = epmem("load", str(HOUSE), data=loaded / ("x" * 60))
    assert again.returncode == 0 and len(again.stdout.splitlines()) == 1 and len(again.stdout) > 80


def test_load_keeps_the_scenarios_owner_identities_and_persona(tmp_path: Path) -> None:
    scenario = yaml.safe_load(HOUSE.read_text())
    scenario["policy"]["owner"] = {
        "name": "Maya Chen",
        "identities": ["telegram:777", "console:maya"],
        "persona": "warm and brief",
    }
    path = tmp_path / "house.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))
    data = tmp_path / "data"
    assert epmem("load", str(path), data=data).returncode == 0
    owner = yaml.safe_load((data / "policy.yaml").read_text())["owner"]
    assert {k: v for k, v in owner.items() if v is not None} == {
        "name": "Maya Chen",
        "identities": ["telegram:777", "console:maya"],
        "persona": "warm and brief",
    }
    # the scenario's own owner block still wins where it speaks
    scenario["owner"] = {"name": "Maya C.", "persona": "formal"}
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))
    assert epmem("load", str(path), data=data).returncode == 0
    owner = yaml.safe_load((data / "policy.yaml").read_text())["owner"]
    assert {k: v for k, v in owner.items() if v is not None} == {
        "name": "Maya C.",
        "identities": ["telegram:777", "console:maya"],
        "persona": "formal",
    }


def test_a_setting_that_does_not_fit(tmp_path: Path) -> None:
    result = epmem("chat", "--as", "leo", data=tmp_path / "d", env={"EPMEM_LLM_BACKEND": "gpt-9"})
    assert one_error(result, "EPMEM_LLM_BACKEND") == "error: EPMEM_LLM_BACKEND: Input should be 'rules' or 'openai'"
    result = epmem("run", data=tmp_path / "d", env={"EPMEM_SLACK_PORT": "http"})
    one_error(result, "EPMEM_SLACK_PORT: Input should be a valid integer")
