"""Typed audit records (epmem/audit/kinds.py) on a real audit file: written through their
models, read back as the same models, and the records written before them still verify."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from epmem.audit import (
    KINDS,
    ApprovalRecord,
    AuditLog,
    ConsultationRecord,
    DeliveryRecord,
    HeldRecord,
    PolicyChangeRecord,
    ReplyRecord,
    UndeliveredRecord,
    UnreadRecord,
    export,
)
from epmem.audit.kinds import MODELS
from epmem.audit.sealing import canonical, chain_hash


def test_every_kind_has_one_model_naming_it() -> None:
    assert len(KINDS) == len(set(KINDS)) == len(MODELS)
    for kind, model in MODELS.items():
        assert model.kind == kind
    assert {"reply", "held", "delivery", "undelivered", "policy_change", "erasure", "ledger_seal"} <= set(KINDS)


async def test_what_is_written_is_read_back_as_its_model(database_target: Path | str) -> None:
    entries = [
        ReplyRecord(
            platform="console",
            chat="c1",
            contact="leo",
            question="Is Sam moving?",
            disclosed=["f1"],
            deflected=False,
            reply="Sam is moving to Leeds.",
        ),
        HeldRecord(question="q", would_disclose=["f2"], draft="d", approval="a1", reply=None),
        ApprovalRecord(approval="a1", decision="rejected", reply=None, by="console:owner"),
        ConsultationRecord(consultation="c9", facts=["f3"], question="Why?"),
        UndeliveredRecord(of="r1", message_kind="owner_note", outcome="refused", error="Forbidden"),
        PolicyChangeRecord.model_validate({"action": "level", "contact": "ana", "from": 3, "to": 2}),
    ]
    async with AuditLog(database_target) as log:
        written = [await log.write(e, contact="leo") for e in entries]
        read = [await log.get(r.id) for r in written]
        assert (await log.verify()) == (len(entries), None)
    for entry, rec in zip(entries, read):
        assert rec is not None and type(rec.entry) is type(entry) and rec.kind == entry.kind
        assert rec.entry.body() == entry.body() == rec.body
    undelivered = read[4]
    assert undelivered is not None and undelivered.body["kind"] == "owner_note"
    assert isinstance(undelivered.entry, UndeliveredRecord) and undelivered.entry.message_kind == "owner_note"
    assert read[5] is not None and read[5].entry.summary() == "level contact ana to 2"
    assert read[0] is not None and read[0].entry.disclosed_facts() == ["f1"]
    assert json.loads(export([r for r in read if r], "jsonl").splitlines()[0])["reply"] == "Sam is moving to Leeds."


async def test_a_body_that_does_not_fit_its_kind_is_not_written(database_target: Path | str) -> None:
    async with AuditLog(database_target) as log:
        with pytest.raises(ValueError, match="unknown audit record kind 'replied'"):
            await log.append("replied", {"question": "q"})
        with pytest.raises(ValueError, match=r"audit record 'delivery': field delivered"):
            await log.append("delivery", {"of": "r1", "delivered": "perhaps"})
        assert await log.records() == []


async def test_records_written_before_the_models_still_verify_and_read(tmp_path: Path) -> None:
    """A body as an older version wrote it (a kind this version no longer writes, a field of
    another shape), chained over its stored JSON: it verifies, and reads as it was stored."""
    path = tmp_path / "audit.sqlite"
    async with AuditLog(path) as log:
        await log.write(DeliveryRecord(of="r0", delivered=True))
    old = [("old1", "greeting", {"text": "hi"}), ("old2", "delivery", {"of": "r1", "delivered": "maybe"})]
    db = sqlite3.connect(path)
    prev = db.execute("SELECT hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()[0]
    for rid, kind, body in old:
        h = chain_hash(prev, canonical(rid, "2026-01-01T00:00:00.000+00:00", kind, None, body))
        db.execute(
            "INSERT INTO audit(id, time, kind, contact, body, prev_hash, hash, format) VALUES (?,?,?,?,?,?,?,2)",
            (rid, "2026-01-01T00:00:00.000+00:00", kind, None, json.dumps(body), prev, h),
        )
        prev = h
    db.commit()
    db.close()
    async with AuditLog(path) as log:
        assert (await log.verify()) == (3, None)
        for rid, kind, body in old:
            rec = await log.get(rid)
            assert rec is not None and isinstance(rec.entry, UnreadRecord)
            assert rec.entry.body() == body and rec.as_dict()["kind"] == kind
            assert all(rec.as_dict()[k] == v for k, v in body.items())
