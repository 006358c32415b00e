"""Issue 24's Telegram acceptance: a question in Chinese, asked in a private chat through the
real connector (PTB long-polling a loopback Bot API), gets its answer in Chinese, and the
consultation the owner gets about it (a closed fact that would answer) is in the owner's
language (policy ``owner.language``): Chinese for an owner who set it, English otherwise, the
question and the fact quoted as written. A question no fact answers gets the Chinese deflection.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml

from bot.config import Settings
from bot.platforms import PlatformSettings
from bot.runtime import Runtime
from bot.serve import Service
from epmem.language import detect, frame_words
from epmem.memory import Fact
from testkit.fake_telegram import FakeTelegram
from testkit.house import shared_embedder

OWNER_TG, XIAOYU_TG = 880, 881
GUITAR = "子涵最近在学吉他，每周六下午上课。"
#: closed (it came from a chat) and undecided: what the owner is consulted about.
THERAPY = "子涵在学校心理中心做咨询，被诊断为中度抑郁。"
QUESTION = "子涵还在学吉他吗？听说他最近常去心理中心做咨询？"


def policy(path: Path, owner_language: str | None) -> Path:
    owner: dict[str, Any] = {"name": "王子涵", "identities": [f"telegram:{OWNER_TG}"]}
    if owner_language is not None:
        owner["language"] = owner_language
    path.write_text(
        yaml.safe_dump(
            {
                "owner": owner,
                "contacts": {
                    "xiaoyu": {
                        "name": "林小雨",
                        "relationship": "女朋友",
                        "level": 1,
                        "domain": "life",
                        "identities": [f"telegram:{XIAOYU_TG}"],
                    }
                },
                "categories": {
                    "health": {"level": 1, "domain": "life", "keywords": ["抑郁", "咨询"]},
                    "hobbies": {"level": 4, "keywords": ["吉他"]},
                },
                "default_category": "hobbies",
            },
            allow_unicode=True,
            sort_keys=False,
        )
    )
    return path


@pytest_asyncio.fixture
async def telegram(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as tg:
        for name, value in tg.service_env(EPMEM_SEND_PACING="0").items():
            monkeypatch.setenv(name, value)
        yield tg


async def serve(tmp_path: Path, owner_language: str | None) -> tuple[Runtime, Service]:
    settings = Settings(data_dir=tmp_path / "data", policy=policy(tmp_path / "policy.yaml", owner_language))
    runtime = await Runtime.open(settings, embedder=shared_embedder())
    await runtime.memory.replace_all(
        [
            Fact(id="f1", text=GUITAR, event_id="e1", category="hobbies", level=4, state="annotated"),
            Fact(
                id="f2",
                text=THERAPY,
                event_id="e2",
                category="health",
                level=1,
                domain="life",
                state="annotated",
                closed=True,
            ),
        ]
    )
    service = Service(runtime, PlatformSettings())
    await service.start()
    return runtime, service


def said(tg: FakeTelegram, chat: int) -> list[dict[str, Any]]:
    return [m for m in tg.sent_messages if m["chat"]["id"] == chat]


async def ask(tg: FakeTelegram, text: str) -> str:
    seen = len(said(tg, XIAOYU_TG))
    tg.private_text(FakeTelegram.user(XIAOYU_TG, "Xiaoyu"), text)
    await tg.wait_for(lambda: len(said(tg, XIAOYU_TG)) > seen, 30)
    return str(said(tg, XIAOYU_TG)[seen]["text"])


@pytest.mark.parametrize("owner_language", ["zh", None])
async def test_a_chinese_question_gets_a_chinese_answer_and_the_owner_is_asked_in_her_language(
    telegram: FakeTelegram, tmp_path: Path, owner_language: str | None
) -> None:
    runtime, service = await serve(tmp_path, owner_language)
    try:
        reply = await ask(telegram, QUESTION)
        assert detect(reply) == "zh" and frame_words(reply) == [], reply
        assert reply == f"据我所知，{GUITAR}", reply  # one Chinese full stop, no English frame
        assert "抑郁" not in reply
        await telegram.wait_for(lambda: bool(said(telegram, OWNER_TG)), 30)
        [note] = said(telegram, OWNER_TG)
        buttons = [b["text"] for row in note["reply_markup"]["inline_keyboard"] for b in row]
        if owner_language == "zh":
            assert note["text"].startswith(f"林小雨（telegram）问：\u201c{QUESTION}\u201d"), note["text"]
            assert f"f2：\u201c{THERAPY}\u201d" in note["text"], note["text"]
            assert "asked" not in note["text"] and "Should I tell them" not in note["text"]
            assert buttons[0] == "告诉林小雨" and "\U0001f512 保密" in buttons, buttons
        else:
            assert note["text"].startswith(f"林小雨 asked (telegram): \u201c{QUESTION}\u201d"), note["text"]
            assert f"f2: \u201c{THERAPY}\u201d" in note["text"], note["text"]
            assert buttons[0] == "Tell 林小雨" and "\U0001f512 Keep private" in buttons, buttons
        # a question nothing answers: the deflection, in Chinese
        deflected = await ask(telegram, "子涵的护照号码是多少？")
        assert deflected == "不好意思，这个我没法回答。我会转告王子涵你问过。", deflected
    finally:
        await service.stop()
        await runtime.close()
