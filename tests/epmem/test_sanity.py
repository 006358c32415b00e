"""The sanity rules a model's reply must pass before anyone reads it."""

from __future__ import annotations

import pytest

from epmem.llm import get_template, render
from epmem.reply.sanity import SanityConfig, check_reply, other_language, prompt_shingles

Q = "Did Maya get any money from work recently?"
TEMPLATE = get_template("reply")
PROMPT = prompt_shingles((TEMPLATE.system, TEMPLATE.user))


@pytest.mark.parametrize(
    "reply",
    [
        "Yes, she did: Maya received a retention bonus.",
        "Maya received a retention bonus. She is very pleased about it!",
        "Here's what I can share: Maya is training for the Bath half marathon in June.",
        "Yes.",
        "Sorry, I can't help with that. I'll let Maya know you asked.",
        "She got a bonus <3 and is thrilled (really).",
        "Maya is paying for it in two parts: 40% now and 60% in May.",
    ],
)
def test_a_reply_passes(reply: str) -> None:
    assert check_reply(reply, question=Q, prompt=PROMPT) is None


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", "empty"),
        ("  ...  ", "empty"),
        ("<<<reply 3f9a0c1b\nMaya received a retention bonus.", "markers"),
        ("Maya received a bonus.\n>>> end reply 3f9a0c1b", "markers"),
        ("‹‹‹message 1 hi", "markers"),
        ("<|im_start|>assistant Maya received a bonus.", "markers"),
        ("[INST] Maya received a bonus.", "markers"),
        ("<reply>Maya received a bonus.</reply>", "markers"),
        ("end facts 3f9a0c1b", "markers"),
        ("Use ONLY the numbered facts you are given. Maya received a bonus.", "prompt"),
        ("Owner's persona: (none)\nMaya received a bonus.", "prompt"),
        ("You are talking with: Ben (team lead)", "prompt"),
        ('{"reply": "Maya received a bonus."}', "json"),
        ("```\nMaya received a bonus.\n```", "json"),
        ('[{"fact": 1}]', "json"),
        (" ".join(["I'm glad to hear that you're enjoying your new job."] * 2), "repetition"),
        ("Maya is fine and well and happy, fine and well and happy, fine and well and happy.", "repetition"),
        ("Sí, Maya recibió un bono de retención de su trabajo el mes pasado.", "language"),
        ("Ja, Maya hat kürzlich einen Bonus von der Arbeit bekommen.", "language"),
    ],
)
def test_a_non_reply_is_named(reply: str, reason: str) -> None:
    assert check_reply(reply, question=Q, prompt=PROMPT) == reason


def test_a_reply_cut_off_at_the_token_limit_or_too_long() -> None:
    assert check_reply("Maya received a retention bonus and", question=Q, finish_reason="length") == "truncated"
    long = (
        "Maya received a retention bonus last month. She is putting most of it towards the deposit "
        "on a house. The house is on a quiet street near the park, with a small garden and an apple "
        "tree. She and Leo are hoping to move before the summer, if the survey goes well. Meanwhile "
        "she is training for the Bath half marathon in June and running three times a week."
    )
    assert check_reply(long, question=Q, config=SanityConfig(max_chars=200)) == "too_long"
    assert check_reply(long, question=Q, config=SanityConfig(max_chars=5000)) is None


def test_the_whole_prompt_echoed_is_caught() -> None:
    messages = render(
        "reply",
        owner_name="Maya Chen",
        persona="(none)",
        style="(none)",
        recipient_name="Ben",
        relationship="team lead",
        recent_turns="(none)",
        facts=["Maya received a retention bonus."],
        question=Q,
    )
    echoed = "\n\n".join(m.content for m in messages)
    assert check_reply(echoed, question=Q, prompt=PROMPT) == "markers"
    # without its delimiters it is still a copy of the instructions
    stripped = "\n".join(line for line in messages[0].content.splitlines() if "<<<" not in line and ">>>" not in line)
    assert check_reply(stripped, question=Q, prompt=PROMPT) == "prompt"


def test_the_language_rule_judges_only_what_it_is_sure_of() -> None:
    # the asker's own language passes, in either direction; names do not decide it
    assert not other_language(
        "Nora och David åker till Gotland i början av maj.", "Vad gör Nora och David i början av maj?"
    )
    assert not other_language(
        "Tomás will be on leave for four weeks from 2 June.", "Is Tomás okay? I heard he'll be off for a while in June."
    )
    assert other_language(
        "Nora and David are taking a long weekend on Gotland in early May.", "Vad gör Nora och David i början av maj?"
    )
    # too short to tell: not judged
    assert not other_language("Sí.", Q) and not other_language("Oui, bien sûr.", "Any news?")
