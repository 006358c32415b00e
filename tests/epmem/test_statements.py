"""Chat-style messages become whole statements (epmem/ingest/statements.py), read through the
offline extractor: each fact carries what its message says, and nothing gets looser for it."""

from __future__ import annotations

import pytest

from epmem.embedding.minilm import default_embedder
from epmem.ingest.annotate import CategoryClassifier
from epmem.ingest.extract_rules import RulesExtractor
from epmem.ingest.statements import chat_sentences
from epmem.textnorm import third_person
from testkit.sessions import session
from tests.epmem.test_extract_rules import POLICY, by_text


@pytest.fixture(scope="module")
def extractor() -> RulesExtractor:
    return RulesExtractor(POLICY, CategoryClassifier(POLICY, default_embedder()))


def _never_a_cue(text: str) -> bool:
    return False


@pytest.mark.parametrize(
    "message,sentences",
    [
        # a fragment that says nothing whole on its own joins the statement before it
        ("I'm pregnant!!! 11 weeks 🥹", ["I'm pregnant!!! 11 weeks 🥹"]),
        ("His car is in the garage. Gearbox problem.", ["His car is in the garage. Gearbox problem."]),
        ("Max and I broke up. for real this time", ["Max and I broke up. for real this time"]),
        # a question tacked onto a statement is cut off; the statement stays
        (
            "forecast API v2 goes live on 15 May, can you write the release notes?",
            ["forecast API v2 goes live on 15 May", "can you write the release notes?"],
        ),
        # a reminder's lead is not part of what it says
        ("also dont forget Mama's name day is Sunday", ["Mama's name day is Sunday"]),
        # an emoji between two clauses ends a thought only where it sets a cue apart (below)
        ("cost me 3.2k 😬 and the ring is vintage", ["cost me 3.2k 😬 and the ring is vintage"]),
        # whole sentences, questions and instructions are left as they are
        ("Thanks love. Just keep me posted.", ["Thanks love.", "Just keep me posted."]),
        ("Are you coming to Busan, or not?", ["Are you coming to Busan, or not?"]),
        ("don't forget to buy milk", ["don't forget to buy milk"]),
    ],
)
def test_chat_messages_are_cut_into_whole_statements(message: str, sentences: list[str]) -> None:
    assert chat_sentences(message, _never_a_cue) == sentences


def test_an_emoji_sets_a_cue_apart_from_its_statement() -> None:
    assert chat_sentences("cost me 3.2k 😬 don't tell my mum the price", lambda x: "don't tell" in x) == [
        "cost me 3.2k 😬",
        "don't tell my mum the price",
    ]


def test_a_cue_is_never_joined_to_a_statement(extractor: RulesExtractor) -> None:
    s = session(
        [("kira", "I've been put on a PIP. performance improvement plan, 6 weeks. only you and Owen know")],
        participants=["owner", "kira"],
    )
    (fact,) = extractor.drafts(s)
    assert "6 weeks" in fact.text and fact.text.startswith("Kira has been put on a PIP")
    # someone else's news, with a secrecy cue: pending at level 0, opens nobody
    assert (fact.state, fact.level, fact.whitelist) == ("pending", 0, [])


def test_a_fragment_is_carried_with_its_statement_and_as_strict(extractor: RulesExtractor) -> None:
    s = session([("owner", "I have knee surgery on Friday. 3 weeks off work")], participants=["owner", "kira"])
    (fact,) = extractor.drafts(s)
    assert fact.text == "Sam has knee surgery on Friday. 3 weeks off work."
    assert (fact.category, fact.level, fact.domain) == ("health", 1, "life")


def test_the_statement_before_a_question_is_kept(extractor: RulesExtractor) -> None:
    s = session(
        [("tom", "the project deadline moved to 15 May, can you update the plan?")], participants=["owner", "tom"]
    )
    (fact,) = extractor.drafts(s)
    assert "15 May" in fact.text and "update the plan" not in fact.text and fact.category == "work"


def test_a_question_that_ends_in_an_emoji_is_no_fact(extractor: RulesExtractor) -> None:
    # a question carries no news to tell back, whatever follows its question mark
    s = session(
        [("tom", "why didn't you come to the market on Saturday? 🥺"), ("owner", "the van broke down 😩")],
        participants=["owner", "tom"],
    )
    (fact,) = extractor.drafts(s)
    assert "van broke down" in fact.text


def test_a_narrowing_cue_after_an_emoji_reaches_its_statement(extractor: RulesExtractor) -> None:
    s = session(
        [("owner", "the new sofa cost me 3.2k of savings 😬 don't tell Mum the price")], participants=["owner", "kira"]
    )
    fact = by_text(extractor.drafts(s), "3.2k")
    assert fact.blacklist == ["joan"]


def test_a_subordinate_clause_is_not_an_instruction(extractor: RulesExtractor) -> None:
    s = session(
        [("owner", "Once it closes I want to hire two senior backend engineers for the project.")],
        participants=["owner", "tom"],
    )
    (fact,) = extractor.drafts(s)
    assert "senior backend" in fact.text


@pytest.mark.parametrize(
    "said,meant",
    [
        ("Max and I broke up", "Max and Sam broke up"),
        ("she and I are fine", "she and Sam are fine"),
        ("I broke my arm and I want cake", "Sam broke Sam's arm and Sam wants cake"),
    ],
)
def test_a_plural_subject_keeps_its_verb(said: str, meant: str) -> None:
    assert third_person(said, "Sam") == meant


def test_a_leading_no_that_belongs_to_the_statement_is_kept(extractor: RulesExtractor) -> None:
    s = session(
        [("owner", "Ha, no plans to sell the flat this year."), ("owner", "No, the flat is rented out to students.")],
        participants=["owner", "kira"],
    )
    assert [d.text for d in extractor.drafts(s)] == [
        "No plans to sell the flat this year.",
        "The flat is rented out to students.",
    ]


def test_a_transcript_label_is_not_part_of_the_statement(extractor: RulesExtractor) -> None:
    s = session(
        [("owner", "[voice message] the garden fence project is finally done, 40 metres")],
        participants=["owner", "tom"],
    )
    (fact,) = extractor.drafts(s)
    assert fact.text == "The garden fence project is finally done, 40 metres."


def test_a_chat_question_without_its_question_mark_still_asks(extractor: RulesExtractor) -> None:
    # "wait does your mum even know lol" asks, "?" or not: the "nope" and the cue answering it
    # reach what it was about (a new, whole statement must not be looser than its fragments were)
    s = session(
        [
            ("owner", "Kira and I broke up. for real this time"),
            ("owen", "WHAT. ok calling you in 5", 0),
            ("owen", "wait does your mum even know she existed lol"),
            ("owner", "nope. my mum doesn't even know Kira exists and it stays that way", 2),
        ],
        participants=["owner", "owen"],
    )
    fact = by_text(extractor.drafts(s), "broke up")
    assert fact.text == "Kira and Sam broke up. for real this time." and "joan" in fact.blacklist


def test_a_cover_stands_in_for_news_not_for_a_passing_remark(extractor: RulesExtractor) -> None:
    s = session(
        [
            ("owner", "Tom, can I tell you something in confidence? I need knee surgery in April."),
            ("tom", "Thank you for telling me. Take all the time you need. What should I tell the team?"),
            ("owner", "Please just say I'm on leave for four weeks in April.", 1),
        ],
        participants=["owner", "tom"],
    )
    drafts = extractor.drafts(s)
    cover = next(d for d in drafts if d.version == "cover")
    assert cover.covers is not None and "surgery" in drafts[cover.covers].text


@pytest.mark.parametrize(
    "speaker,said,fact",
    [
        (
            "tom",
            "Sam, I'd like to offer you the project lead role in September.",
            "Tom would like to offer Sam the project lead role in September.",
        ),
        (
            "tom",
            "And after the reorg you'll lead the new platform project.",
            "After the reorg Sam will lead the new platform project.",
        ),
        (
            "owner",
            "Tom, we'd rather keep the project deadline in May.",
            "Sam and others would rather keep the project deadline in May.",
        ),
    ],
)
def test_the_listener_named_and_a_leading_phrase_are_not_the_subject(
    extractor: RulesExtractor, speaker: str, said: str, fact: str
) -> None:
    s = session([(speaker, said)], participants=["owner", "tom"])
    assert [d.text for d in extractor.drafts(s)] == [fact]


def test_a_statement_is_only_as_settled_as_the_fragment_joined_to_it(extractor: RulesExtractor) -> None:
    # "moving to Lisboa" on its own is no clear reading: joined to a work statement, it must not
    # ride on the work category's audience (it was dropped before; now it is carried, pending)
    s = session(
        [("owner", "I start the new project lead role in May. moving to Lisboa")], participants=["owner", "tom"]
    )
    (fact,) = extractor.drafts(s)
    assert "Lisboa" in fact.text and fact.state == "pending" and fact.whitelist == []
    assert "fragment:unclear" in fact.evidence
    # a fragment that says nothing of its own changes nothing
    plain = session(
        [("owner", "I start the new project lead role in May. for real this time")], participants=["owner", "tom"]
    )
    (fact,) = extractor.drafts(plain)
    assert (fact.state, fact.category, fact.level) == ("annotated", "work", 3)


def test_an_emoji_only_sets_a_cue_apart(extractor: RulesExtractor) -> None:
    # the words around an emoji stay one statement, so the statement keeps its context: the
    # pregnancy makes the leave someone else's private matter (pending), not a work-rota fact
    s = session(
        [("tom", "I'm pregnant 🙈 due end of September so I'll need leave for the project")],
        participants=["owner", "tom"],
    )
    (fact,) = extractor.drafts(s)
    assert "pregnant" in fact.text and "leave" in fact.text
    assert (fact.state, fact.level, fact.whitelist) == ("pending", 0, [])


def test_a_fragment_joins_only_a_statement(extractor: RulesExtractor) -> None:
    # two pieces that say nothing whole do not make a statement together ("lol classic. ok now mine")
    assert chat_sentences("lol classic. ok now mine. keep this to yourself", _never_a_cue) == [
        "lol classic.",
        "ok now mine.",
        "keep this to yourself",
    ]
    # a fragment with nothing of its own leaves its statement settled
    s = session(
        [("tom", "Good afternoon Sam, the project passed the audit with distinction! Well done to you both.")],
        participants=["owner", "tom"],
    )
    (fact,) = extractor.drafts(s)
    assert (fact.state, fact.category) == ("annotated", "work") and "fragment:unclear" not in fact.evidence
    assert fact.text.startswith("The project passed the audit")
