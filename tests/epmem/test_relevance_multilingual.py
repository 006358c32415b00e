"""A question in another language than English is read by the multilingual model, on the
cross-encoder's scale: the English cross-encoder rates every fact unrelated to it. Real models."""

from __future__ import annotations

import pytest

from epmem.embedding.cross_encoder import shared_cross_encoder
from epmem.embedding.late_interaction import shared_late_interaction
from epmem.language import ENGLISH
from epmem.reply.relevance import Relevance
from epmem.reply.relevance.multilingual import (
    ANSWERS_LOGIT,
    ANSWERS_SIMILARITY,
    UNRELATED_LOGIT,
    UNRELATED_SIMILARITY,
    MultilingualReader,
    multilingual_reader,
    reads_other_language,
)

from tests.epmem.test_relevance_veto import storyline


@pytest.fixture(scope="module")
def relevance() -> Relevance:
    return Relevance(ENGLISH.relevance, shared_cross_encoder(), shared_late_interaction())


ROSA = (
    ("f1", "e1", "Fernanda is getting married at a hacienda in Tlaquepaque on 5 December.", 0.52),
    ("f2", "e2", "The sale price of the building is 14.5 million pesos, 30% paid at signing.", 0.48),
    ("f3", "e3", "Rosa won second place in the neighbourhood pozole contest.", 0.45),
)


def test_which_questions_the_english_models_cannot_read() -> None:
    assert reads_other_language("¿cuándo es la boda de Fer?")
    assert reads_other_language("Como foi a cirurgia da sua mãe?")
    assert reads_other_language("할머니는 잘 지내세요?")  # hangul alone
    assert not reads_other_language(
        "지우 how's your halmeoni doing? you're still going down to Suwon every weekend right?"
    )
    assert not reads_other_language("when is Fer's wedding?")
    assert not reads_other_language("Has Harbour Coffee paid Liam yet?")


def test_a_spanish_question_is_answered_by_the_fact_it_asks_about(
    relevance: Relevance, monkeypatch: pytest.MonkeyPatch
) -> None:
    events, proj = storyline(*ROSA)
    choice = relevance.choose("¿cuándo es la boda de Fer?", events, proj, owner="Rosa Méndez")
    assert choice.chosen == ("f1",)
    assert choice.logits["f1"] > max(choice.logits["f2"], choice.logits["f3"])
    # read by the English cross-encoder, every fact is unrelated and the asker is deflected
    import epmem.reply.relevance as module

    monkeypatch.setattr(module, "reads_other_language", lambda question: False)
    assert relevance.choose("¿cuándo es la boda de Fer?", events, proj, owner="Rosa Méndez").chosen == ()


def test_a_polish_question_about_something_nobody_said_is_not_answered(relevance: Relevance) -> None:
    events, proj = storyline(*ROSA)
    assert relevance.choose("Czy złowiłeś coś na rybach w Kiekrzu?", events, proj, owner="Rosa Méndez").chosen == ()


def test_the_reader_puts_the_medians_where_the_cross_encoder_has_them() -> None:
    reader = multilingual_reader()
    assert isinstance(reader, MultilingualReader)
    slope = reader.slope
    assert UNRELATED_LOGIT + slope * (ANSWERS_SIMILARITY - UNRELATED_SIMILARITY) == pytest.approx(ANSWERS_LOGIT)
    scores = reader.score("¿cuándo es la boda de Fer?", [ROSA[0][2], ROSA[2][2]])
    assert scores[0] > scores[1]


def test_a_language_the_model_reads_less_closely_is_measured_against_its_own_unrelated_facts() -> None:
    reader = multilingual_reader()
    assert reader is not None
    facts = [
        "The union committee will hold a strike referendum on 15 June.",
        "Krzysiek caught a 9 kg carp at Lake Kiekrz.",
        "Krzysiek's daughter Zosia has her First Communion on 17 May at St Martin's.",
        "Oksana's work permit renewal has been stuck at the voivodeship office for four months.",
    ]
    question = "czego żądamy od kierownictwa i czy głosowanie w sprawie strajku jest nadal aktualne?"
    logits = reader.score(question, facts)
    # the answer scores only 0.25 in Polish; against the English median of unrelated facts (0.164) it
    # would read as barely related (below the veto), against this question's own (0.01) it answers
    assert logits[0] > 0 > max(logits[1:])
    assert reader.score(question, facts[:2])[0] < 0  # two facts say nothing of where unrelated lies
