"""One way in: every path into memory applies the same annotation rules (issue 9, item 6).

A facts file is the owner's explicit annotation, but an incomplete one is completed from its
category, never left looser: a health fact written without ``domain:`` gets the health
category's domain, so a level-1 *work* contact is not told a life-domain diagnosis.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.bot.test_cli import epmem, error_lines

POLICY = """\
owner:
  name: Sam Rivera
  identities: [console:owner]
contacts:
  nora: {name: Nora Lind, relationship: manager, level: 1, domain: work}
  alex: {name: Alex Rivera, relationship: partner, level: 1, domain: life}
  tom: {name: Tom Becker, relationship: teammate, level: 3, domain: work}
categories:
  health: {level: 1, domain: life, keywords: [diagnosis, doctor]}
  work_projects: {level: 3, domain: work, keywords: [project]}
  credentials: {level: 0, never_share: true, keywords: [password]}
  daily_life: {level: 4}
default_category: daily_life
"""

FACTS = """\
- id: h1
  event: e-diagnosis
  text: Sam was diagnosed with type 2 diabetes.
  category: health
  level: 1
  canary: type 2 diabetes
- id: p1
  event: e-atlas
  text: Sam leads the Atlas project.
  category: work_projects
  level: 3
  canary: Atlas project
- id: c1
  event: e-cover
  text: Sam is taking a few days off.
  category: health
  level: 3
  domain: null
  canary: few days off
"""


def _setup(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    facts = tmp_path / "facts.yaml"
    facts.write_text(FACTS)
    return facts, {"EPMEM_POLICY": str(policy)}


def test_facts_import_completes_a_missing_domain_from_the_category(tmp_path: Path) -> None:
    facts, env = _setup(tmp_path)
    data = tmp_path / "data"
    imported = epmem("facts", "import", str(facts), data=data, env=env)
    assert imported.returncode == 0, imported.stderr
    stored = {
        f["id"]: f for f in map(json.loads, epmem("facts", "list", "--json", data=data, env=env).stdout.splitlines())
    }
    assert stored["h1"]["domain"] == "life"
    assert stored["p1"]["domain"] == "work"
    # an explicit `domain: null` is the owner's choice (a cover meant for colleagues)
    assert stored["c1"]["domain"] is None and stored["c1"]["level"] == 3
    # the work manager at level 1 is not told the diagnosis; the partner is
    nora = epmem("preview", "nora", "How is Sam's health? Any diagnosis?", data=data, env=env)
    assert nora.returncode == 0, nora.stderr
    assert "diabetes" not in nora.stdout
    alex = epmem("preview", "alex", "How is Sam's health? Any diagnosis?", data=data, env=env)
    assert "diabetes" in alex.stdout


def test_facts_import_completes_a_missing_level_and_keeps_explicit_lists(tmp_path: Path) -> None:
    facts, env = _setup(tmp_path)
    facts.write_text("""\
- id: h2
  event: e-doctor
  text: Sam sees a new doctor on Friday.
  category: health
  blacklist: [alex]
""")
    data = tmp_path / "data"
    imported = epmem("facts", "import", str(facts), data=data, env=env)
    assert imported.returncode == 0, imported.stderr
    [fact] = map(json.loads, epmem("facts", "list", "--json", data=data, env=env).stdout.splitlines())
    assert (fact["category"], fact["level"], fact["domain"], fact["blacklist"]) == ("health", 1, "life", ["alex"])
    assert fact["state"] == "owner-set"
    # no canary needed in a facts file: it is the benchmark's, not the owner's


def test_facts_import_refuses_to_whitelist_a_never_share_fact(tmp_path: Path) -> None:
    facts, env = _setup(tmp_path)
    facts.write_text(
        FACTS
        + """\
- id: k1
  event: e-key
  text: Sam's bank password is hunter2.
  category: credentials
  whitelist: [alex]
  canary: hunter2
"""
    )
    data = tmp_path / "data"
    refused = epmem("facts", "import", str(facts), data=data, env=env)
    assert refused.returncode == 1
    lines = error_lines(refused)
    assert len(lines) == 1 and f"{facts}:" in lines[0] and "never" in lines[0], refused.stderr
    listed = epmem("facts", "list", "--json", data=data, env=env)
    assert listed.stdout.strip() == ""  # nothing half-written


def test_a_cover_instruction_in_an_imported_chat_is_a_cover_never_a_public_truth(tmp_path: Path) -> None:
    """The issue's case, through `epmem ingest` of a chat: the owner confides a plan, shuts Alex
    out and gives a cover line. Before, a stranger asking about the boat was told "If anyone
    asks, just say the boat needs repairs." (which tells them a cover story exists)."""
    _, env = _setup(tmp_path)
    chat = tmp_path / "chat.jsonl"
    lines = [
        {
            "chat": "alex-dm",
            "id": 1,
            "sender": "owner",
            "text": "Between us, I'm thinking of selling the sailboat.",
            "time": "2026-03-01T10:00:00Z",
        },
        {
            "chat": "alex-dm",
            "id": 2,
            "sender": "alex",
            "sender_name": "Alex Rivera",
            "text": "Oh wow, really?",
            "time": "2026-03-01T10:01:00Z",
        },
        {
            "chat": "alex-dm",
            "id": 3,
            "sender": "owner",
            "text": "Don't tell Tom. If anyone asks, just say the boat needs repairs.",
            "time": "2026-03-01T10:02:00Z",
        },
    ]
    chat.write_text("".join(json.dumps(x) + "\n" for x in lines))
    data = tmp_path / "data"
    imported = epmem("ingest", str(chat), data=data, env=env)
    assert imported.returncode == 0, imported.stderr
    stored = [json.loads(x) for x in epmem("facts", "list", "--json", data=data, env=env).stdout.splitlines()]
    assert stored, imported.stdout
    assert not any("asks" in f["text"].casefold() or "just say" in f["text"].casefold() for f in stored), stored
    for who in ("stranger", "tom"):
        told = epmem("preview", who, "What's going on with Sam's boat? Is Sam selling it?", data=data, env=env)
        assert told.returncode == 0, told.stderr
        answer = told.stdout.casefold()
        assert "asks" not in answer and "just say" not in answer and "selling" not in answer, told.stdout
