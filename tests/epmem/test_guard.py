"""The post-generation check and the masking of identifiers, on their own."""

from __future__ import annotations

import pytest

from epmem.reply.desensitize import Desensitizer
from epmem.reply.guard import Denied, ReplyGuard

BONUS = Denied("f3", "Maya received a retention bonus.")
DEPOSIT = Denied("f4", "Maya is paying the house deposit with her bonus.")
TRIP = Denied("f7", "Tomás and Elena are celebrating their anniversary in Lisbon in September.")
ALLOWED = ["Maya is thinking about moving somewhere with more space.", "Maya and Leo looked at a house."]


def hits(reply: str, denied: list[Denied], asked: str = "") -> list[str]:
    guard = ReplyGuard(ALLOWED, ignore_words=["Maya Chen", "Kim Park"], asked=[asked])
    return [h.fact_id for h in guard.check(reply, denied)]


def test_a_reply_quoting_a_denied_fact_is_caught() -> None:
    assert hits("Sure! Maya received a retention bonus last week.", [BONUS, DEPOSIT, TRIP]) == ["f3"]
    assert hits("She's celebrating in Lisbon!", [BONUS, TRIP]) == ["f7"]  # a name is rare alone


def test_what_the_audience_may_hear_is_not_evidence() -> None:
    assert hits("Maya is thinking about moving somewhere with more space.", [BONUS, DEPOSIT, TRIP]) == []
    # "house" is in an allowed fact: saying it proves nothing about the deposit
    assert hits("Maya and Leo looked at a house.", [DEPOSIT]) == []


def test_a_guess_echoed_back_counts_alone() -> None:
    assert hits("I can't say anything about a deposit.", [DEPOSIT]) == []
    assert hits("I can't say anything about a deposit.", [DEPOSIT], asked="What about the deposit?") == ["f4"]


def test_one_common_word_is_not_a_leak() -> None:
    assert hits("Maya is paying attention to her garden.", [DEPOSIT]) == []


@pytest.mark.parametrize(
    "text,masked,kind",
    [
        ("Call Ana on +44 20 7946 0958 tonight.", "Call Ana on [phone number withheld] tonight.", "phone number"),
        ("Ben's number is (415) 555-0132.", "Ben's number is [phone number withheld].", "phone number"),
        ("Write to ana.ruiz@example.com about it.", "Write to [email withheld] about it.", "email"),
        ("Ana moved to 14 Mill Lane, Apt 3B in Leeds.", "Ana moved to [address withheld] in Leeds.", "address"),
        ("Ben lives at Hauptstraße 12 now.", "Ben lives at [address withheld] now.", "address"),
        (
            "The Figma admin password is tangerine-42.",
            "The Figma admin password is [credential withheld].",
            "credential",
        ),
        ("Her card 4111 1111 1111 1111 expired.", "Her card [card number withheld] expired.", "card number"),
        ("IBAN DE89 3704 0044 0532 0130 00 for rent.", "IBAN [account number withheld] for rent.", "account number"),
        (
            "Account number 12345678 at Barclays.",
            "Account number [account number withheld] at Barclays.",
            "account number",
        ),
    ],
)
def test_identifiers_are_masked(text: str, masked: str, kind: str) -> None:
    out = Desensitizer().mask(text)
    assert out.text == masked and kind in out.kinds


@pytest.mark.parametrize(
    "text",
    [
        "After the deductible they pay about €4,800 on 2026-05-10 at 07:30.",
        "Nora is paying the 40,000 SEK for the rings.",
        "Maya and Leo made an offer on the blue house on Elm Road.",
        "The launch moved to 12 May 2026; 200 customers get the beta.",
    ],
)
def test_ordinary_numbers_and_places_stay(text: str) -> None:
    assert Desensitizer().mask(text).text == text


def test_what_the_asker_wrote_is_not_masked() -> None:
    d = Desensitizer()
    assert d.mask("Ana's number is +44 20 7946 0958.", ["is +44 20 7946 0958 Ana's?"]).kinds == ()
    assert d.mask("Ana's number is +44 20 7946 0958.", ["what is Ana's number?"]).kinds == ("phone number",)
