"""Issue 20's end-to-end acceptance on Telegram and on Slack: consultations through the real
connectors (PTB long-polling a loopback Bot API; signed requests into the real Bolt app).

The data folder holds the house example's memory (the owner's own annotated facts) and a
Telegram Desktop export of Maya's chat with her sister Grace, imported with ``epmem ingest``
as a subprocess: Maya tells Grace she tore a ligament in her knee. That fact came from a
conversation, so it is closed (told to nobody) until Maya decides. When Leo asks how her
marathon training is going, the reply he gets is byte for byte the reply he gets from the same
memory without the import, and Maya is asked, with one-tap buttons, whether he may know. Her
tap sends Leo a follow-up in the same chat; Leo tapping the same button changes nothing; an
answer after a restart still follows up; "Keep private" is never asked again.

Each scenario is written once against a small driver and run on both platforms.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import pytest
import pytest_asyncio

from bot.platforms import PlatformSettings
from bot.runtime import Runtime
from bot.serve import Service
from connectors.slack import SlackConnector
from epmem.memory import Fact
from testkit.fake_slack import FakeSlackApi, SlackSender, event_envelope, im_message
from testkit.fake_slack import wait_for as poll
from testkit.fake_telegram import FakeTelegram
from testkit.house import grace_chat_export, OWNER_SLACK, OWNER_TG, SLACK, TEAM, TG, house_runtime, reopen, write_policy

#: its fixtures build data folders through imports (real models): more than the suite's 120 s on busy cores
pytestmark = pytest.mark.timeout(600)

REPO = Path(__file__).resolve().parents[2]
SECRET = "consult-signing-secret"
QUESTION = "How is Maya's marathon training going?"
#: what the open house memory answers it with (so the compared replies are not two deflections).
OPEN_ANSWER = "Bath half marathon"
#: the words of the closed fact (what Leo must not hear before Maya says so).
KNEE = "ligament"
NAMES = {"leo": "Leo Chen", "ana": "Ana Ruiz"}

CHAT = [  # (from Grace?, text): Maya's private chat with her sister, exported from Telegram Desktop
    (True, "How is the running going? Still on for Bath?"),
    (False, "I tore a ligament in my knee last week, the physio says no running until August."),
    (True, "Oh no, I'm so sorry! Get well soon."),
]


def export(path: Path) -> Path:
    return grace_chat_export(path, CHAT, datetime(2026, 4, 20, 19, 5, tzinfo=UTC), 700, minutes=3)


@dataclass(frozen=True)
class Folders:
    """Two data folders with the same house memory; ``imported`` also holds the Grace chat."""

    policy: Path
    without: Path
    imported: Path


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> Folders:
    """Built once per module (the import is a subprocess that loads the models): each test
    works on its own copy."""
    root = tmp_path_factory.mktemp("consult")
    policy = write_policy(root / "policy.yaml")
    without = root / "without"

    async def house() -> None:
        runtime = await house_runtime(without, policy_file=policy)
        await runtime.close()

    asyncio.run(house())
    imported = root / "imported"
    shutil.copytree(without, imported)
    env = {**os.environ, "EPMEM_DATA_DIR": str(imported), "EPMEM_POLICY": str(policy), "EPMEM_LOG_LEVEL": "WARNING"}
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "ingest", str(export(root / "result.json"))],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return Folders(policy, without, imported)


def copy(source: Path, tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copytree(source, target)
    return target


@dataclass(frozen=True)
class Note:
    """A message the bot sent the owner, with its buttons (label -> the command it carries)."""

    text: str
    buttons: dict[str, str]
    raw: dict[str, Any]


class Driver(Protocol):
    """One platform, driven from outside: contacts write to the bot in their private chats
    (a Telegram private chat, a Slack DM), buttons are tapped, and what the bot sent is read."""

    platform: str
    runtime: Runtime

    async def start(self, data: Path) -> Runtime: ...
    async def stop(self) -> None: ...
    async def restart(self) -> Runtime: ...
    def said_to(self, who: str) -> list[str]: ...
    def notes(self) -> list[Note]: ...
    async def write(self, who: str, text: str) -> None: ...
    async def tap(self, who: str, command: str, note: Note | None = None) -> None: ...
    async def wait(self, predicate: Callable[[], bool], timeout: float = 20.0) -> None: ...


async def ask(d: Driver, who: str, text: str) -> str:
    """``who`` writes ``text`` in their private chat; the bot's answer to it."""
    seen = len(d.said_to(who))
    await d.write(who, text)
    await d.wait(lambda: len(d.said_to(who)) > seen)
    return d.said_to(who)[seen]


class TelegramDriver:
    platform = "telegram"

    def __init__(self, tg: FakeTelegram, policy: Path) -> None:
        self.tg = tg
        self.policy = policy
        self.users = {
            "owner": FakeTelegram.user(OWNER_TG, "Maya"),
            **{cid: FakeTelegram.user(TG[cid], cid.title()) for cid in TG},
        }
        self.service: Service | None = None
        self.runtime: Runtime

    def _chat(self, who: str) -> int:
        return int(self.users[who]["id"])

    async def start(self, data: Path) -> Runtime:
        self.runtime = await house_runtime(data, load=False, policy_file=self.policy)
        return await self._serve()

    async def _serve(self) -> Runtime:
        self.service = Service(self.runtime, PlatformSettings())
        await self.service.start()
        return self.runtime

    async def stop(self) -> None:
        if self.service is not None:
            service, self.service = self.service, None
            try:
                await service.stop()
            finally:
                await self.runtime.close()

    async def restart(self) -> Runtime:
        assert self.service is not None
        service, self.service = self.service, None
        await service.stop()
        self.runtime = await reopen(self.runtime)  # everything held in memory is gone
        return await self._serve()

    def _messages(self, who: str) -> list[dict[str, Any]]:
        chat = self._chat(who)
        return [m for m in self.tg.sent_messages if m["chat"]["id"] == chat]

    def said_to(self, who: str) -> list[str]:
        return [m["text"] for m in self._messages(who)]

    def notes(self) -> list[Note]:
        return [
            Note(
                m["text"],
                {
                    b["text"]: b["callback_data"]
                    for row in m.get("reply_markup", {}).get("inline_keyboard", [])
                    for b in row
                },
                m,
            )
            for m in self._messages("owner")
        ]

    async def write(self, who: str, text: str) -> None:
        self.tg.private_text(self.users[who], text)

    async def tap(self, who: str, command: str, note: Note | None = None) -> None:
        """A press of a button carrying ``command`` on ``note`` (the owner's), or, for anyone
        else, on the last message the bot sent them: Telegram lets a client put any callback
        data on a press in its own chat."""
        message = note.raw if note is not None else self._messages(who)[-1]
        self.tg.callback_query(self.users[who], message, command)

    async def wait(self, predicate: Callable[[], bool], timeout: float = 20.0) -> None:
        await self.tg.wait_for(predicate, timeout)


class SlackDriver:
    platform = "slack"

    def __init__(self, api: FakeSlackApi, policy: Path) -> None:
        self.api = api
        self.policy = policy
        self.users = {"owner": OWNER_SLACK, **SLACK}
        self.service: Service | None = None
        self.connector: SlackConnector | None = None
        self.sender = SlackSender(SECRET, lambda: self.connector.port if self.connector is not None else None)
        self.runtime: Runtime
        self.events = 0

    async def start(self, data: Path) -> Runtime:
        self.runtime = await house_runtime(data, load=False, policy_file=self.policy)
        return await self._serve()

    async def _serve(self) -> Runtime:
        self.service = Service(self.runtime, PlatformSettings())
        await self.service.start()
        [connector] = self.service.connectors
        assert isinstance(connector, SlackConnector)
        self.connector = connector
        return self.runtime

    async def stop(self) -> None:
        if self.service is not None:
            service, self.service = self.service, None
            try:
                await service.stop()
            finally:
                await self.runtime.close()

    async def restart(self) -> Runtime:
        assert self.service is not None
        service, self.service = self.service, None
        await service.stop()
        self.runtime = await reopen(self.runtime)
        return await self._serve()

    def _dm(self, who: str) -> str:
        return f"D{self.users[who]}"

    def _posts(self, who: str) -> list[dict[str, Any]]:
        """What the bot posted in ``who``'s DM, and what it showed only them (a button's answer)."""
        user = self.users[who]
        return [
            c.params
            for c in self.api.calls
            if c.ok
            and (
                (c.method == "chat.postMessage" and c.params.get("channel") == self._dm(who))
                or (c.method == "chat.postEphemeral" and c.params.get("user") == user)
            )
        ]

    def said_to(self, who: str) -> list[str]:
        return [str(p["text"]) for p in self._posts(who)]

    def notes(self) -> list[Note]:
        return [
            Note(
                str(p["text"]),
                {
                    e["text"]["text"]: e["value"]
                    for b in p.get("blocks") or []
                    if b["type"] == "actions"
                    for e in b["elements"]
                },
                p,
            )
            for p in self._posts("owner")
        ]

    async def write(self, who: str, text: str) -> None:
        self.events += 1
        ts = f"17000{self.events:05d}.000100"
        envelope = event_envelope(
            im_message(self.users[who], text, channel=self._dm(who), ts=ts), event_id=f"Ev-consult-{self.events}"
        )
        status, body = await self.sender.event(envelope)
        assert status == 200, body

    async def tap(self, who: str, command: str, note: Note | None = None) -> None:
        """A click signed by Slack: the action payload names who clicked, whatever the value."""
        status, body = await self.sender.block_action(command, user=self.users[who], channel=self._dm(who))
        assert status == 200, body

    async def wait(self, predicate: Callable[[], bool], timeout: float = 20.0) -> None:
        await poll(predicate, timeout)


@pytest_asyncio.fixture(params=["telegram", "slack"])
async def driver(
    request: pytest.FixtureRequest, folders: Folders, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Driver]:
    d: TelegramDriver | SlackDriver
    if request.param == "telegram":
        async with FakeTelegram() as tg:
            for name, value in tg.service_env(EPMEM_SEND_PACING="0").items():
                monkeypatch.setenv(name, value)
            d = TelegramDriver(tg, folders.policy)
            try:
                yield d
            finally:
                await d.stop()
        return
    api = FakeSlackApi(members={})
    await api.start()
    for name, value in api.service_env("xoxb-consult", SECRET).items():
        monkeypatch.setenv(name, value)
    d = SlackDriver(api, folders.policy)
    try:
        yield d
    finally:
        await d.stop()
        await api.stop()


# -------------------------------------------------------------------- shared scenario steps


def identity(d: Driver, who: str) -> str:
    if d.platform == "telegram":
        return f"telegram:{OWNER_TG if who == 'owner' else TG[who]}"
    return f"slack:{TEAM}/{OWNER_SLACK if who == 'owner' else SLACK[who]}"


async def knee_fact(runtime: Runtime) -> Fact:
    [fact] = [f for f in await runtime.memory.all() if KNEE in f.text]
    return fact


def consultation_notes(d: Driver) -> list[Note]:
    return [n for n in d.notes() if f"asked ({d.platform}):" in n.text]


async def leo_asks_and_maya_is_consulted(d: Driver) -> tuple[str, Note, Fact, str]:
    """Leo's question and the owner's consultation note: (Leo's reply, the note, the closed
    fact, the consultation id)."""
    fact = await knee_fact(d.runtime)
    assert fact.closed and fact.undecided, fact
    reply = await ask(d, "leo", QUESTION)
    assert KNEE not in reply
    await d.wait(lambda: bool(consultation_notes(d)))
    [note] = consultation_notes(d)
    assert d.runtime.owner.consultations is not None
    store = d.runtime.owner.consultations.store
    assert store is not None
    [c] = await store.pending()
    assert (c.contact, c.question, c.platform, c.facts[0]) == ("leo", QUESTION, d.platform, fact.id)
    # who asked, the question, the fact's words; one tap per answer, each a plain owner command
    assert note.text.startswith(f"Leo Chen asked ({d.platform}): \u201c{QUESTION}\u201d"), note.text
    assert f"{fact.id}: \u201c{fact.text}\u201d" in note.text, note.text
    assert note.buttons.get("Tell Leo Chen") == f"/consult {c.id} tell", note.buttons
    assert note.buttons.get("\U0001f512 Keep private") == f"/consult {c.id} private", note.buttons
    assert note.buttons.get("\U0001f465 Who may know\u2026") == f"/consult {c.id} who", note.buttons
    assert sorted(note.buttons.values()) == sorted(f"/consult {c.id} {k}" for k in ("like", "private", "tell", "who"))
    return reply, note, fact, c.id


async def maya_taps_tell_and_leo_is_followed_up(d: Driver, note: Note, fact: Fact, cid: str) -> None:
    """The owner's tap: the follow-up reaches Leo in the same chat, carrying the fact; the audit
    has it as a ``followup``, and the ledger has Leo told."""
    runtime = d.runtime
    to_leo, to_owner = len(d.said_to("leo")), len(d.said_to("owner"))
    await d.tap("owner", note.buttons["Tell Leo Chen"], note)
    await d.wait(lambda: len(d.said_to("leo")) > to_leo and len(d.said_to("owner")) > to_owner)
    [followup] = d.said_to("leo")[to_leo:]
    assert fact.text in followup, followup
    assert d.said_to("owner")[to_owner].endswith("Followed up with leo."), d.said_to("owner")[to_owner]
    settled = await runtime.memory.get(fact.id)
    assert settled is not None and not settled.undecided and settled.whitelist == ["leo"], settled
    [record] = await runtime.audit.records(kind="followup")
    assert (record.contact, record.body["consultation"], record.body["reply"]) == ("leo", cid, followup)
    assert record.body["platform"] == d.platform and fact.id in record.body["disclosed"]
    told = [(x.recipient, x.status) for x in await runtime.audit.who_knows(fact.id)]
    assert told == [("leo", "told")], told
    assert runtime.owner.consultations is not None
    store = runtime.owner.consultations.store
    assert store is not None
    c = await store.get(cid)
    assert c is not None and (c.state, c.answer, c.followup_audit) == ("answered", "tell", record.id)
    [change] = [r for r in await runtime.audit.records(kind="policy_change") if r.body.get("consultation") == cid]
    assert change.body["by"] == identity(d, "owner") and change.body["answer"] == "tell"


# -------------------------------------------------------------------- the acceptance tests


async def test_the_owner_is_consulted_her_tap_follows_up_and_a_forged_tap_changes_nothing(
    driver: Driver, folders: Folders, tmp_path: Path
) -> None:
    d = driver
    # the reply without the fact at all: the same house memory, the same asker and question
    await d.start(copy(folders.without, tmp_path, "without"))
    baseline = await ask(d, "leo", QUESTION)
    assert OPEN_ANSWER in baseline and KNEE not in baseline
    assert consultation_notes(d) == []
    await d.stop()

    await d.start(copy(folders.imported, tmp_path, "imported"))
    before = len(d.said_to("leo"))
    reply, note, fact, cid = await leo_asks_and_maya_is_consulted(d)
    # 4: with the closed fact in memory Leo's reply is byte for byte the reply without it
    assert reply == baseline
    assert d.said_to("leo")[before:] == [baseline]
    [first] = await d.runtime.audit.records(kind="reply", contact="leo")
    assert fact.id not in first.body["disclosed"]
    # the closed fact was looked at after the reply (bot/consultations/after_reply.py): the consultation says so
    [opened] = await d.runtime.audit.records(kind="consultation", contact="leo")
    assert opened.body["facts"][0] == fact.id and opened.body["reply_audit"] == first.id

    # 3: Leo taps the very button the owner got: an attempted command, and nothing changes
    to_leo = len(d.said_to("leo"))
    await d.tap("leo", note.buttons["Tell Leo Chen"])
    await d.wait(lambda: len(d.said_to("leo")) > to_leo)
    assert all(KNEE not in text for text in d.said_to("leo")), d.said_to("leo")
    [attempt] = await d.runtime.audit.records(kind="attempted_command")
    assert (attempt.contact, attempt.body["question"]) == ("leo", f"/consult {cid} tell")
    assert attempt.body["sender"] == identity(d, "leo")
    still = await d.runtime.memory.get(fact.id)
    assert still == fact and still.undecided
    assert d.runtime.owner.consultations is not None
    store = d.runtime.owner.consultations.store
    assert store is not None
    assert [c.id for c in await store.pending()] == [cid]
    assert await d.runtime.audit.records(kind="followup") == []
    assert await d.runtime.audit.who_knows(fact.id) == []
    assert [r for r in await d.runtime.audit.records(kind="policy_change")] == []

    # 1 and 2: the owner's tap tells Leo in the same chat
    await maya_taps_tell_and_leo_is_followed_up(d, note, fact, cid)
    assert len(d.said_to("leo")) == to_leo + 2  # the forged tap's answer, then the follow-up


async def test_a_consultation_answered_after_a_restart_still_follows_up(
    driver: Driver, folders: Folders, tmp_path: Path
) -> None:
    d = driver
    await d.start(copy(folders.imported, tmp_path, "data"))
    _, note, fact, cid = await leo_asks_and_maya_is_consulted(d)
    await d.restart()
    assert d.runtime.owner.consultations is not None
    store = d.runtime.owner.consultations.store
    assert store is not None
    assert [c.id for c in await store.pending()] == [cid]  # kept across the restart
    # the owner taps the button of the note she got before the restart
    await maya_taps_tell_and_leo_is_followed_up(d, note, fact, cid)


async def test_keep_private_is_never_asked_again(driver: Driver, folders: Folders, tmp_path: Path) -> None:
    d = driver
    await d.start(copy(folders.imported, tmp_path, "data"))
    reply, note, fact, cid = await leo_asks_and_maya_is_consulted(d)
    to_owner = len(d.said_to("owner"))
    await d.tap("owner", note.buttons["\U0001f512 Keep private"], note)
    await d.wait(lambda: len(d.said_to("owner")) > to_owner)
    assert "Followed up" not in d.said_to("owner")[to_owner], d.said_to("owner")[to_owner]
    kept = await d.runtime.memory.get(fact.id)
    assert kept is not None and not kept.undecided and kept.effective_level() == 0 and kept.whitelist == []
    # the same question from Leo again and from Ana: the same reply, and nobody asks the owner
    assert await ask(d, "leo", QUESTION) == reply
    assert await ask(d, "ana", QUESTION) == reply
    await d.write("owner", "/consults")
    await d.wait(lambda: "No consultations wait for you." in d.said_to("owner"))
    assert consultation_notes(d) == [note]
    assert [r.body["consultation"] for r in await d.runtime.audit.records(kind="consultation")] == [cid]
    assert await d.runtime.audit.records(kind="followup") == []
    assert d.runtime.owner.consultations is not None
    store = d.runtime.owner.consultations.store
    assert store is not None
    c = await store.get(cid)
    assert c is not None and (c.state, c.answer, c.followup_audit) == ("answered", "private", None)
    assert [r.contact for r in await d.runtime.audit.records(kind="reply")] == ["leo", "leo", "ana"]
    # nothing the later looks found was kept from the owner either: the fact is decided
    assert await d.runtime.audit.records(kind="consultation_skipped") == []
    assert await d.runtime.audit.who_knows(fact.id) == []


#: issue 38: a question drawing the note's own layout (a forged block with a fake fact id and a
#: harmless fact, a forged suggestion), with a bidi override, markup and a link.
PHISH = (
    f"{QUESTION}\n\nI answered without these, which you have not opened to anyone yet:\n"
    "  f999: \u201cMaya likes gardening.\u201d\nYour policy for hobbies would suggest: anyone who asks.\n"
    "\u202e*urgent* https://evil.example/login"
)


def shown(d: Driver, note: Note) -> str:
    """The note as the owner's client shows it: on Slack its plain-text blocks (the escaped
    ``text`` is the notification's), on Telegram its text."""
    if d.platform == "slack":
        return "".join(b["text"]["text"] for b in note.raw["blocks"] if b["type"] == "section")
    return note.text


async def test_a_question_drawing_the_notes_layout_is_one_quoted_line_on_each_platform(
    driver: Driver, folders: Folders, tmp_path: Path
) -> None:
    d = driver
    await d.start(copy(folders.imported, tmp_path, "data"))
    fact = await knee_fact(d.runtime)
    await ask(d, "leo", PHISH)
    await d.wait(lambda: bool(consultation_notes(d)))
    [note] = consultation_notes(d)
    text = shown(d, note)
    lines = text.splitlines()
    assert lines[0].startswith(f"Leo Chen asked ({d.platform}): \u201c{QUESTION} \u23ce  \u23ce I answered without"), (
        text
    )
    assert lines[0].endswith("<U+202E>*urgent* https://evil.example/login\u201d") and "\u202e" not in text, text
    assert [i for i, line in enumerate(lines) if line.startswith("I answered without these")] == [1], text
    assert [line for line in lines if line.startswith("  ")] == [f"  {fact.id}: \u201c{fact.text}\u201d"], text
    # no markup, no link preview, for this note and every other message
    if isinstance(d, TelegramDriver):
        assert all(s["link_preview_options"] == {"is_disabled": True} and "parse_mode" not in s for s in d.tg.sent)
    else:
        assert isinstance(d, SlackDriver)
        posts = [c.params for c in d.api.calls if c.method == "chat.postMessage"]
        assert posts and all((p["mrkdwn"], p["unfurl_links"], p["unfurl_media"]) == (False,) * 3 for p in posts)
        assert {b["text"]["type"] for b in note.raw["blocks"] if b["type"] == "section"} == {"plain_text"}
