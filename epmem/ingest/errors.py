"""The one error every importer raises: which file, where in it, and what is wrong."""

from __future__ import annotations

from pathlib import Path

from epmem.errors import EpmemError


class IngestError(EpmemError, ValueError):
    """Raised before anything is written, so a bad export never leaves half an import behind."""

    def __init__(self, path: Path | str, where: str, reason: str) -> None:
        self.path = str(path)
        self.where = where
        self.reason = reason
        super().__init__(f"{self.path}: {where}: {reason}" if where else f"{self.path}: {reason}")
