"""The benchmark's ``conversation`` metric and the scenario files' ``links`` (SCENARIOS.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.conversation import Conversation
from epmem.policy.model import PolicyError
from epmem.scenario import load_scenario
from testkit.runtime import REPO, example

LINKED = REPO.parent / "shared" / "bench" / "cumulative" / "house_and_bonus_linked.yaml"
HOUSE = "Maya and Leo made an offer on the blue house on Elm Road."
BONUS = "Maya received a retention bonus."


def linked_copy(tmp_path: Path) -> Path:
    """The linked example as our copy writes it: the examples/ file plus its one link."""
    text = example("house_and_bonus.yaml").read_text()
    path = tmp_path / "linked.yaml"
    path.write_text(text.replace("\nfacts:", "\nlinks:\n  - [e-house, e-bonus, e-deposit]\nfacts:", 1))
    return path


def test_two_replies_that_tell_a_matter_one_could_not_are_a_violation(tmp_path: Path) -> None:
    conversation = Conversation(load_scenario(linked_copy(tmp_path)))
    assert conversation.add(f"Here's what I can share: {HOUSE}", ["leo"]) == []
    assert conversation.add(f"Here's what I can share: {BONUS}", ["leo"]) == ["leo: ['f1', 'f3']"]
    assert conversation.add("The Atlas launch moved to 12 May.", ["ben"]) == []
    assert (conversation.n, conversation.violations) == (3, 1)


def test_without_the_link_the_house_and_the_bonus_are_two_matters() -> None:
    conversation = Conversation(load_scenario(example("house_and_bonus.yaml")))
    assert conversation.add(HOUSE, ["leo"]) == [] and conversation.add(BONUS, ["leo"]) == []
    assert conversation.violations == 0


@pytest.mark.skipif(not LINKED.exists(), reason="the shared folder is not beside this checkout")
def test_the_shared_linked_example_loads_its_links() -> None:
    assert load_scenario(LINKED).links == [["e-house", "e-bonus", "e-deposit"]]


def test_a_link_to_an_event_no_fact_has_is_refused_with_its_line(tmp_path: Path) -> None:
    path = linked_copy(tmp_path)
    path.write_text(path.read_text().replace("[e-house, e-bonus, e-deposit]", "[e-house, e-bonsu]"))
    with pytest.raises(PolicyError) as caught:
        load_scenario(path)
    assert "unknown event 'e-bonsu'" in str(caught.value) and "links" in str(caught.value)
