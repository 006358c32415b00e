"""Importers: chat exports in, :class:`epmem.memory.sessions.Message` records out (see load.py)."""

from epmem.ingest.errors import IngestError
from epmem.ingest.load import FORMATS, detect_format, read_export

__all__ = ["FORMATS", "IngestError", "detect_format", "read_export"]
