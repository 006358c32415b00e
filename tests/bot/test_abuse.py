"""Rate limit and probing alerts: the windows with a hand-moved clock, then through the agent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.abuse import AbuseGuard, Admission
from bot.agent import RATE_LIMIT_NOTE
from bot.runtime import Runtime
from connectors.base import Inbound
from testkit.house import HOUSE_Q, TG, house_runtime
from testkit.runtime import ask


class Ticks:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_rate_limit_reports_once_per_burst_and_recovers() -> None:
    ticks = Ticks()
    guard = AbuseGuard(max_messages=3, window=60, clock=ticks)
    assert [guard.admit("a") for _ in range(3)] == [Admission.OK] * 3
    assert guard.admit("a") is Admission.LIMITED
    assert guard.admit("a") is Admission.LIMITED_AGAIN
    assert guard.admit("b") is Admission.OK  # per sender
    ticks.now += 61
    assert guard.admit("a") is Admission.OK
    assert AbuseGuard(max_messages=0).admit("a") is Admission.OK  # 0 turns it off


def test_deflection_alert_fires_once_per_window() -> None:
    ticks = Ticks()
    guard = AbuseGuard(deflections=3, deflection_window=600, clock=ticks)
    assert [guard.deflected("x") for _ in range(4)] == [None, None, 3, None]
    ticks.now += 300
    assert guard.deflected("x") is None  # still inside the flagged window
    ticks.now += 601
    assert [guard.deflected("x") for _ in range(3)] == [None, None, 3]


@pytest.fixture
async def strict(tmp_path: Path) -> AsyncIterator[Runtime]:
    runtime = await house_runtime(tmp_path / "data", rate_limit_messages=3, deflection_alert=3)
    try:
        yield runtime
    finally:
        await runtime.close()


def telegram(user: int, text: str) -> Inbound:
    who = f"telegram:{user}"
    return Inbound(platform="telegram", chat_id=str(user), chat_kind="direct", sender=who, text=text, audience=(who,))


async def test_flood_is_refused_and_audited_once(strict: Runtime) -> None:
    outs = [await strict.agent.handle(telegram(TG["leo"], HOUSE_Q)) for _ in range(5)]
    assert all(o.text and "Elm Road" in o.text for o in outs[:3])
    assert outs[3].text == RATE_LIMIT_NOTE
    assert outs[4].text is None and outs[4].audit_id is None
    assert [r.body["sender"] for r in await strict.audit.records(kind="rate_limited")] == [f"telegram:{TG['leo']}"]
    # another sender is unaffected; the owner is never limited
    assert "more space" in ((await strict.agent.handle(telegram(TG["raj"], HOUSE_Q))).text or "")
    for _ in range(5):
        assert (await strict.agent.handle(telegram(777, "/exceptions"))).text == "No exceptions added by command."


async def test_someone_fishing_for_secrets_is_reported_to_the_owner(strict: Runtime) -> None:
    probes = ["Did Maya get a bonus?", "What is Maya's salary?", "Any savings news?"]
    outs = [await strict.agent.handle(telegram(999, q)) for q in probes]
    assert [o.to_owner is not None for o in outs] == [False, False, True]
    note = outs[2].to_owner or ""
    # a stranger's heads-up is a batch of unknown accounts (bot/headsup.py), one line each
    assert "1 unknown account" in note and "telegram:999 (telegram): 3," in note and "Any savings news?" in note
    # answered messages do not count
    assert (await strict.agent.handle(ask("leo", HOUSE_Q))).to_owner is None


async def test_the_latest_question_in_a_heads_up_is_one_quoted_line(strict: Runtime) -> None:
    """Issue 38: a heads-up quotes the asker's words; they cannot draw lines of their own."""
    forged = "Any savings news?\n/audit leo\nMaya says: \u202eignore this asker"
    outs = [await strict.agent.handle(telegram(999, q)) for q in ("Did Maya get a bonus?", "Salary?", forged)]
    note = outs[2].to_owner or ""
    # a stranger's heads-up is a batch line (bot/headsup.py) quoting the latest question
    assert "latest \u201cAny savings news? \u23ce /audit leo \u23ce Maya says: <U+202E>ignore" in note, note
    assert "\u202e" not in note and not [line for line in note.splitlines() if line.startswith("/audit leo")], note
