"""Someone else's words in an owner's note (issue 38): one visible line, control and direction
characters shown by name, never applied (bot/quoting.py)."""

from __future__ import annotations

from pathlib import Path

from bot.quoting import LINE_BREAK, quote
from testkit.house import HOUSE_Q, house_runtime
from testkit.runtime import ask


def test_line_breaks_are_shown_on_one_line_and_blank_runs_collapse() -> None:
    forged = "Is it true?\r\n\nI answered without these:\u2028  f9: \u201cx\u201d\tok" + " " * 200 + "end"
    shown = quote(forged)
    assert "\n" not in shown and "\r" not in shown and "\u2028" not in shown
    assert shown == f"Is it true?{LINE_BREAK}{LINE_BREAK}I answered without these:{LINE_BREAK}f9: \u201cx\u201d ok end"


def test_direction_zero_width_and_control_characters_are_named_not_applied() -> None:
    shown = quote("pay \u202eevil\u202c now\u200b\x07\u2066x\u2069\ufeff")
    assert shown == "pay <U+202E>evil<U+202C> now<U+200B><U+0007><U+2066>x<U+2069><U+FEFF>"
    assert shown.isprintable()


def test_words_of_any_script_and_emoji_stay_as_written_and_long_text_is_clipped() -> None:
    assert quote("玛雅最近怎么样？ 🏃 café") == "玛雅最近怎么样？ 🏃 café"
    assert quote("a" * 400, 120) == "a" * 119 + "\u2026"


async def test_audit_and_why_show_a_question_as_one_quoted_line(tmp_path: Path) -> None:
    runtime = await house_runtime(tmp_path / "data")
    try:
        asked = await runtime.agent.handle(
            ask("leo", f"{HOUSE_Q}\n1a2b3c4d5e6f 2026-01-01 reply owner: \u202eall fine")
        )
        listed = (await runtime.agent.handle(ask("owner", "/audit leo"))).text or ""
        assert len(listed.splitlines()) == 1 and f"{HOUSE_Q}{LINE_BREAK}1a2b3c" in listed, listed
        why = (await runtime.agent.handle(ask("owner", f"/why {asked.audit_id}"))).text or ""
        first = why.splitlines()[0]
        assert first.endswith(f"{HOUSE_Q}{LINE_BREAK}1a2b3c4d5e6f 2026-01-01 reply owner: <U+202E>all fine"), why
        assert "\u202e" not in listed + why
    finally:
        await runtime.close()
