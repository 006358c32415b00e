"""The relevance step's settings, read from a data file per language and checked at start.

Each language's file (epmem/language/relevance-<code>.yaml) records who produced its numbers
(``provenance``: the tool, the commit that last set them, the scenario sets they were picked
on) and the numbers, each with its one-line meaning; a language's file may ``extend`` another
and state only the values it changes (Chinese extends English: a value retuned for English
is retuned for Chinese too unless Chinese sets its own, as when the values were code). The
meaning of each number is :class:`RelevanceConfig`'s field description, which the writer
(:func:`write_settings`, used by the tuning tools) puts beside it. What the numbers do:
epmem/reply/relevance/__init__.py.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal, Self

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from epmem.errors import EpmemError

Kind = Literal["open", "state", "yesno", "when", "where", "who", "what"]
FOLDER = Path(__file__).resolve().parent


class SettingsError(EpmemError, ValueError):
    """A relevance settings file is missing or does not hold valid settings."""


class RelevanceConfig(BaseModel):
    """The relevance step's numbers (epmem/reply/relevance/__init__.py says how they are used)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_recall: float = Field(description="a fact whose recall score is below this does not answer anything")
    relative_cut: float = Field(
        ge=0, le=1, description="open and state questions: keep facts with at least this share of the best recall score"
    )
    open_veto: float = Field(description="open questions: a cross-encoder logit below this leaves a fact out")
    open_veto_recall: float = Field(description="open and state: unless its recall score is at least this")
    state_veto: float = Field(description="state questions: a cross-encoder logit below this leaves a fact out")
    complete_events: bool = Field(description="open and state: the other facts of an event told are told too")
    rescue_recall: float = Field(
        description="the least recall score a fact is weighed at (recall's own floor): an open question weighs every"
        " fact from here; any other, below min_recall, only when the cross-encoder is sure"
    )
    rescue_logit: float = Field(description="the logit at which the cross-encoder is sure a fact answers")
    max_facts: int = Field(ge=1, description="the most facts one reply tells")
    rerank_weight: float = Field(description="weight of the cross-encoder's sigmoid in a fact's relevance")
    rerank_temperature: float = Field(gt=0, description="temperature of the cross-encoder's logit in that sigmoid")
    veto: float = Field(description="other questions: a logit below this does not answer them")
    rerank_limit: int = Field(ge=0, description="the cross-encoder reads at most this many facts (best by recall)")
    event_margin: float = Field(ge=0, description="other events answer only within this of the best event")
    floor: float = Field(description="nothing below this relevance is said, unless the cross-encoder is sure")
    answers: float = Field(description="the logit at which the cross-encoder says a fact answers")
    logit_margin: float = Field(
        description="an event more than this logit below the best chosen one is left out, once that one answers"
    )
    max_parts: int = Field(ge=1, description="the cross-encoder reads at most this many parts of a question")
    stand_out: float = Field(
        description="when every fact read is left out, an event this far above every other by recall still answers"
    )
    match_weight: float = Field(description="open and state: weight of the late-interaction MaxSim (0: off)")
    match_limit: int = Field(ge=0, description="the late-interaction model reads at most this many facts")
    match_kinds: tuple[Kind, ...] = Field(description="the question kinds the late-interaction model weighs in on")

    def replace(self, **changes: object) -> Self:
        """These settings with ``changes``, checked like a file's (the tuning tools' grid points)."""
        return self.model_validate({**self.model_dump(), **changes})


class Provenance(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    tool: str = Field(min_length=1)
    commit: str = Field(min_length=7)
    sets: tuple[str, ...] = Field(min_length=1)
    note: str = ""


class SettingsFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    provenance: Provenance
    extends: str | None = None
    settings: dict[str, object]

    @field_validator("settings")
    @classmethod
    def _known_names(cls, settings: dict[str, object]) -> dict[str, object]:
        unknown = sorted(set(settings) - set(RelevanceConfig.model_fields))
        if unknown:
            raise ValueError(f"unknown setting {unknown[0]!r}")
        return settings


def settings_path(code: str, folder: Path = FOLDER) -> Path:
    return folder / f"relevance-{code}.yaml"


def load_settings(code: str, folder: Path = FOLDER) -> RelevanceConfig:
    """Language ``code``'s settings from its file in ``folder`` (and the file it extends): a
    missing file, a missing or unknown setting or a value out of range is one line naming the
    file and the field."""
    values = _values(settings_path(code, folder), folder, ())
    try:
        return RelevanceConfig.model_validate(values)
    except ValidationError as exc:
        raise SettingsError(f"{settings_path(code, folder)}: {_first(exc, 'settings')}") from None


def read_yaml(path: Path, what: str) -> object:
    """A language data file's YAML; a missing file or broken YAML is one line naming the file."""
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SettingsError(f"{path}: {what} missing") from None
    except yaml.YAMLError as exc:
        raise SettingsError(f"{path}: not YAML ({' '.join(str(exc).split())})") from None


def _values(path: Path, folder: Path, seen: Sequence[Path]) -> dict[str, object]:
    if path in seen:
        raise SettingsError(f"{path}: extends itself (through {', '.join(p.name for p in seen)})")
    raw = read_yaml(path, "relevance settings file")
    try:
        read = SettingsFile.model_validate(raw)
    except ValidationError as exc:
        raise SettingsError(f"{path}: {_first(exc)}") from None
    if read.extends is None:
        return dict(read.settings)
    # the language extended: beside this file, else a shipped one (a new language may extend English)
    base = settings_path(read.extends, folder)
    if not base.exists():
        base = settings_path(read.extends)
    return {**_values(base, base.parent, [*seen, path]), **read.settings}


def _first(exc: ValidationError, prefix: str = "") -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in (prefix, *error["loc"]) if p != "")
    return f"{where}: {error['msg']}"


def write_settings(
    path: Path,
    config: RelevanceConfig,
    provenance: Provenance,
    base: tuple[str, RelevanceConfig] | None = None,
) -> None:
    """Write ``config`` as a settings file: the provenance, then each value with its meaning;
    with ``base`` (its code and settings), only the values that differ from it."""
    values = config.model_dump()
    if base is not None:
        values = {k: v for k, v in values.items() if v != getattr(base[1], k)}
    head = {"provenance": provenance.model_dump(), **({"extends": base[0]} if base else {})}
    lines = [yaml.safe_dump(head, sort_keys=False, allow_unicode=True).rstrip(), "settings:"]
    for name, value in values.items():
        meaning = RelevanceConfig.model_fields[name].description
        lines.append(f"  # {meaning}")
        lines.append(f"  {name}: {_scalar(value)}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _scalar(value: object) -> str:
    if isinstance(value, float) and math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    if isinstance(value, tuple | list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return yaml.safe_dump(value, default_flow_style=True).removesuffix("\n...\n").strip()


def read_provenance(code: str, folder: Path = FOLDER) -> Mapping[str, object]:
    raw = yaml.safe_load(settings_path(code, folder).read_text(encoding="utf-8"))
    return dict(raw["provenance"])
