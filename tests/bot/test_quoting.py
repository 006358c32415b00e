"""Someone else's words in an owner's note (issue 38): one visible line, control and direction
characters shown by name, never applied (bot/quoting.py)."""

from __future__ import annotations

from bot.quoting import LINE_BREAK, quote


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
