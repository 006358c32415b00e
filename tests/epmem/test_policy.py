"""Policy loading: shapes, cross-references, and errors that point at the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from epmem.policy.model import PolicyError, load_policy, yaml_lines
from epmem.scenario import load_scenario
from bot.config import EXAMPLE_POLICY
from testkit.runtime import example


def test_example_policy_loads() -> None:
    policy = load_policy(EXAMPLE_POLICY)
    assert len(policy.contacts) >= 8 and len(policy.groups) >= 2 and len(policy.categories) >= 8
    assert policy.categories["credentials"].never_share


def test_scenario_policy_block_is_a_policy_and_extra_keys_are_ignored(tmp_path: Path) -> None:
    scenario = load_scenario(example("quitting_job.yaml"))
    assert scenario.effective_policy().owner.name == "Lin Su"
    text = example("quitting_job.yaml").read_text()
    extra = tmp_path / "s.yaml"
    extra.write_text(text.replace("\npolicy:", "\npolicy:\n  flavour: extra  # a key only some tools know", 1))
    assert "flavour: extra" in extra.read_text()
    assert load_scenario(extra).policy.contacts.keys() == scenario.policy.contacts.keys()


@pytest.mark.parametrize(
    ("snippet", "expected"),
    [
        ("contacts:\n  a: {name: A, level: 0}\n", "contacts.a.level"),
        ("contacts:\n  owner: {name: A, level: 1}\n", "reserved"),
        ("contacts:\n  a: {name: A, level: 1, identities: ['whatsapp:1']}\n", "identity 'whatsapp:1'"),
        ("contacts:\n  a: {name: A, level: 1, domain: play}\n", "contacts.a.domain"),
        ("groups:\n  g: [ghost]\n", "unknown contact 'ghost'"),
        ("exceptions:\n  - {effect: allow, who: [ghost], fact: f1}\n", "unknown contact or group 'ghost'"),
        ("exceptions:\n  - {effect: allow, who: [], fact: f1}\n", "exceptions.0.who"),
        ("colour: blue\n", "colour: Extra inputs are not permitted"),
    ],
)
def test_each_problem_is_named_with_field_and_line(tmp_path: Path, snippet: str, expected: str) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("categories:\n  misc: {level: 4}\ndefault_category: misc\n" + snippet)
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    rendered = str(info.value)
    assert expected in rendered and f"{path}:" in rendered


def test_problem_lines_are_the_yaml_lines() -> None:
    lines = yaml_lines("a:\n  b:\n    - x\n    - y: 1\n")
    assert lines[("a",)] == 1 and lines[("a", "b")] == 2 and lines[("a", "b", 1, "y")] == 4


def test_unreadable_and_non_mapping_files(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="cannot read file"):
        load_policy(tmp_path / "missing.yaml")
    listed = tmp_path / "list.yaml"
    listed.write_text("- a\n- b\n")
    with pytest.raises(PolicyError, match="a policy must be a mapping"):
        load_policy(listed)
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(PolicyError, match="not UTF-8"):
        load_policy(binary)
