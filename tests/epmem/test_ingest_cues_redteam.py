"""The red team's exports (tests/fixtures/redteam, copied from shared/redteam/exports) and the
cue variants they stand for, through the real export reader and the real rules extractor.

Each finding was a fact told to someone the owner had asked to keep out: a cue missed (a
zero-width character, a Cyrillic letter, a 🤫, "would rather people didn't know"), a statement
dropped because it started with a cue, a cover tied to the wrong truth or closed to everyone,
or a rewrite that changed the owner's words.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from epmem.embedding.minilm import default_embedder
from epmem.ingest import read_export
from epmem.ingest.annotate import CategoryClassifier
from epmem.ingest.extract import Draft
from epmem.ingest.extract_rules import RulesExtractor
from epmem.policy.model import Policy, load_policy
from epmem.textnorm import clean, normalise, third_person
from bot.config import EXAMPLE_POLICY
from testkit.sessions import session

REPO = Path(__file__).resolve().parents[2]
REDTEAM = REPO / "tests" / "fixtures" / "redteam"


@pytest.fixture(scope="module")
def policy() -> Policy:
    return load_policy(EXAMPLE_POLICY)


@pytest.fixture(scope="module")
def extractor(policy: Policy) -> RulesExtractor:
    return RulesExtractor(policy, CategoryClassifier(policy, default_embedder()))


def truths(drafts: list[Draft]) -> list[Draft]:
    return [d for d in drafts if d.version == "truth"]


# --------------------------------------------------------------------------- the normaliser


@pytest.mark.parametrize(
    ("raw", "read"),
    [
        ("Don\u200bt tell anyone", "Dont tell anyone"),  # zero-width space
        ("Do\u00adn't tell any\u2060one", "Don't tell anyone"),  # soft hyphen, word joiner
        ("\ufeffKeep it qu\u200ciet", "Keep it quiet"),  # BOM, zero-width non-joiner
        ("D\u043en't tell \u0430nyone", "Don't tell anyone"),  # Cyrillic o and a in Latin words
        ("Don't tell T\u03bfm.", "Don't tell Tom."),  # Greek omicron
        ("\uff24\uff4f\uff4e't tell", "Don't tell"),  # full-width letters (NFKC)
        (
            "\u041c\u043e\u0441\u043a\u0432\u0430 is lovely",
            "\u041c\u043e\u0441\u043a\u0432\u0430 is lovely",
        ),  # a Russian word stays
        ("Zagreb \U0001f92b", "Zagreb \U0001f92b"),  # a secrecy emoji is kept: it is a cue
    ],
)
def test_normalise_reads_what_a_person_reads(raw: str, read: str) -> None:
    assert normalise(raw) == read


def test_clean_keeps_look_alikes_out_of_nothing_but_invisible_characters() -> None:
    assert clean("Don\u200bt") == "Dont" and clean("\ufb01ne") == "fine"


# --------------------------------------------------------------------------- cue variants

SECRET = "secret"
#: (what the owner wrote, what it must do to the statement's fact, the words the fact keeps)
CUES = [
    ("I'd rather people didn't know, but I'm running the Berlin marathon in September.", SECRET, "Berlin marathon"),
    (
        "Sam would rather people didn't know, but I'm running the Berlin marathon in September.",
        SECRET,
        "Berlin marathon",
    ),
    ("I'd rather nobody knew, but I'm running the Berlin marathon in September.", SECRET, "Berlin marathon"),
    ("I'd prefer if people didn't find out: I'm running the Berlin marathon in September.", SECRET, "Berlin marathon"),
    ("Alex and I are moving to Toronto next summer, but I don't want people to know yet.", SECRET, "Toronto"),
    ("Alex and I are moving to Toronto next summer but I don't want anyone finding out", SECRET, "Toronto"),
    ("We're moving to Toronto next summer. I don't want it getting out yet.", SECRET, "Toronto"),
    ("Don't say a word to anyone: I'm entering the climbing championship in Paris.", SECRET, "Paris"),
    ("Please don't mention it to anyone, I'm entering the climbing championship in Munich.", SECRET, "Munich"),
    ("Please don't tell anyone I'm entering the climbing championship in Perth.", SECRET, "Perth"),
    ("Don't tell anyone but I'm entering the climbing championship in Tampere", SECRET, "Tampere"),
    ("keep this between us im entering the climbing championship in Dublin", SECRET, "Dublin"),
    ("This stays between you and me — I'm entering the climbing championship in Quito.", SECRET, "Quito"),
    ("I'm entering the climbing championship in Ghent (secret!)", SECRET, "Ghent"),
    ("I'm entering the climbing championship in Zagreb \U0001f92b", SECRET, "Zagreb"),
    ("\U0001f910 I'm entering the climbing championship in Oslo", SECRET, "Oslo"),
    ("I'm entering the climbing championship in Graz \U0001f64a", SECRET, "Graz"),
    ("Shh, I'm entering the climbing championship in Bern.", SECRET, "Bern"),
    ("Don\u200bt tell anyone, I'm entering the climbing championship in Porto.", SECRET, "Porto"),
    ("D\u043en't tell \u0430nyone: I'm entering the climbing championship in Lyon.", SECRET, "Lyon"),
    ("Don't let anyone know, I'm entering the climbing championship in Riga.", SECRET, "Riga"),
    ("I'm entering the climbing championship in Split, it's not common knowledge.", SECRET, "Split"),
    ("Not a word to Tom, but I'm organising a surprise birthday party for him.", "tom+secret", "surprise birthday"),
    ("I'm entering the climbing championship in Madrid. Not a word to Tom.", "tom+secret", "Madrid"),
    ("I'm entering the climbing championship in Seville — don’t tell Tom!", "tom", "Seville"),
    ("I'm entering the climbing championship in Lisbon. Don't tell T\u03bfm.", "tom", "Lisbon"),
    ("Don't tell Tom I'm entering the climbing championship in Nice.", "tom", "Nice"),
    ("Don't let Tom know, I'm entering the climbing championship in Bari.", "tom", "Bari"),
    ("Tom doesn't know I'm entering the climbing championship in Ulm.", "tom", "Ulm"),
    ("I'm entering the climbing championship in Pisa, keep Tom out of it.", "tom", "Pisa"),
    ("I entered the climbing championship in Bonn without Tom knowing.", "tom", "Bonn"),
]


@pytest.mark.parametrize(("text", "effect", "keeps"), CUES, ids=[c[0][:40] for c in CUES])
def test_cue_variants(extractor: RulesExtractor, text: str, effect: str, keeps: str) -> None:
    drafts = extractor.drafts(session([("owner", text), ("noor", "Wow, good luck!")], participants=["owner", "noor"]))
    [fact] = truths(drafts)  # the statement is kept, whatever the cue it starts or ends with
    assert keeps in fact.text
    assert not re.search(r"\b(?:know|tell|word|secret|rather|mention)\b", fact.text, re.IGNORECASE), fact.text
    if "secret" in effect:
        assert fact.level == 0 and set(fact.whitelist) <= {"noor"}, fact
    if "tom" in effect:
        assert "tom" in fact.blacklist and "tom" not in fact.whitelist, fact


def test_a_comment_on_a_narrowing_cue_is_no_fact(extractor: RulesExtractor) -> None:
    drafts = extractor.drafts(
        session(
            [("owner", "I paid off the loan. Don't tell Tom, he would be furious about it.")],
            participants=["owner", "noor"],
        )
    )
    assert [d.text for d in drafts] == ["Sam paid off the loan."] and drafts[0].blacklist == ["tom"]


def test_a_cue_that_opens_a_statement_never_lands_on_the_message_before(extractor: RulesExtractor) -> None:
    """The statement was dropped, so its cue stood alone and was read as being about the
    message before; kept, the cue is about its own statement. (A cue still reaches the same
    person's messages just before it, nobody speaking in between: one thought typed as several
    messages, secrecy-cue and narrowing-cue.)"""
    s = session(
        [
            ("owner", "The climbing gym reopens on Monday with a new bouldering wall."),
            ("noor", "Nice, see you there."),
            ("owner", "Not a word to Tom, but I'm organising a surprise birthday party for him."),
        ],
        participants=["owner", "noor"],
    )
    gym, party = truths(extractor.drafts(s))
    assert "surprise birthday party" in party.text and "tom" in party.blacklist and party.level == 0
    assert "gym" in gym.text and gym.blacklist == [] and gym.level == 4


def test_a_cue_after_the_statement_stays_in_its_message(extractor: RulesExtractor) -> None:
    """A cue in the sentence of its statement is about that statement. (A sentence that is only
    a cue still reaches up to three messages back: "We keep quiet until we raise." is about the
    talk so far, and a narrowing or closing too many fails closed.)"""
    s = session(
        [
            ("owner", "The climbing gym reopens on Monday with a new bouldering wall."),
            ("noor", "Nice, see you there."),
            ("owner", "I'm entering the climbing championship in Madrid, but not a word to Tom."),
        ],
        participants=["owner", "noor"],
    )
    gym, madrid = truths(extractor.drafts(s))
    assert "tom" in madrid.blacklist and gym.blacklist == [] and gym.level == 4


@pytest.mark.parametrize("export", ["cues.jsonl", "cues2.jsonl", "cues3.jsonl"])
def test_redteam_cue_exports(policy: Policy, extractor: RulesExtractor, export: str) -> None:
    """Every chat of the red team's cue exports: the owner's one statement becomes exactly one
    fact, closed (level 0, only the friend who heard it) or with Tom shut out, in clean words."""
    lines = [json.loads(line) for line in (REDTEAM / export).read_text().splitlines() if line.strip()]
    said = {x["chat"]: x["text"] for x in lines if x["sender"] == "owner"}
    sessions = read_export(REDTEAM / export, policy)
    assert len(sessions) == len(said)
    for s in sessions:
        [fact] = truths(extractor.drafts(s))
        place = re.search(r"(?:championship in|moving to|running the|planning his) (\w+)", said[s.chat_id])
        assert place is not None and place.group(1) in fact.text, (said[s.chat_id], fact.text)
        assert fact.level == 0 or "tom" in fact.blacklist, (said[s.chat_id], fact)
        assert set(fact.whitelist) <= set(s.participants) - {"owner"}
        assert fact.text == normalise(fact.text) and "\U0001f92b" not in fact.text
        assert not re.search(r"\b(?:tell|word|secret|rather|dons)\b", fact.text, re.IGNORECASE), fact.text
        if re.search(r"\bTom\b|T\u03bfm", said[s.chat_id]):
            assert "tom" in fact.blacklist, (said[s.chat_id], fact)


# --------------------------------------------------------------------------- covers


def test_a_cover_belongs_to_the_truth_that_follows_it_in_its_message(extractor: RulesExtractor) -> None:
    s = session(
        [
            ("owner", "My mum was diagnosed with diabetes last week."),
            (
                "owner",
                "If anyone asks, say I'm at a conference in Berlin next week. "
                "Really I'm going to the fertility clinic.",
            ),
        ],
        participants=["owner", "jamie"],
    )
    drafts = extractor.drafts(s)
    [cover] = [d for d in drafts if d.version == "cover"]
    truth = drafts[cover.covers] if cover.covers is not None else None
    assert truth is not None and truth.text == "Sam is going to the fertility clinic.", [d.text for d in drafts]
    assert cover.text == "Sam is at a conference in Berlin next week."
    diabetes = next(d for d in drafts if "diabetes" in d.text)
    assert diabetes.blacklist == [] and cover.state != "pending" or "cover:no-truth" not in cover.evidence


@pytest.mark.parametrize("marker", ["Actually", "The truth is", "In fact,", "But really"])
def test_truth_markers(extractor: RulesExtractor, marker: str) -> None:
    s = session(
        [
            ("owner", "My mum was diagnosed with diabetes last week."),
            ("owner", f"If anyone asks, say I'm at a conference in Berlin. {marker} I'm going to the clinic."),
        ],
        participants=["owner", "jamie"],
    )
    drafts = extractor.drafts(s)
    [cover] = [d for d in drafts if d.version == "cover"]
    assert cover.covers is not None and drafts[cover.covers].text == "Sam is going to the clinic."


def test_between_us_then_a_cover_opens_the_cover_to_everyone_outside_the_secret(
    policy: Policy, extractor: RulesExtractor
) -> None:
    """cover.jsonl: "Between us, I'm having a biopsy on Friday. If anyone asks, say I'm on a
    training course." The secrecy cue closes the truth (level 0, Jamie who heard it let in);
    the cover is what everyone else is to be told, so the cue does not close it: it keeps its
    category's audience (pending for the owner when the category is unclear, as any fact), and
    Jamie, who only heard the owner describe it, is not let in on it."""
    [s, _] = read_export(REDTEAM / "cover.jsonl", policy)
    drafts = extractor.drafts(s)
    [cover] = [d for d in drafts if d.version == "cover"]
    truth = drafts[cover.covers] if cover.covers is not None else None
    assert truth is not None and "biopsy" in truth.text
    assert truth.level == 0 and truth.whitelist == ["jamie"]
    assert cover.text == "Sam is on a training course."
    assert not any(e.startswith("cue:") for e in cover.evidence) and cover.whitelist == []
    assert cover.category is not None
    assert cover.level == policy.categories[cover.category].level  # the category's audience, not closed by the cue
    assert "jamie" not in cover.proposed_whitelist


def test_a_cover_named_for_someone_is_open_to_them(extractor: RulesExtractor) -> None:
    s = session(
        [("owner", "Between us, I'm having a biopsy on Friday. If Tom asks, tell Tom I'm on a training course.")],
        participants=["owner", "jamie"],
    )
    drafts = extractor.drafts(s)
    [cover] = [d for d in drafts if d.version == "cover"]
    truth = drafts[cover.covers]  # type: ignore[index]
    assert "tom" in truth.blacklist and "tom" in [*cover.whitelist, *cover.proposed_whitelist]


def test_a_negated_telling_is_a_cue_not_a_cover(extractor: RulesExtractor) -> None:
    drafts = extractor.drafts(
        session([("owner", "Don't tell Tom I'm applying for the Oslo job.")], participants=["owner", "jamie"])
    )
    assert [d.version for d in drafts] == ["truth"] and drafts[0].blacklist == ["tom"]


# --------------------------------------------------------------------------- faithful words


@pytest.mark.parametrize(
    ("said", "you", "written"),
    [
        (
            "Alex and I are moving, but I don't want people to know yet.",
            None,
            "Alex and Sam are moving, but Sam doesn't want people to know yet.",
        ),
        ("I don't eat meat.", None, "Sam doesn't eat meat."),
        ("I haven't decided yet.", None, "Sam hasn't decided yet."),
        ("I can't make it on Friday.", None, "Sam can't make it on Friday."),
        ("im entering the race", None, "Sam is entering the race"),
        ("I'll bring what you need.", "Priya", "Sam will bring what Priya needs."),
        ("I told you yesterday.", "Priya", "Sam told Priya yesterday."),
    ],
)
def test_third_person_keeps_the_words(said: str, you: str | None, written: str) -> None:
    assert third_person(said, "Sam", you) == written


def test_an_offer_to_the_listener_is_no_fact(extractor: RulesExtractor) -> None:
    """result.json's "Of course, take what you need." became "Priya take what Sam need."."""
    drafts = extractor.drafts(
        session(
            [("priya", "Can I borrow the projector?"), ("owner", "Of course, take what you need.")],
            participants=["owner", "priya"],
        )
    )
    assert drafts == []


@pytest.mark.parametrize(
    "said", ["Oh no, sorry to hear that Sam!", "Of course. Fingers crossed for you.", "No problem, enjoy."]
)
def test_a_reaction_is_no_fact_even_with_its_lead_cut(extractor: RulesExtractor, said: str) -> None:
    """impostor.json's "Oh no, sorry to hear that Sam!" was stored as "Noor to hear that Sam!"."""
    drafts = extractor.drafts(
        session(
            [("owner", "I'm having a second knee operation in March."), ("noor", said)], participants=["owner", "noor"]
        )
    )
    assert [d.text for d in drafts] == ["Sam is having a second knee operation in March."]


def test_a_narrowing_after_a_cover_is_about_the_cover(extractor: RulesExtractor) -> None:
    s = session(
        [
            ("owner", "We're three months from running out of money."),
            (
                "owner",
                "If anyone on the team asks, we're keeping spending tight this quarter. "
                "Not that line to Tom either, he'd read into it.",
            ),
        ],
        participants=["owner", "jamie"],
    )
    [cover] = [d for d in extractor.drafts(s) if d.version == "cover"]
    assert "tom" in cover.blacklist


def test_a_cue_clause_then_a_remark_still_reaches_the_news_before(extractor: RulesExtractor) -> None:
    """ "Haven't told Tom yet, want the contract signed first": the cue is about the offer two
    messages back as much as about the remark it is typed with (fail closed)."""
    s = session(
        [
            ("owner", "Equinor offered me the lead subsea role in Bergen."),
            ("jamie", "Amazing! Taking it?"),
            ("owner", "Probably. Haven't told Tom yet, want the contract signed first."),
        ],
        participants=["owner", "jamie"],
    )
    offer = next(d for d in extractor.drafts(s) if "Bergen" in d.text)
    assert "tom" in offer.blacklist
