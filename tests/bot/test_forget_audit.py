"""/forget really forgets: after people were told a fact in replies, held drafts, an approved
and an edited reply, its words are in no file of the data folder, and the audit still verifies."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

from connectors.base import Action, DeliveryReport
from connectors.console import ConsoleConnector
from epmem.audit import check
from epmem.memory.facts import Fact
from testkit.consulting import KNEE_Q, OPEN_ANSWER, open_house
from testkit.house import house_runtime
from testkit.runtime import REPO, ask

CANARY = b"Quillfeather"
FACT = Fact(
    id="q1",
    text="Maya booked the Quillfeather clinic for her knee on Friday.",
    event_id="e-knee",
    category="hobbies",
    level=4,
    state="owner-set",
)
QUESTION = "When is Maya at the Quillfeather clinic?"


def files_with(folder: Path, needle: bytes) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes())


class Outbox:
    def __init__(self) -> None:
        self.sent: list[str] = []

    async def __call__(self, chat_id: str, text: str, actions: tuple[Action, ...] = ()) -> None:
        self.sent.append(text)


async def test_forget_leaves_no_copy_in_any_file_and_the_audit_verifies(tmp_path: Path) -> None:
    data = tmp_path / "data"
    runtime = await house_runtime(data)
    try:
        agent = runtime.agent
        outbox = Outbox()
        runtime.outbox.attach("console", outbox)
        await runtime.memory.add([FACT])
        for i in range(15):
            out = await agent.handle(ask("leo" if i % 2 else "ana", QUESTION))
            assert "Quillfeather" in (out.text or ""), out
        await agent.handle(ask("owner", "/approval 4"))
        held = [await agent.handle(ask("leo", QUESTION)) for _ in range(3)]
        ids = [(h.to_owner or "").split()[2] for h in held]
        await agent.handle(ask("owner", f"/approve {ids[0]}"))
        await agent.handle(ask("owner", f"/edit {ids[1]} Yes, the Quillfeather clinic, Friday at ten."))
        await agent.handle(ask("owner", "/approval off"))
        assert len(outbox.sent) == 2
        holders = {Path(p).name.split("-")[0] for p in files_with(data, CANARY)}  # file or its -wal
        assert {"audit.sqlite", "state.sqlite"} <= holders, holders

        reply = (await agent.handle(ask("owner", "/forget q1"))).text or ""
        assert reply.startswith("Erased q1 and their vectors; withdrew held replies"), reply
        assert "erased their words from 20 audit records" in reply  # 15 replies, 3 held, 1 approved, 1 edited
        assert files_with(data, CANARY) == []
        assert files_with(data, b"clinic for her knee") == []
        status = await check(runtime.audit)
        assert status.ok and status.erased_records == 20, status
        erasure = reply.split("(erasure ")[1].split(")")[0]
        first = next(r for r in await runtime.audit.records(kind="reply") if r.erased)
        why = (await agent.handle(ask("owner", f"/why {first.id}"))).text or ""
        assert "(erased " in why and "by console:owner" in why and "Quillfeather" not in why, why
        assert {e.erasure for e in first.erased} == {erasure}
        told = await runtime.audit.who_knows("q1")
        assert {d.recipient for d in told} == {"leo", "ana"}  # the ledger keeps who was told (ids only)
    finally:
        await runtime.close()
    assert files_with(data, CANARY) == []
    env = {**os.environ, "EPMEM_DATA_DIR": str(data), "EPMEM_LOG_LEVEL": "WARNING"}
    verified = subprocess.run(
        [sys.executable, "-m", "bot.cli", "audit", "verify"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )
    assert verified.returncode == 0 and "chain intact" in verified.stdout, verified


async def test_forget_erases_the_words_from_owner_notes_no_platform_took(tmp_path: Path) -> None:
    """Issue 38: on the console the owner's consultation note waits in /consults with the fact's
    words; a note a platform refused is kept under /undelivered. After /forget neither is listed
    and no file of the data folder holds the words."""
    data = tmp_path / "data"
    h = await open_house(data)
    try:
        knee = await h.fact("ligament")
        stdout = io.StringIO()
        console = ConsoleConnector(
            "console:leo",
            h.runtime.agent.handle,
            stdin=io.StringIO(KNEE_Q + "\n"),
            stdout=stdout,
            stderr=io.StringIO(),
            owner_notes=h.runtime.outbox.tell_owner,  # as `epmem chat --as leo` wires it
        )
        await console.start()
        await h.runtime.agent.later.drain()  # the look after the reply sends the note
        assert OPEN_ANSWER in stdout.getvalue()
        refused = f"A note the platform refused, quoting {knee.id}: \u201c{knee.text}\u201d"
        await h.runtime.owner.deliveries.keep(DeliveryReport("telegram", "777", "owner_note", False, 3, text=refused))
        kept = await h.owner("/undelivered") + await h.owner("/consults")
        # the refused note is kept; the console's consultation note waits in /consults with the words
        assert kept.count(knee.text) == 2, kept
        assert files_with(data, b"ligament") != [] and files_with(data, b"physio") != []

        reply = await h.owner(f"/forget {knee.id}")
        assert "erased undelivered" in reply, reply
        assert "ligament" not in await h.owner("/undelivered") + await h.owner("/consults")
        for word in (b"ligament", b"physio"):  # the fact's words, in no file (WAL, Qdrant Edge...)
            assert files_with(data, word) == [], word
    finally:
        await h.runtime.close()
    assert files_with(data, b"ligament") == [] and files_with(data, b"physio") == []
