"""A message that asks several things is answered as several questions: each is recalled alone,
read with its own kind and cut, and the reply tells the best answer of each
(epmem/language/english.py ``questions``, ``Relevance.choose(asked=...)``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.runtime import Runtime
from epmem.language import ENGLISH, of
from epmem.language.english import opens_a_matter, questions
from epmem.memory.recall import together
from epmem.reply.relevance import Relevance
from testkit.runtime import ask, scenario_runtime

from tests.epmem.test_relevance_parts import PerPart
from tests.epmem.test_relevance_veto import storyline

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "scenarios"


def test_two_matters_in_one_message_are_two_questions() -> None:
    assert questions("how did your dad's operation go? and are you still doing that course on saturdays?") == [
        "how did your dad's operation go?",
        "and are you still doing that course on saturdays?",
    ]
    # a clause joined by "and" that asks again is a question of its own
    assert questions("When is Lena's wedding, and did you sell the car?") == [
        "When is Lena's wedding",
        "did you sell the car?",
    ]
    # one question, or none, is the message itself
    assert questions("Is Sam looking for a new job?") == ["Is Sam looking for a new job?"]
    assert questions("Thanks for the flowers!") == ["Thanks for the flowers!"]
    # a decimal point ends no sentence; repeated marks end one
    assert questions("Will the 3.2 release go out on time?") == ["Will the 3.2 release go out on time?"]
    assert questions("how was your race?? and when does Tom start?") == [
        "how was your race??",
        "and when does Tom start?",
    ]


def test_what_is_said_before_a_question_is_read_with_it() -> None:
    # "it" is the paper: the sentence before the question goes with it
    assert questions("congrats on the paper!! which journal took it? and is Kim still at the lab?") == [
        "congrats on the paper!! which journal took it?",
        "and is Kim still at the lab?",
    ]


def test_a_question_that_names_nobody_of_its_own_goes_on_with_the_one_before() -> None:
    for message in (
        "How is Chidi doing these days? Any news?",  # names nothing
        "Is Oskar fit to drive? Any health problems?",  # names no one: Oskar's problems
        "Why is Rita out from June? And who's looking after her team?",  # "her": Rita
        "Will you be at church on Sunday? What are you doing after?",  # asks for news only
        "How's Rita? I saw her at the shop. Is she ok?",  # "she", though something was said between
        "Is Tom working on Fridays, and what is he preparing for September?",  # a month is no one
        "How is Kwabena? Has he finished at KNUST?",  # "he" is Kwabena, though KNUST is named
    ):
        assert questions(message) == [message], message
    assert not opens_a_matter("Any health problems?")
    assert opens_a_matter("and are you still doing that course?")  # speaks to the owner
    assert opens_a_matter("and when does Ji-hoon go into the army?")  # names someone
    # in another language the pronouns and the "you" are not read: each question is its own
    assert questions("como foi a cirurgia da sua mãe? e você ainda faz aquele curso aos sábados?") == [
        "como foi a cirurgia da sua mãe?",
        "e você ainda faz aquele curso aos sábados?",
    ]


def test_a_question_whose_subject_is_a_thing_of_its_own_is_its_own() -> None:
    # "there" or "the" right after its verb: the question says what it is about, as a name does
    assert questions("How is Rita doing? and is there water this Saturday?") == [
        "How is Rita doing?",
        "and is there water this Saturday?",
    ]
    assert questions("How's Rita? When's the party?") == ["How's Rita?", "When's the party?"]
    assert opens_a_matter("did the landlord call back?")
    # a pronoun, or nothing named, still goes on with the question before it
    assert not opens_a_matter("is she there this Saturday?")
    assert not opens_a_matter("is there any news?")


def test_only_languages_that_split_questions_split_them() -> None:
    assert of("周末有什么安排？你爸爸的手术怎么样？").questions("周末有什么安排？你爸爸的手术怎么样？") == [
        "周末有什么安排？你爸爸的手术怎么样？"
    ]


def test_each_question_is_answered_with_its_own_cut() -> None:
    message = "how did your dad's operation go? and are you still doing that course on saturdays?"
    first, second = questions(message)
    rows = (
        ("f1", "e1", "Ana's father is having a hip replacement on 9 May.", 0.37),
        ("f2", "e2", "Ana is doing a weekend pottery course.", 0.75),
        ("f3", "e3", "Ana is moving to the night shift in June.", 0.45),
    )
    events, proj = storyline(*rows)
    # what recall finds for each question alone: the operation is near the first, the course the second
    alone_first, _ = storyline(("f1", "e1", rows[0][2], 0.66), ("f3", "e3", rows[2][2], 0.30))
    alone_second, _ = storyline(("f2", "e2", rows[1][2], 0.78), ("f3", "e3", rows[2][2], 0.35))
    model = PerPart({("operation", "hip"): 1.5, ("course", "pottery"): 5.0, ("operation", "pottery"): -9.0})
    relevance = Relevance(ENGLISH.relevance, model)
    # read as one question, the course sets the cut and the operation, weakly recalled, is below it
    assert "f1" not in relevance.choose(message, events, proj).chosen
    choice = relevance.choose(message, events, proj, asked={first: alone_first, second: alone_second})
    assert choice.chosen[:2] == ("f1", "f2")  # the best answer of each question, in the order asked
    assert "f3" not in choice.chosen and "f3" in choice.left_out
    assert choice.kind == "state"  # the message's kind, as the audit records it


def test_recalls_together_keep_each_fact_once_with_its_best_score() -> None:
    a, _ = storyline(("f1", "e1", "one", 0.3), ("f2", "e2", "two", 0.8))
    b, _ = storyline(("f1", "e1", "one", 0.6))
    merged = together(a, b)
    assert [ev.event_id for ev in merged] == ["e2", "e1"]
    assert {r.fact.id: r.score for ev in merged for r in ev.facts} == {"f1": 0.6, "f2": 0.8}


@pytest.fixture
async def ana(tmp_path: Path) -> AsyncIterator[Runtime]:
    runtime, _ = await scenario_runtime(tmp_path / "data", FIXTURES / "two_questions.yaml")
    try:
        yield runtime
    finally:
        await runtime.close()


async def test_a_friend_asking_two_things_gets_both_answers(ana: Runtime) -> None:
    """Real runtime (Edge, SQLite, MiniLM, the cross-encoder): read as one question, the message
    was answered about the operation alone."""
    out = await ana.agent.handle(
        ask("bea", "how did your dad's operation go? and are you still doing that course on saturdays?")
    )
    record = await ana.audit.get(out.audit_id or "")
    assert record is not None
    assert set(record.body["disclosed"]) == {"f1", "f2"}


async def test_more_questions_than_a_reply_tells_facts_are_read_as_one_message(ana: Runtime) -> None:
    """Each question costs a recall: a message of many is read as one, so no message costs more
    than ``max_facts`` recalls."""
    many = " ".join(f"Is Tom{i} coming on day {i}?" for i in range(ana.engine.relevance.config.max_facts + 1))
    assert len(questions(many)) == ana.engine.relevance.config.max_facts + 1
    events, asked = await ana.engine.recall(many)
    assert asked == {}
    _, two = await ana.engine.recall("how did your dad's operation go? and are you still doing that course?")
    assert len(two) == 2


def test_a_request_that_lists_things_asks_for_each_of_them() -> None:
    """A request is read thing by thing (``requested``): each thing it lists is one need, as a
    question is, and is recalled and answered on its own."""
    assert questions("Please send me the wifi password, the plumber's number and the date of the party.") == [
        "the wifi password",
        "the plumber's number",
        "the date of the party",
    ]
    # two requests joined by "and" ask for two things, whatever the second asks with
    assert questions("Send me the wifi password and tell me when the party is.") == [
        "the wifi password",
        "when the party is",
    ]
    # one thing asked for, or a request that lists nothing: the message is one question
    assert questions("Send me the photos from Saturday.") == ["Send me the photos from Saturday."]
    assert questions("Can you tell me when the party is?") == ["Can you tell me when the party is?"]


async def test_a_request_for_two_things_recalls_each_on_its_own(ana: Runtime) -> None:
    """Real runtime: recalled as one, the rota talk around the request drowned both things and
    Bea got the deflection; recalled thing by thing, the hospital date answers its own need."""
    message = "We are sorting out the rota for May at the depot. Give me the hospital date and the course details."
    out = await ana.agent.handle(ask("bea", message))
    record = await ana.audit.get(out.audit_id or "")
    assert record is not None
    assert len(record.body["relevance"]["answers"]) == 2
    assert "f1" in record.body["disclosed"], record.body["relevance"]
