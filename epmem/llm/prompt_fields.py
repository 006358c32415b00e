"""The values a prompt carries: the delimiters no value can forge, and the formatters that turn
structured items (objects with attributes, or mappings with keys) into a template's lines."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_OPEN_RUN = re.compile(r"[<\uFF1C\uFE64\u2039\u00AB]{3,}")
_CLOSE_RUN = re.compile(r"[>\uFF1E\uFE65\u203A\u00BB]{3,}")


def neutralize(text: str) -> str:
    """Make ``text`` unable to open or close a ``<<< ... >>>`` block.

    Any run of three or more angle brackets (ASCII, full-width, small, or guillemet look-alikes)
    becomes the same number of single guillemets, which the templates never use as delimiters.
    """
    text = _OPEN_RUN.sub(lambda m: "\u2039" * len(m.group(0)), text)
    return _CLOSE_RUN.sub(lambda m: "\u203a" * len(m.group(0)), text)


# --------------------------------------------------------------------------------------------
# field formatters (accept str, or iterables of objects / mappings)
# --------------------------------------------------------------------------------------------


def field_value(item: Any, *keys: str, default: Any = None) -> Any:
    for key in keys:
        if isinstance(item, Mapping):
            if key in item and item[key] is not None:
                return item[key]
        else:
            value = getattr(item, key, None)
            if value is not None:
                return value
    return default


def one_line(value: Any) -> str:
    return " ".join(str(value).split())


def fmt_text(value: Any) -> str:
    return "" if value is None else str(value)


def fmt_line(value: Any) -> str:
    return one_line(value) if value is not None else ""


def fmt_categories(value: Any) -> str:
    """Policy categories: ``- name: level L2, domain work - description``.

    Items: objects/mappings with name, level, domain, description; or a mapping
    ``{name: item}`` where item has level/domain/description (or is just the level).
    """
    if isinstance(value, str):
        return value or "(none)"
    pairs = list(value.items()) if isinstance(value, Mapping) else [(None, v) for v in value]
    lines = []
    for key, item in pairs:
        if isinstance(item, int):
            name, level, domain, desc = key, item, None, ""
        else:
            name = field_value(item, "name", default=key)
            level = field_value(item, "level", default="?")
            domain = field_value(item, "domain")
            desc = field_value(item, "description", default="")
        level = getattr(level, "value", level)  # IntEnum-like levels
        domain = getattr(domain, "value", domain) or "any"
        line = f"- {one_line(name)}: level L{level}, domain {one_line(domain)}"
        if desc:
            line += f" - {one_line(desc)}"
        lines.append(line)
    return "\n".join(lines) or "(none)"


def fmt_events(value: Any) -> str:
    """Known events: ``- <id>: <short text>``; items with id/event_id and text/summary."""
    if isinstance(value, str):
        return value or "(none)"
    lines = []
    items = value.items() if isinstance(value, Mapping) else ((None, v) for v in value)
    for key, item in items:
        if isinstance(item, str):
            event_id, text = key, item
        else:
            event_id = field_value(item, "id", "event_id", default=key)
            text = field_value(item, "text", "summary", "title", default="")
        lines.append(f"- {one_line(event_id)}: {one_line(text)}")
    return "\n".join(lines) or "(none)"


def fmt_contacts(value: Any) -> str:
    """Contacts: ``- <id> | <name> | <relationship>``."""
    if isinstance(value, str):
        return value or "(none)"
    lines = []
    for item in value:
        cid = field_value(item, "id", "contact_id", default="?")
        name = field_value(item, "name", "display_name", default="")
        rel = field_value(item, "relationship", "relation", default="")
        lines.append(f"- {one_line(cid)} | {one_line(name)} | {one_line(rel)}")
    return "\n".join(lines) or "(none)"


def fmt_turns(value: Any) -> str:
    """Turns: ``[<index>] <speaker>: <text>``; index from the item or its position."""
    if isinstance(value, str):
        return value
    lines = []
    for pos, item in enumerate(value):
        if isinstance(item, (tuple, list)) and len(item) == 2:
            index, speaker, text = pos, item[0], item[1]
        else:
            index = field_value(item, "index", "turn", default=pos)
            speaker = field_value(item, "speaker", "sender", "author", "role", default="?")
            text = field_value(item, "text", "content", default="")
        lines.append(f"[{index}] {one_line(speaker)}: {text}")
    return "\n".join(lines)


def fmt_facts(value: Any) -> str:
    """Projected facts as a numbered list (``1. ...``); ``(none)`` when empty."""
    if isinstance(value, str):
        return value or "(none)"
    lines = []
    for n, item in enumerate(value, 1):
        text = item if isinstance(item, str) else field_value(item, "text", default="")
        lines.append(f"{n}. {one_line(text)}")
    return "\n".join(lines) or "(none)"


def fmt_candidates(value: Any) -> str:
    """Offered facts as ``F1. text`` lines; items are (id, text) pairs."""
    if isinstance(value, str):
        return value or "(none)"
    return "\n".join(f"{one_line(fid)}. {one_line(text)}" for fid, text in value) or "(none)"
