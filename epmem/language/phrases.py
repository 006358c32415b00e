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

import yaml

from epmem.language.settings import FOLDER, SettingsError


def phrases_path(code: str, folder: Path = FOLDER) -> Path:
    return folder / f"phrases-{code}.yaml"


def load_phrases(code: str, folder: Path = FOLDER) -> dict[str, str]:
    """The catalogue of ``code``, checked: a mapping of keys to text (a broken file is an
    error naming the file and the key, at start, not a reply that fails later)."""
    path = phrases_path(code, folder)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SettingsError(f"{path}: phrase catalogue missing") from None
    except yaml.YAMLError as exc:
        raise SettingsError(f"{path}: not YAML ({' '.join(str(exc).split())})") from None
    if not isinstance(data, dict) or not data:
        raise SettingsError(f"{path}: expected a mapping of phrase keys to text")
    for key, text in data.items():
        if not isinstance(key, str) or not isinstance(text, str):
            raise SettingsError(f"{path}: phrase {key!r}: expected text, got {type(text).__name__}")
        try:
            text.format_map(_Any())
        except (ValueError, IndexError) as exc:
            raise SettingsError(f"{path}: phrase {key!r}: not a format template ({exc})") from None
    return data


class _Any(dict[str, str]):
    """Any placeholder name is accepted when a template is checked (only its shape is)."""

    def __missing__(self, key: str) -> str:
        return ""
