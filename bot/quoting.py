"""Someone else's words in a note for the owner, quoted so that they cannot pass for the note's own.

A contact's question (and a fact's words, which may be a contact's) sits inside a note whose
layout the owner trusts: "I answered without these, which you have not opened to anyone yet:",
"Your policy for ... would suggest: ...". Line breaks in a question would let it draw a forged
copy of that layout above the real one; a U+202E would turn the rest of a line round. So every
note shows such text through :func:`quote`: one line, a line break shown as a visible
:data:`LINE_BREAK`, runs of blanks as one space, and every control, format (bidi, zero width),
private-use or unassigned character written out as ``<U+202E>``, never applied; then clipped.

Markup and link previews are the platforms' side (issue 38): Slack gets every message as plain
text and unfurls nothing, Telegram sends without a parse mode and without link previews.
"""

from __future__ import annotations

import re
import unicodedata

#: what a line break inside quoted text is shown as.
LINE_BREAK = " \u23ce "
#: how much of a quoted text a note shows by default.
WIDTH = 300

_BREAKS = re.compile(r"\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")
_BLANKS = re.compile(r"\s+")
#: Unicode categories never applied in a quote: controls, format (bidi marks and overrides, zero
#: width characters), surrogates, private use, unassigned, line and paragraph separators.
_SHOWN = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def clip(text: str, width: int = WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "\u2026"


def _visible(ch: str) -> str:
    return f"<U+{ord(ch):04X}>" if unicodedata.category(ch) in _SHOWN else ch


def quote(text: str, width: int = WIDTH) -> str:
    """``text`` as one visible line (see the module doc), at most ``width`` characters of it."""
    lines = [_BLANKS.sub(" ", line).strip() for line in _BREAKS.split(clip(text.strip(), width))]
    one = LINE_BREAK.join(lines)
    return "".join(ch if ch.isprintable() or ch == " " else _visible(ch) for ch in one)
