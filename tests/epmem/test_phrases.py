"""The one phrase catalogue: every reply and note per language, as data checked at start."""

from __future__ import annotations

from pathlib import Path

import pytest

from epmem.language import SettingsError, say
from epmem.language.phrases import load_phrases

#: said in English whatever the owner's language, as it always was.
ENGLISH_ONLY = {"consult.joined"}


def test_chinese_has_every_english_key_but_the_english_only_notes() -> None:
    en, zh = load_phrases("en"), load_phrases("zh")
    assert set(en) - set(zh) == ENGLISH_ONLY
    assert set(zh) <= set(en)


def test_the_consultation_notes_come_from_the_catalogue() -> None:
    # the note's words are catalogue keys, in the owner's language, English where a key is missing
    assert say("consult.label.private", "zh") == "\U0001f512 保密"
    names = {k: k.upper() for k in ("asker", "question", "platform", "who", "contact")}
    assert say("consult.joined", "zh", **names) == say("consult.joined", "en", **names)
    assert say("audience.level", "en", level="2") == "contacts at trust level 2 or closer"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("- a list\n", "expected a mapping of phrase keys to text"),
        ("greeting: [1, 2]\n", "phrase 'greeting': expected text, got list"),
        ("greeting: 'Hi {owner'\n", "phrase 'greeting': not a format template"),
        ("greeting: 'x\n", "not YAML"),
    ],
)
def test_a_broken_catalogue_is_refused_naming_the_file_and_key(tmp_path: Path, text: str, error: str) -> None:
    (tmp_path / "phrases-xx.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(SettingsError) as caught:
        load_phrases("xx", tmp_path)
    assert str(caught.value).startswith(str(tmp_path / "phrases-xx.yaml")) and error in str(caught.value)


def test_a_missing_catalogue_is_named(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="phrases-yy.yaml: phrase catalogue missing"):
        load_phrases("yy", tmp_path)
