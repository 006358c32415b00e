"""One audit record as the log stores and reads it, and what a chain walk needs of the log.

Apart from :mod:`epmem.audit.log` so that the modules that walk or seal the chain
(:mod:`epmem.audit.verify`, :mod:`epmem.audit.ledger`, :mod:`epmem.audit.erase`) name the record
and the log's reading surface without importing the log, which imports them: no import circle.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Protocol

from epmem.audit.kinds import RecordBody, read_entry
from epmem.audit.schema import FORMAT, GENESIS, outcome
from epmem.audit.sealing import Erased, canonical, chain_hash
from epmem.db import Database


def new_record_id() -> str:
    return uuid.uuid4().hex[:12]


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


@dataclass(slots=True)
class AuditRecord:
    kind: str
    #: the body as written, with every text still there (None for an erased one).
    body: dict[str, Any]
    contact: str | None = None
    id: str = field(default_factory=new_record_id)
    time: str = field(default_factory=now_iso)
    prev_hash: str = GENESIS
    hash: str = ""
    seq: int = 0
    #: what the chain covers: the body with salted digests in place of its texts.
    skeleton: dict[str, Any] = field(default_factory=dict)
    #: texts that /forget erased from this record.
    erased: list[Erased] = field(default_factory=list)
    format: int = FORMAT
    #: format-1 records only: the seal chain's value at this record (epmem.audit.schema).
    seal: str | None = None
    #: slot -> (salt, text) as stored (both None once erased); for verify.
    stored: dict[str, tuple[bytes | None, str | None]] = field(default_factory=dict)

    def canonical(self) -> str:
        return canonical(self.id, self.time, self.kind, self.contact, self.skeleton)

    def compute_hash(self) -> str:
        return chain_hash(self.prev_hash, self.canonical())

    @property
    def outcome(self) -> str:
        return outcome(self.kind, self.body)

    @property
    def entry(self) -> RecordBody:
        """The body read through its kind's model (:mod:`epmem.audit.kinds`): what every reader
        (the page, ``epmem audit``, /audit, the export) shows."""
        return read_entry(self.kind, self.body)

    def as_dict(self) -> dict[str, Any]:
        """The record for JSON (``epmem audit show``, the JSONL export): its body as its model reads it."""
        out = {
            "seq": self.seq,
            "id": self.id,
            "time": self.time,
            "kind": self.kind,
            "contact": self.contact,
            **self.entry.body(),
            "prev_hash": self.prev_hash,
            "hash": self.hash,
        }
        if self.erased:
            out["erased"] = [{"field": e.slot, "at": e.at, "by": e.by, "erasure": e.erasure} for e in self.erased]
        return out


class ChainSource(Protocol):
    """What walking the chain reads: :class:`epmem.audit.AuditLog` is one."""

    @property
    def db(self) -> Database: ...

    def stream(self, where: str = "", args: Sequence[Any] = (), after: int = 0) -> AsyncIterator[AuditRecord]: ...

    async def get(self, record_id: str) -> AuditRecord | None: ...
