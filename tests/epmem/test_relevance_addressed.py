"""The asker says "you" to the owner; the memory names the owner. The cross-encoder reads the
question with the owner named. The real cross-encoder: the point is what the model makes of it."""

from __future__ import annotations

import pytest

from epmem.language import ENGLISH
from epmem.embedding.cross_encoder import available, shared_cross_encoder
from epmem.memory.facts import Fact
from epmem.memory.recall import Recalled, RecalledEvent
from epmem.reply.projection import FactDecision, Projection
from epmem.reply.relevance import Relevance, addressed_to, called_as_in_facts, owner_called


def test_the_owner_addressed_as_you_is_named() -> None:
    assert (
        addressed_to("Are you cutting down your hours? You're busy.", "Leila")
        == "Are Leila cutting down Leila's hours? Leila is busy."
    )
    assert addressed_to("Are you two getting a pet?", "Alex") == "Are Alex getting a pet?"
    assert addressed_to("Is Young coming?", "Alex") == "Is Young coming?"  # a word, not a pronoun
    assert addressed_to("Are you there?", "") == "Are you there?"


def test_the_owner_is_named_as_the_facts_name_them() -> None:
    assert owner_called("Dr. Leila Haddad", ["From September Leila is going down to 4 days."]) == "Leila"
    assert owner_called("Nguyễn Thu Hà", ["Ha is on track to submit next year."]) == "Hà"
    assert owner_called("Chen Jing", ["Chen Jing cut her hair.", "Jing's sister called."]) == "Jing"
    assert owner_called("Lin Su", []) == "Lin"


@pytest.mark.skipif(not available(), reason="the cross-encoder is not installed")
def test_the_cross_encoder_hears_you_as_the_owner() -> None:
    events, projection = _one_fact("Alex and Sam are picking up Knedlík, a cat from the shelter, on Saturday.", 0.64)
    relevance = Relevance(ENGLISH.relevance, shared_cross_encoder())
    named = relevance.choose("Are you two getting a pet?", events, projection, owner="Alex Novak")
    assert named.chosen == ("f1",), named.left_out
    unnamed = relevance.choose("Are you two getting a pet?", events, projection)
    assert unnamed.chosen == () and "f1" in unnamed.left_out


PEOPLE = [("Fernanda Ibarra", "Fer", "mija"), ("Eduardo Ibarra", "Lalo"), ("Guillermo Ruiz", "Memo")]


def test_a_contact_is_named_as_the_facts_name_them() -> None:
    facts = ["Fernanda is getting married in December.", "Memo cleans the tinaco on Saturday."]
    assert called_as_in_facts("when is Fer's wedding?", PEOPLE, facts) == "when is Fernanda's wedding?"
    assert called_as_in_facts("is Guillermo coming?", PEOPLE, facts) == "is Memo coming?"
    # a form the facts use already, a surname two contacts share, a lower-case word: as asked
    assert called_as_in_facts("is Fernanda ok?", PEOPLE, facts) == "is Fernanda ok?"
    assert called_as_in_facts("how are the Ibarra kids?", PEOPLE, facts) == "how are the Ibarra kids?"
    assert called_as_in_facts("how are you, mija?", PEOPLE, facts) == "how are you, mija?"
    # a function word names nobody, even as someone's alias
    will = [("William Okafor", "Will")]
    assert called_as_in_facts("Will you be there?", will, ["William is coming."]) == "Will you be there?"
    assert called_as_in_facts("is Will coming?", [("William Okafor", "Willy")], ["William is coming."]) == (
        "is Will coming?"
    )
    # a word of the owner's name names the owner as much as the contact
    tuan = [("Nguyen Van Tuan",)]
    assert called_as_in_facts("is Nguyen ok?", tuan, ["Tuan is bringing bánh chưng."], "Nguyen Thi Lan") == (
        "is Nguyen ok?"
    )
    assert called_as_in_facts("is Nguyen ok?", tuan, ["Tuan is bringing bánh chưng."]) == "is Tuan ok?"
    # facts that name nobody of theirs: nothing to name them by
    assert called_as_in_facts("when is Fer's wedding?", PEOPLE, ["The water is cut."]) == "when is Fer's wedding?"


@pytest.mark.skipif(not available(), reason="the cross-encoder is not installed")
def test_the_cross_encoder_hears_an_alias_as_the_contact() -> None:
    events, projection = _one_fact("Fernanda is getting married at a hacienda in Tlaquepaque on 5 December.", 0.45)
    relevance = Relevance(ENGLISH.relevance, shared_cross_encoder())
    named = relevance.choose("when is Fer's wedding?", events, projection, people=PEOPLE)
    assert named.chosen == ("f1",), named.left_out
    unnamed = relevance.choose("when is Fer's wedding?", events, projection)
    assert unnamed.chosen == () and "f1" in unnamed.left_out


def _one_fact(text: str, score: float) -> tuple[list[RecalledEvent], Projection]:
    """One fact the asker may know, recalled at ``score``."""
    fact = Fact(id="f1", text=text, event_id="e1", category="daily_life", level=3, state="owner-set")
    return [RecalledEvent("e1", score, (Recalled(fact, score),))], Projection(
        (FactDecision(fact, score, True, (), used=True),)
    )
