"""The simple formats (JSONL, scenario) and format detection; errors name file, line, field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from epmem.ingest import IngestError, detect_format, read_export
from epmem.policy.model import load_policy

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_jsonl_maps_identities_names_and_unknowns(tmp_path: Path) -> None:
    policy = load_policy(FIXTURES / "ingest" / "policy.yaml")
    path = _jsonl(
        tmp_path / "chat.jsonl",
        [
            {
                "chat": "g1",
                "chat_kind": "group",
                "id": 1,
                "sender": "telegram:2000002",
                "text": "Dinner Friday?",
                "time": "2026-03-01T18:00:00Z",
            },
            {
                "chat": "g1",
                "chat_kind": "group",
                "id": 2,
                "sender": "Zed Unknown",
                "text": "I'm in",
                "time": "2026-03-01T18:01:00Z",
            },
            {
                "chat": "g1",
                "chat_kind": "group",
                "id": 3,
                "sender": "owner",
                "text": "Yes, booked for 8",
                "reply_to": 1,
                "time": "2026-03-01T18:02:00Z",
            },
        ],
    )
    sessions = read_export(path, policy)
    assert {s.participants[1] for s in sessions} == {"alex", "unknown:name:Zed Unknown"}
    alex = next(s for s in sessions if s.participants[1] == "alex")
    assert [t.text for t in alex.turns] == ["Dinner Friday?", "Yes, booked for 8"]


def test_jsonl_error_names_line_and_field(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path / "bad.jsonl",
        [{"chat": "c", "id": 1, "sender": "owner", "text": "hi"}, {"chat": "c", "id": 2, "text": "no sender"}],
    )
    with pytest.raises(IngestError, match=r"bad.jsonl: line 2, field 'sender'"):
        read_export(path, None)
    path.write_text('{"chat": "c", "id": 1, "sender": "owner", "text": "hi"}\n{not json\n')
    with pytest.raises(IngestError, match=r"line 2: not valid JSON"):
        read_export(path, None)


def test_export_without_the_owner_is_refused(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "c.jsonl", [{"chat": "c", "id": 1, "sender": "slack:T1/U9", "text": "hi"}])
    with pytest.raises(IngestError, match="owner.identities"):
        read_export(path, None)


def test_scenario_sessions_keep_their_ids() -> None:
    path = FIXTURES / "scenarios" / "quitting_job.yaml"
    assert detect_format(path) == "scenario"
    sessions = read_export(path, None)
    assert "s1" in {s.id for s in sessions}
    s1 = next(s for s in sessions if s.id == "s1")
    assert s1.participants == ["owner", "xiaolin"] and s1.turns[2].reply_to == "1"


def test_detection(tmp_path: Path) -> None:
    assert detect_format(FIXTURES / "ingest" / "telegram") == "telegram"
    assert detect_format(FIXTURES / "ingest" / "telegram" / "result.json") == "telegram"
    assert detect_format(FIXTURES / "ingest" / "slack") == "slack"
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(IngestError, match="--format"):
        detect_format(tmp_path / "notes.txt")
    with pytest.raises(IngestError, match="no such file"):
        detect_format(tmp_path / "missing.json")
