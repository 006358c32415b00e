"""The phrase catalogue: every word the delegate writes itself, per language, as data.

Each language's file (epmem/language/phrases-<code>.yaml) maps a key to a ``str.format``
template: the replies to contacts (the deflection, the frame around the facts, small talk) and
the notes to the owner (a consultation's note and its one-tap answers, the audience in words).
A new reply or note is a new key in each language's file, said with ``say(key, lang, ...)``; a
language that lacks a key is said in English (the default language has every key), so a third
language can start with the replies and add the notes later. The facts are never phrases: they
are said as stored.
"""

from __future__ import annotations

from pathlib import Path
from string import Formatter

from epmem.language.settings import FOLDER, SettingsError, read_yaml


def phrases_path(code: str, folder: Path = FOLDER) -> Path:
    return folder / f"phrases-{code}.yaml"


def load_phrases(code: str, folder: Path = FOLDER) -> dict[str, str]:
    """The catalogue of ``code``, checked: a mapping of keys to text (a broken file is an
    error naming the file and the key, at start, not a reply that fails later)."""
    path = phrases_path(code, folder)
    data = read_yaml(path, "phrase catalogue")
    if not isinstance(data, dict) or not data:
        raise SettingsError(f"{path}: expected a mapping of phrase keys to text")
    for key, text in data.items():
        if not isinstance(key, str) or not isinstance(text, str):
            raise SettingsError(f"{path}: phrase {key!r}: expected text, got {type(text).__name__}")
        try:
            list(Formatter().parse(text))
        except ValueError as exc:
            raise SettingsError(f"{path}: phrase {key!r}: not a format template ({exc})") from None
    return data
