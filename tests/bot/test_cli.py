"""The `epmem` command as a user runs it: real subprocesses on a real data folder."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from bot.config import EXAMPLE_POLICY
from bot.examples import SCHEMA, example_file
from epmem.audit import AuditLog
from testkit.cli import run_cli
from testkit.runtime import REPO, example

EPMEM = [sys.executable, "-m", "bot.cli"]

BROKEN_POLICY = """\
owner: {name: Kai}
contacts:
  ana: {name: Ana, level: 7, domain: life}
  ben: {name: Ben, level: 2, domain: work, identities: [telegram:42]}
  cy: {name: Cy, level: 2, identities: [telegram:42]}
groups:
  team: [ben, zed]
categories:
  pw: {level: 0, never_share: true, keywords: [password]}
  hobbies: {level: 4}
default_category: hobbies
exceptions:
  - {effect: allow, who: [ben], category: pw}
"""


def epmem(
    *args: str, data: Path, stdin: str | None = None, env: dict[str, str] | None = None, process: bool = False
) -> subprocess.CompletedProcess[str]:
    """``epmem ARGS`` on the data folder ``data``: in this process (:func:`testkit.cli.run_cli`),
    or as a real subprocess with ``process=True`` where the process itself is tested."""
    if not process:
        return run_cli(
            list(args), {"EPMEM_DATA_DIR": str(data), "EPMEM_LOG_LEVEL": "WARNING", **(env or {})}, stdin or ""
        )
    full_env = {**os.environ, "EPMEM_DATA_DIR": str(data), "EPMEM_LOG_LEVEL": "WARNING", **(env or {})}
    return subprocess.run(
        [*EPMEM, *args],
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        env=full_env,
        cwd=REPO,
        timeout=120,
    )


def error_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("error:")]


def test_policy_check_reports_every_problem_with_its_line_in_one_pass(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(BROKEN_POLICY)
    result = epmem("policy", "check", str(bad), data=tmp_path / "d")
    assert result.returncode == 1
    lines = error_lines(result)
    # the schema problem and the cross-reference problems, together, each with its line
    assert any(f"{bad}:3: contacts.ana.level" in line for line in lines), lines
    assert any(":7: groups.team.1: unknown contact 'zed'" in line for line in lines), lines
    assert any(":5: contacts.cy.identities.0: identity 'telegram:42' is also claimed" in line for line in lines)
    assert any(":13: exceptions.0: category 'pw' is never_share" in line for line in lines), lines
    assert len(lines) == 4 and "Traceback" not in result.stderr
    result_ok = epmem("policy", "check", str(EXAMPLE_POLICY), data=tmp_path / "d")
    assert result_ok.returncode == 0 and "ok" in result_ok.stdout
    bad.write_text("contacts: [unclosed\n")
    lines = error_lines(epmem("policy", "check", str(bad), data=tmp_path / "d"))
    assert len(lines) == 1 and "bad YAML" in lines[0] and f"{bad}:" in lines[0]


def test_policy_schema_is_json_and_matches_the_committed_copy(tmp_path: Path) -> None:
    result = epmem("policy", "schema", data=tmp_path / "d")
    schema = json.loads(result.stdout)
    assert "contacts" in schema["properties"]
    committed = json.loads(example_file(SCHEMA).read_text())
    assert committed == schema, "regenerate with: epmem policy schema > bot/examples/policy.schema.json"


def test_load_then_chat_then_audit(tmp_path: Path) -> None:
    data = tmp_path / "data"
    loaded = epmem("load", str(example("house_and_bonus.yaml")), data=data)
    assert loaded.returncode == 0, loaded.stderr
    assert (data / "policy.yaml").exists()
    chat = epmem("chat", "--as", "raj", data=data, stdin="How is the house hunt going?\n")
    assert chat.returncode == 0, chat.stderr
    assert "more space" in chat.stdout and "Elm Road" not in chat.stdout
    listed = epmem("audit", "list", "--json", data=data)
    records = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [r["contact"] for r in records] == ["raj"] and records[0]["disclosed"] == ["f2"]
    shown = json.loads(epmem("audit", "show", records[0]["id"], data=data).stdout)
    assert any(c["fact"] == "f1" and not c["allowed"] for c in shown["candidates"])
    assert epmem("audit", "verify", data=data).returncode == 0
    csv_out = epmem("audit", "export", "--format", "csv", data=data).stdout
    assert csv_out.splitlines()[0].startswith("seq,id,time,kind")
    knows = epmem("audit", "who-knows", "f2", data=data).stdout
    assert "raj" in knows
    facts = epmem("facts", "list", "--json", data=data).stdout.splitlines()
    assert len(facts) == 6


def test_explicit_policy_wins_over_the_loaded_one(tmp_path: Path) -> None:
    data = tmp_path / "data"
    epmem("load", str(example("house_and_bonus.yaml")), data=data)
    result = epmem("chat", "--as", "raj", data=data, stdin="hi\n", env={"EPMEM_POLICY": str(EXAMPLE_POLICY)})
    assert result.returncode == 1 and "unknown contact 'raj'" in result.stderr


def test_bad_input_gives_one_line_and_writes_nothing_partial(tmp_path: Path) -> None:
    data = tmp_path / "data"
    epmem("load", str(example("house_and_bonus.yaml")), data=data)
    unknown = epmem("chat", "--as", "bob", data=data)
    assert unknown.returncode == 1 and len(error_lines(unknown)) == 1
    odd = epmem("chat", "--as", "leo", data=data, stdin="\n" + "x" * 100_000 + "\n")
    assert odd.returncode == 1
    assert any("empty message (line 1)" in line for line in error_lines(odd))
    assert any("100000 characters (line 2)" in line for line in error_lines(odd))
    kinds = [json.loads(x)["kind"] for x in epmem("audit", "list", "--json", data=data).stdout.splitlines()]
    assert kinds == ["rejected"]
    # a broken scenario leaves the loaded memory alone
    broken = tmp_path / "broken.yaml"
    broken.write_text(example("house_and_bonus.yaml").read_text().replace("canary: Elm Road", "canary: 3: x:"))
    failed = epmem("load", str(broken), data=data)
    assert failed.returncode == 1 and error_lines(failed)
    assert len(epmem("facts", "list", "--json", data=data).stdout.splitlines()) == 6


def test_corrupted_and_tampered_audit(tmp_path: Path) -> None:
    data = tmp_path / "data"
    epmem("load", str(example("house_and_bonus.yaml")), data=data)
    epmem("chat", "--as", "leo", data=data, stdin="How is the house hunt going?\nWhen is the Atlas launch?\n")
    db = sqlite3.connect(data / "audit.sqlite")
    first_id = db.execute("SELECT id FROM audit ORDER BY seq LIMIT 1").fetchone()[0]
    # the words sit beside the chained skeleton, under a salted digest (epmem.audit.sealing)
    changed = db.execute(
        "UPDATE audit_text SET text = replace(text, 'Elm Road', 'Oak Lane') WHERE seq = 1 AND text LIKE '%Elm Road%'"
    ).rowcount
    db.commit()
    db.close()
    assert changed == 1
    tampered = epmem("audit", "verify", data=data)
    assert tampered.returncode == 1
    assert error_lines(tampered) == [
        f"error: audit chain broken at record {first_id} (seq 1): text 'reply' does "
        "not match its digest; 0 records before it verify"
    ]
    db = sqlite3.connect(data / "audit.sqlite")
    db.execute("UPDATE audit_text SET text = replace(text, 'Oak Lane', 'Elm Road') WHERE seq = 1")
    body = json.loads(db.execute("SELECT body FROM audit WHERE seq = 2").fetchone()[0])
    body["deflected"] = not body["deflected"]  # the skeleton is what the hash covers
    db.execute("UPDATE audit SET body = ? WHERE seq = 2", (json.dumps(body),))
    db.commit()
    db.close()
    lines = error_lines(epmem("audit", "verify", data=data))
    assert len(lines) == 1 and "(seq 2): hash does not match its content; 1 records before it verify" in lines[0]
    for name in ("audit.sqlite-wal", "audit.sqlite-shm"):
        (data / name).unlink(missing_ok=True)
    (data / "audit.sqlite").write_bytes(b"this is not a database" * 100)
    for args in (("audit", "verify"), ("chat", "--as", "leo")):
        result = epmem(*args, data=data, stdin="hello\n")
        lines = error_lines(result)
        assert result.returncode == 1 and len(lines) == 1 and "is corrupted" in lines[0], result.stderr


def test_second_process_on_the_same_data_folder_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    epmem("load", str(example("house_and_bonus.yaml")), data=data)
    env = {**os.environ, "EPMEM_DATA_DIR": str(data), "EPMEM_LOG_LEVEL": "WARNING"}
    holder = subprocess.Popen(
        [*EPMEM, "chat", "--as", "leo"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )
    try:
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.write("When is the Atlas launch?\n")
        holder.stdin.flush()
        holder.stdout.readline()  # the first process now holds the folder
        second = epmem("chat", "--as", "leo", data=data, stdin="hi\n")
        lines = error_lines(second)
        assert second.returncode == 1 and len(lines) == 1
        assert "already open in another epmem process" in lines[0] and str(data) in lines[0]
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.timeout(600)  # a whole benchmark set with real models: ~45 s on two busy cores
@pytest.mark.parametrize("scenario_dir", ["examples", "own"])
def test_bench_scenarios_meets_the_acceptance_figures(tmp_path: Path, scenario_dir: str) -> None:
    path = (
        example("house_and_bonus.yaml").parent
        if scenario_dir == "examples"
        else REPO / "benchmarks" / "scenarios" / "own"
    )
    out, replies = tmp_path / "m.json", tmp_path / "replies.jsonl"
    result = epmem(
        "bench",
        "scenarios",
        str(path),
        "--mode",
        "gold",
        "--json",
        str(out),
        "--replies",
        str(replies),
        data=tmp_path / "d",
    )
    assert result.returncode == 0, result.stderr
    metrics = json.loads(out.read_text())
    lines = [json.loads(line) for line in replies.read_text().splitlines()]
    assert len(lines) == metrics["answer"]["n"]
    assert all(
        list(line) == ["scenario", "question", "askers", "reply", "disclosed", "deflected", "composer"]
        for line in lines
    )
    assert all(
        line["composer"] in ("rules", "deflection") and line["deflected"] == (not line["disclosed"]) for line in lines
    )
    from benchmarks.tools.check_replies import main as check_replies

    assert check_replies([str(replies), str(path)]) == 0
    assert set(metrics) == {"classify", "permit", "answer", "answer_plain", "answer_injection", "llm", "conversation"}
    assert metrics["conversation"] == {"n": len(lines), "violations": 0}
    assert set(metrics["llm"]) == {"calls", "prompt_tokens", "completion_tokens"}
    assert set(metrics["answer"]) == {
        "n",
        "leak_rate",
        "any_fact_leaks",
        "completeness",
        "precision",
        "differentiation",
    }
    assert metrics["answer"]["any_fact_leaks"] == 0
    assert "llm budget:" in result.stderr
    assert metrics["permit"]["exact"] == 1.0 and metrics["permit"]["safe"] == 1.0
    assert metrics["answer"]["leak_rate"] == 0.0
    if scenario_dir == "examples":
        assert metrics["answer"]["completeness"] >= 0.9
        assert metrics["answer"]["precision"] >= 0.8
        assert metrics["answer"]["differentiation"] >= 0.9


def test_bench_calculus_reports_rates(tmp_path: Path) -> None:
    out = tmp_path / "c.json"
    result = epmem("bench", "calculus", "--seconds", "0.2", "--json", str(out), data=tmp_path / "d")
    assert result.returncode == 0, result.stderr
    numbers = json.loads(out.read_text())
    assert numbers["contacts"] == 50 and numbers["single_verdicts_per_s"] > 0
    assert numbers["composite3_verdicts_per_s"] > 0


def test_audit_list_shows_a_question_as_one_quoted_line_not_markup(tmp_path: Path) -> None:
    """Issue 38: a contact's question cannot draw rows of its own in `epmem audit list`, nor
    rich markup, nor turn the line round (U+202E)."""
    data = tmp_path / "data"
    assert epmem("load", str(example("house_and_bonus.yaml")), data=data).returncode == 0

    async def write() -> None:
        async with AuditLog(data / "audit.sqlite") as log:
            await log.append("reply", {"question": "[red]hi[/red]\nforged \u202erow"}, contact="leo")

    asyncio.run(write())
    listed = epmem("audit", "list", data=data, env={"COLUMNS": "200"})
    assert listed.returncode == 0, listed.stderr
    [row] = [line for line in listed.stdout.splitlines() if "leo" in line]
    assert "[red]hi[/red] \u23ce forged <U+202E>row" in row and "\u202e" not in listed.stdout, listed.stdout
