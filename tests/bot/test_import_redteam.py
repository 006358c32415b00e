"""The red team's flows through `epmem ingest` as the owner runs it (real subprocesses, the
example policy, a fresh data folder), and the import's account of what it could not read."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bot.config import EXAMPLE_POLICY
from bot.digest import compose
from tests.bot.test_cli import epmem
from testkit.runtime import REPO

REDTEAM = REPO / "tests" / "fixtures" / "redteam"


def example_owner(data: Path) -> Path:
    """A fresh data folder whose active policy is the example owner's (Sam Rivera)."""
    assert epmem("policy", "use", str(EXAMPLE_POLICY), data=data).returncode == 0
    return data


def _facts(data: Path) -> list[dict[str, Any]]:
    listed = epmem("facts", "list", "--json", data=data)
    return [json.loads(x) for x in listed.stdout.splitlines()]


def test_an_impostor_named_like_the_owner_opens_nothing(tmp_path: Path) -> None:
    data = example_owner(tmp_path / "data")
    imported = epmem("ingest", str(REDTEAM / "impostor.json"), data=data)
    assert imported.returncode == 0, imported.stderr
    assert "not taken for you: telegram:2000666 (Sam Rivera)" in imported.stderr
    knee = next(f for f in _facts(data) if "knee operation" in str(f["text"]))
    assert not {"tom", "lena"} & set(knee["whitelist"])
    told = epmem("preview", "lena", "Is Sam having another knee operation?", data=data)
    assert told.returncode == 0 and "knee" not in told.stdout.casefold() and "meniscus" not in told.stdout.casefold()
    salary = next(f for f in _facts(data) if "140k" in str(f["text"]))
    assert not str(salary["text"]).startswith("Sam's") and salary["state"] == "pending"


def test_a_statement_that_starts_with_a_cue_is_told_to_no_stranger(tmp_path: Path) -> None:
    data = example_owner(tmp_path / "data")
    imported = epmem("ingest", str(REDTEAM / "cues3.jsonl"), data=data)
    assert imported.returncode == 0, imported.stderr
    texts = [str(f["text"]) for f in _facts(data)]
    assert any("surprise birthday party" in t for t in texts), texts  # produced no fact before
    assert not any("dons't" in t or "rather people" in t for t in texts), texts
    for question in ("Is Sam running a marathon?", "Is Sam moving to Toronto?", "Is there a party for Tom?"):
        told = epmem("preview", "stranger", question, data=data)
        answer = told.stdout.casefold()
        assert told.returncode == 0 and not any(w in answer for w in ("marathon", "toronto", "party")), told.stdout
    told = epmem("preview", "tom", "Is anyone planning something for my birthday?", data=data)
    assert "party" not in told.stdout.casefold()


def test_what_could_not_be_read_is_listed_not_lost(tmp_path: Path) -> None:
    chat = tmp_path / "chat.jsonl"
    lines = [
        {
            "chat": "c1",
            "id": "m1",
            "sender": "owner",
            "text": "The team offsite is in Lisbon from 6 to 8 May.",
            "time": "2026-03-01T10:00:00Z",
        },
        {"chat": "c1", "id": "m2", "sender": "noor", "text": "Thanks! Can't wait.", "time": "2026-03-01T10:01:00Z"},
        {
            "chat": "c1",
            "id": "m3",
            "sender": "owner",
            "text": "Please remember I'm allergic to peanuts and shellfish.",
            "time": "2026-03-01T10:02:00Z",
        },
        {"chat": "c1", "id": "m4", "sender": "noor", "text": "What time do we leave?", "time": "2026-03-01T10:03:00Z"},
    ]
    chat.write_text("".join(json.dumps(x) + "\n" for x in lines))
    data = example_owner(tmp_path / "data")
    imported = epmem("ingest", str(chat), data=data)
    assert imported.returncode == 0, imported.stderr
    out = imported.stdout + imported.stderr
    # the owner's instruction with news in it is listed; the reaction and the question are filler
    assert "1 statement could not be turned into facts" in out, out
    assert 'turn 2 (owner): "Please remember I\'m allergic to peanuts and shellfish."' in out, out
    assert "Can't wait" not in out and "What time" not in out
    listed = epmem("facts", "unread", data=data)
    assert listed.returncode == 0 and "peanuts" in listed.stdout, listed.stderr
    cleared = epmem("facts", "unread", "--clear", data=data)
    assert "cleared 1" in cleared.stdout
    assert "peanuts" not in epmem("facts", "unread", data=data).stdout


def test_the_digest_points_to_what_could_not_be_read() -> None:
    now = datetime(2026, 3, 2, tzinfo=timezone.utc)
    digest = compose([], now, now, waiting_review=0, unread=3)
    assert digest.unread == 3
    assert (
        "3 statements from your imported chats could not be turned into facts: see `epmem facts unread`" in digest.text
    )
    assert "could not be turned" not in compose([], now, now).text
