"""Issue 39: the relevance step's numbers are data files per language, checked at start; a
broken file is one line naming the file and the field; the tuning tools write a file with its
provenance that loads back to the same settings."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from epmem.language import CHINESE, ENGLISH, Provenance, RelevanceConfig, SettingsError, load_settings, write_settings
from epmem.language.settings import FOLDER, read_provenance, settings_path

PROVENANCE = Provenance(tool="benchmarks/tools/tune_relevance.py", commit="abc1234", sets=("../shared/bench/examples",))


def test_the_shipped_files_record_where_their_numbers_came_from() -> None:
    for code in ("en", "zh"):
        provenance = read_provenance(code)
        assert str(provenance["tool"]).startswith("benchmarks/tools/") and provenance["sets"], code
        assert len(str(provenance["commit"])) >= 7
    assert ENGLISH.relevance.stand_out == math.inf and CHINESE.relevance.stand_out == 0.15
    # Chinese states only what it changes; the rest is English's
    assert CHINESE.relevance.floor == ENGLISH.relevance.floor and CHINESE.relevance.max_parts == 1


def test_every_number_is_stated_with_its_meaning() -> None:
    text = settings_path("en").read_text(encoding="utf-8")
    for name, info in RelevanceConfig.model_fields.items():
        assert info.description, name
        assert f"\n  {name}: " in text, name


def _write(folder: Path, body: str, code: str = "xx") -> None:
    (folder / f"relevance-{code}.yaml").write_text(
        "provenance:\n  tool: t\n  commit: '1234567'\n  sets: [s]\n" + body, encoding="utf-8"
    )


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ("extends: en\nsettings:\n  max_facts: 0\n", "relevance-xx.yaml: settings.max_facts: Input should be greater"),
        ("extends: en\nsettings:\n  flor: 0.6\n", "relevance-xx.yaml: settings: Value error, unknown setting 'flor'"),
        ("settings:\n  floor: 0.6\n", "relevance-xx.yaml: settings.min_recall: Field required"),
        ("extends: en\nsettings:\n  veto: low\n", "relevance-xx.yaml: settings.veto: Input should be a valid number"),
        ("extends: xx\nsettings: {}\n", "relevance-xx.yaml: extends itself"),
        ("extends: en\n", "relevance-xx.yaml: settings: Field required"),
        ("extends: en\nsettings: [\n", "relevance-xx.yaml: not YAML"),
    ],
)
def test_a_broken_file_is_one_line_naming_the_file_and_the_field(tmp_path: Path, body: str, error: str) -> None:
    _write(tmp_path, body)
    with pytest.raises(SettingsError) as raised:
        load_settings("xx", tmp_path)
    assert error in str(raised.value) and "\n" not in str(raised.value)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"relevance-fr\.yaml: relevance settings file missing"):
        load_settings("fr", tmp_path)


def test_a_written_file_loads_back_to_the_same_settings(tmp_path: Path) -> None:
    tuned = ENGLISH.relevance.replace(floor=0.65, veto=-4.0)
    write_settings(settings_path("en", tmp_path), tuned, PROVENANCE)
    assert load_settings("en", tmp_path) == tuned
    assert read_provenance("en", tmp_path)["commit"] == "abc1234"
    assert "  # nothing below this relevance is said" in settings_path("en", tmp_path).read_text(encoding="utf-8")
    # a language extending another writes only what differs from it (Chinese: ten values) ...
    write_settings(settings_path("zh", tmp_path), CHINESE.relevance, PROVENANCE, ("en", ENGLISH.relevance))
    written = settings_path("zh", tmp_path).read_text(encoding="utf-8")
    assert written.count("\n  # ") == 10 and "extends: en" in written
    # ... and a value retuned for the language it extends is retuned for it too
    assert load_settings("zh", tmp_path) == CHINESE.relevance.replace(floor=0.65, veto=-4.0)


def test_a_grid_point_is_checked_like_a_file() -> None:
    with pytest.raises(ValueError, match="rerank_temperature"):
        ENGLISH.relevance.replace(rerank_temperature=0.0)
    assert FOLDER.name == "language"
