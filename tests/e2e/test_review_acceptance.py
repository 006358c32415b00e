"""Issue 9's end-to-end acceptance: a secret confided in a Telegram chat, imported from a
Telegram Desktop export, stays pending and unspoken (contextual integrity: someone else's secret
waits for the owner) until the owner settles it with /review on Telegram, which offers it
unprompted; the next answer follows the owner's choice, and the audit shows both.

Real parts throughout: `epmem ingest` as a subprocess on a real data folder, then `epmem run`'s
Service over the same folder with PTB long-polling a loopback Bot API, the owner tapping the
inline keyboard the bot sent.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from bot.platforms import PlatformSettings
from bot.runtime import Runtime
from bot.serve import Service
from testkit.fake_telegram import FakeTelegram
from testkit.house import grace_chat_export, OWNER_TG, TG, house_runtime, write_policy

#: its fixtures build data folders through imports (real models): more than the suite's 120 s on busy cores
pytestmark = pytest.mark.timeout(600)

REPO = Path(__file__).resolve().parents[2]
OWNER = FakeTelegram.user(OWNER_TG, "Maya")
LEO = FakeTelegram.user(TG["leo"], "Leo")
ANA = FakeTelegram.user(TG["ana"], "Ana")
QUESTION = "Any news from Grace? Is she expecting a baby?"
SECRET_WORD = "baby"

CHAT = [  # (from Grace?, text)
    (
        True,
        "Can I tell you something? We're expecting a baby in October. Please keep it between us, nobody else "
        "knows yet.",
    ),
    (False, "Oh Grace, congratulations!! My lips are sealed."),
    (True, "Thank you. We'll tell everyone after the scan in May."),
    (False, "I'm so happy for you both."),
]


def export(path: Path) -> Path:
    return grace_chat_export(path, CHAT, datetime(2026, 3, 2, 20, 15, tzinfo=UTC), 500, minutes=2)


@pytest_asyncio.fixture
async def imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple[FakeTelegram, Runtime]]:
    policy = write_policy(tmp_path / "policy.yaml")
    data = tmp_path / "data"
    env = {**os.environ, "EPMEM_DATA_DIR": str(data), "EPMEM_POLICY": str(policy), "EPMEM_LOG_LEVEL": "WARNING"}
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "ingest", str(export(tmp_path / "result.json"))],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    async with FakeTelegram() as tg:
        for name, value in tg.service_env().items():
            monkeypatch.setenv(name, value)
        runtime = await house_runtime(data, load=False, policy_file=policy)
        service = Service(runtime, PlatformSettings())
        try:
            await service.start()
            yield tg, runtime
        finally:
            await service.stop()
            await runtime.close()


def _to(tg: FakeTelegram, chat_id: int) -> list[dict[str, Any]]:
    return [m for m in tg.sent_messages if m["chat"]["id"] == chat_id]


def _button(message: dict[str, Any], starts: str) -> str:
    return next(
        b["callback_data"]
        for row in message["reply_markup"]["inline_keyboard"]
        for b in row
        if b["text"].startswith(starts)
    )


async def test_a_confided_secret_waits_for_the_owner_and_then_follows_the_owners_choice(
    imported: tuple[FakeTelegram, Runtime],
) -> None:
    tg, runtime = imported
    secrets = [f for f in await runtime.memory.all() if SECRET_WORD in f.text.casefold()]
    assert secrets, [(f.text, f.state) for f in await runtime.memory.all()]
    # fail closed: until the owner decides, nobody but the owner may hear it (pending counts as L0)
    assert all(f.state == "pending" and f.effective_level() == 0 and not f.whitelist for f in secrets), [
        (f.text, f.state, f.category, f.whitelist) for f in secrets
    ]
    secret = secrets[0]
    assert any(e == "context:told-by:grace" for e in secret.evidence)  # the rules' reason, kept for review
    # an import that leaves facts waiting tells the owner on Telegram when the bot starts
    waiting = await runtime.review.waiting()
    if waiting:
        await tg.wait_for(lambda: bool(_to(tg, OWNER_TG)))
        assert "/review" in _to(tg, OWNER_TG)[0]["text"] and f"{waiting} facts wait" in _to(tg, OWNER_TG)[0]["text"]
    # unspoken: Leo (Maya's husband, level 1) asks and hears nothing of it
    tg.private_text(LEO, QUESTION)
    await tg.wait_for(lambda: len(_to(tg, TG["leo"])) == 1)
    assert SECRET_WORD not in _to(tg, TG["leo"])[0]["text"].casefold()
    # Leo's question needs the closed secret: the owner is consulted (issue 20), which this test
    # leaves unanswered; its note must have arrived before the review messages are counted
    assert runtime.owner.consultations is not None
    # the consultation is looked for once the reply is out (bot/consultations/after_reply.py)
    await tg.wait_for(lambda: runtime.agent.later.finished >= 1 and runtime.agent.later.running == 0)
    if await runtime.owner.consultations.store.pending():
        await tg.wait_for(lambda: any("/consult " in m["text"] for m in _to(tg, OWNER_TG)))
    # /review on Telegram: the queue itself asks about the pending secret (skipping what is not it)
    seen = len(_to(tg, OWNER_TG))
    tg.private_text(OWNER, "/review")
    for _ in range(12):
        await tg.wait_for(lambda: len(_to(tg, OWNER_TG)) > seen)  # noqa: B023 (awaited at once)
        seen = len(_to(tg, OWNER_TG))
        message = _to(tg, OWNER_TG)[-1]
        if f"{secret.id}: \u201c" in message["text"] and "Who may know" not in message["text"]:
            break
        assert "reply_markup" in message, [m["text"][:300] for m in _to(tg, OWNER_TG)]
        tg.callback_query(OWNER, message, _button(message, "Ask me later"))
    else:
        pytest.fail(f"/review never asked about {secret.id}")
    if not any(b["text"].startswith("\U0001f465") for row in message["reply_markup"]["inline_keyboard"] for b in row):
        # filed under a never-share category: nobody can be let in until the owner says what it is
        category = next(
            b for row in message["reply_markup"]["inline_keyboard"] for b in row if " c:" in b["callback_data"]
        )
        tg.callback_query(OWNER, message, category["callback_data"])
        await tg.wait_for(lambda: len(_to(tg, OWNER_TG)) > seen)
        seen = len(_to(tg, OWNER_TG))
        tg.private_text(OWNER, f"/review {secret.id}")
        await tg.wait_for(lambda: len(_to(tg, OWNER_TG)) > seen)
        seen = len(_to(tg, OWNER_TG))
        message = _to(tg, OWNER_TG)[-1]
    tg.callback_query(OWNER, message, _button(message, "\U0001f465"))
    await tg.wait_for(lambda: len(_to(tg, OWNER_TG)) > seen)
    picker = _to(tg, OWNER_TG)[-1]
    assert picker["text"].startswith(f"Who may know {secret.id}")
    tg.callback_query(OWNER, picker, _button(picker, "Leo Chen"))
    await tg.wait_for(lambda: len(_to(tg, OWNER_TG)) > seen + 1)
    tg.callback_query(OWNER, _to(tg, OWNER_TG)[-1], _button(_to(tg, OWNER_TG)[-1], "Done"))
    await tg.wait_for(lambda: len(_to(tg, OWNER_TG)) > seen + 2)
    settled = await runtime.memory.get(secret.id)
    assert settled is not None and (settled.state, settled.level, settled.whitelist) == ("owner-set", 0, ["leo"])
    # Leo's question waited on this answer (a consultation): he is followed up in his chat
    await tg.wait_for(lambda: len(_to(tg, TG["leo"])) == 2)
    assert SECRET_WORD in _to(tg, TG["leo"])[1]["text"].casefold()
    # the next answers follow the owner's choice: Leo may know, Ana may not
    tg.private_text(LEO, QUESTION)
    tg.private_text(ANA, QUESTION)
    await tg.wait_for(lambda: len(_to(tg, TG["leo"])) == 3 and len(_to(tg, TG["ana"])) == 1)
    assert SECRET_WORD in _to(tg, TG["leo"])[2]["text"].casefold()
    assert SECRET_WORD not in _to(tg, TG["ana"])[0]["text"].casefold()
    # the audit shows the owner's answer and both replies
    reviews = [
        r
        for r in await runtime.audit.records(kind="policy_change")
        if r.body.get("action") == "review" and r.body.get("fact") == secret.id
    ]
    assert reviews and reviews[-1].body["to"]["whitelist"] == ["leo"]
    assert all(r.body["by"] == f"telegram:{OWNER_TG}" and r.body["platform"] == "telegram" for r in reviews)
    replies = await runtime.audit.records(kind="reply", contact="leo")
    assert [secret.id in r.body.get("disclosed", []) for r in replies] == [False, True]
    assert {d.recipient for d in await runtime.audit.who_knows(secret.id)} == {"leo"}
