"""Issue 37's end-to-end acceptance on Telegram and on Slack: heard it from you, through the
real connectors (PTB long-polling a loopback Bot API; signed requests into the real Bolt app).

Maya's chat with her sister Grace is imported with ``epmem ingest`` as a subprocess: a
Telegram Desktop export for the Telegram runs, a Slack export (a DM in team T1) for the Slack
runs, each account linked to Grace only through the policy's identities. In it Maya tells
Grace the plan for their dad's birthday weekend, and the cottage's door code and her PIN. The
plan is closed (nobody was told it) and undecided, but Grace heard it said:

1. Grace asks about the plan and is told it, and Maya is asked nothing;
2. Leo, who was not in that chat, gets the deflection, and Maya exactly one consultation;
3. in a group where Leo reads too, Grace's question gets nothing of it, nor does anything after;
4. the door code and the PIN are never told back to Grace, who heard them.

And in a live group the bot sits in (bot/live.py), who heard what a contact said there is the
platform's roster of every message of that conversation: not someone who joined half-way.

Each scenario is written once against the small driver of tests/e2e/test_consult_platforms.py
(extended to a group chat) and run on both platforms. 1-3 and the live group fail with heard it
from you off (``EPMEM_HEARD_IT=false``) at the step that says so; 4 holds either way (the codes'
category is never-share too), and checks that nobody was recorded as having heard them.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import pytest_asyncio

from bot.runtime import Runtime
from epmem.memory import Fact
from testkit.fake_slack import BOT_USER, FakeSlackApi, channel_message, event_envelope, member_event, mention
from testkit.fake_telegram import FakeTelegram
from testkit.house import OWNER_SLACK, OWNER_TG, SLACK, TEAM, grace_chat_export, house_runtime, write_policy
from tests.e2e.test_consult_platforms import SECRET, Note, SlackDriver, TelegramDriver, ask

#: its fixtures build data folders through imports (real models): more than the suite's 120 s on busy cores
pytestmark = pytest.mark.timeout(600)

REPO = Path(__file__).resolve().parents[2]
START = datetime(2026, 4, 20, 19, 5, tzinfo=UTC)
CHAT = [  # (from Grace?, text): Maya's private chat with her sister
    (True, "Are we still on for Dad's birthday weekend?"),
    (
        False,
        "Yes! For Dad's birthday weekend we drive down to Cornwall on Friday 12 June and stay at the Mousehole cottage.",
    ),
    (True, "Perfect, I'll bring the cake."),
    (False, "The cottage door code is 4471, don't lose it."),
    (True, "Got it. And which card do I use for the deposit?"),
    (False, "Use mine, my PIN is 7731."),
]
PLAN_Q = "What's the plan for Dad's birthday weekend?"
#: the words of the plan a reader would recognise (what only those who heard it may be told).
PLAN = "Mousehole"
SECRETS = ("4471", "7731")
GROUP_TG = -100777
GROUP_SLACK = "CFAMILY"


def slack_export(folder: Path) -> Path:
    """The same chat as a Slack workspace export: Maya's DM with Grace in team T1."""
    folder.mkdir()
    users = [
        {"id": uid, "team_id": TEAM, "name": name.split()[0].lower(), "real_name": name, "profile": {"real_name": name}}
        for uid, name in ((OWNER_SLACK, "Maya Chen"), (SLACK["grace"], "Grace Chen"))
    ]
    (folder / "users.json").write_text(json.dumps(users))
    (folder / "channels.json").write_text("[]")
    dm = f"D{SLACK['grace']}"
    (folder / "dms.json").write_text(
        json.dumps([{"id": dm, "created": 1700000000, "members": [OWNER_SLACK, SLACK["grace"]]}])
    )
    messages = [
        {
            "type": "message",
            "user": SLACK["grace"] if grace else OWNER_SLACK,
            "text": text,
            "ts": f"{(START + timedelta(minutes=3 * i)).timestamp():.0f}.000{i + 1}00",
        }
        for i, (grace, text) in enumerate(CHAT)
    ]
    (folder / dm).mkdir()
    (folder / dm / f"{START:%Y-%m-%d}.json").write_text(json.dumps(messages))
    return folder


@dataclass(frozen=True)
class Folders:
    """The house memory with Grace's chat imported: from Telegram and from Slack."""

    policy: Path
    telegram: Path
    slack: Path


def ingest(data: Path, policy: Path, export: Path) -> None:
    env = {**os.environ, "EPMEM_DATA_DIR": str(data), "EPMEM_POLICY": str(policy), "EPMEM_LOG_LEVEL": "WARNING"}
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "ingest", str(export)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> Folders:
    """Built once per module (each import is a subprocess that loads the models): each test
    works on its own copy."""
    root = tmp_path_factory.mktemp("heard")
    policy = write_policy(root / "policy.yaml")
    base = root / "house"

    async def house() -> None:
        runtime = await house_runtime(base, policy_file=policy)
        await runtime.close()

    asyncio.run(house())
    telegram, slack = root / "telegram", root / "slack"
    shutil.copytree(base, telegram)
    shutil.copytree(base, slack)
    ingest(telegram, policy, grace_chat_export(root / "result.json", CHAT, START, 900, minutes=3))
    ingest(slack, policy, slack_export(root / "slack-export"))
    return Folders(policy, telegram, slack)


class TelegramGroupDriver(TelegramDriver):
    """The consultation driver, and a Telegram supergroup where the bot is addressed by @name."""

    async def seen_in_group(self, who: str) -> None:
        """``who`` says hello in the group (not to the bot): the bot has seen them there."""
        self.tg.group_message(GROUP_TG, self.users[who], "hi all")

    async def write_in_group(self, who: str, text: str) -> None:
        self.tg.group_message(GROUP_TG, self.users[who], text, mention=True)

    async def join_group(self, who: str) -> None:
        self.tg.new_chat_members(GROUP_TG, [self.users[who]])

    async def go_on_in_group(self, who: str, text: str) -> None:
        """The conversation goes on: a group is one conversation on Telegram."""
        await self.write_in_group(who, text)

    def said_in_group(self) -> list[str]:
        return [m["text"] for m in self.tg.sent_messages if m["chat"]["id"] == GROUP_TG]

    def said_to_anyone(self) -> list[str]:
        """Everything the bot sent anyone but the owner."""
        return [m["text"] for m in self.tg.sent_messages if m["chat"]["id"] != OWNER_TG]


class SlackGroupDriver(SlackDriver):
    """The consultation driver, and a channel (Grace, Leo and the bot) where the bot is @-named."""

    thread = ""

    async def seen_in_group(self, who: str) -> None:
        assert self.users[who] in self.api.members[GROUP_SLACK]  # Slack lists a channel's members

    async def write_in_group(self, who: str, text: str) -> None:
        """An @-mention in the channel: it starts a thread, where the bot answers."""
        self.events += 1
        self.thread = f"17100{self.events:05d}.000200"
        event = mention(self.users[who], f"<@{BOT_USER}> {text}", channel=GROUP_SLACK, ts=self.thread)
        status, body = await self.sender.event(event_envelope(event, event_id=f"Ev-heard-{self.events}"))
        assert status == 200, body

    async def go_on_in_group(self, who: str, text: str) -> None:
        """The conversation goes on: a reply in the thread the bot answered (it follows it once
        its answer there went out: a poll, as Bolt acks before its listeners run)."""
        assert self.connector is not None
        threads = self.connector.threads
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20.0
        while not await threads.followed(GROUP_SLACK, self.thread):
            assert loop.time() < deadline, f"the bot does not follow thread {self.thread}"
            await asyncio.sleep(0.01)
        self.events += 1
        ts = f"17100{self.events:05d}.000200"
        event = channel_message(self.users[who], text, channel=GROUP_SLACK, ts=ts, thread_ts=self.thread)
        status, body = await self.sender.event(event_envelope(event, event_id=f"Ev-heard-{self.events}"))
        assert status == 200, body

    async def join_group(self, who: str) -> None:
        self.api.members[GROUP_SLACK].append(self.users[who])
        self.events += 1
        event = member_event("member_joined_channel", self.users[who], channel=GROUP_SLACK)
        status, body = await self.sender.event(event_envelope(event, event_id=f"Ev-heard-{self.events}"))
        assert status == 200, body

    def said_in_group(self) -> list[str]:
        return [str(p["text"]) for p in self.api.posts(GROUP_SLACK)]

    def said_to_anyone(self) -> list[str]:
        owner = (f"D{OWNER_SLACK}", OWNER_SLACK)
        return [
            str(c.params.get("text"))
            for c in self.api.calls
            if c.ok
            and c.method in ("chat.postMessage", "chat.postEphemeral")
            and c.params.get("channel") not in owner
            and c.params.get("user") not in owner
        ]


Driver = TelegramGroupDriver | SlackGroupDriver


@pytest_asyncio.fixture(params=["telegram", "slack"])
async def driver(
    request: pytest.FixtureRequest, folders: Folders, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> AsyncIterator[Driver]:
    """A platform's loopback peer and the driver for it (:func:`start` starts the service)."""
    d: Driver
    if request.param == "telegram":
        async with FakeTelegram() as tg:
            for name, value in tg.service_env(EPMEM_SEND_PACING="0").items():
                monkeypatch.setenv(name, value)
            d = TelegramGroupDriver(tg, folders.policy)
            try:
                yield d
            finally:
                await d.stop()
        return
    api = FakeSlackApi(members={GROUP_SLACK: [SLACK["grace"], SLACK["leo"], BOT_USER]})
    await api.start()
    for name, value in api.service_env("xoxb-heard", SECRET).items():
        monkeypatch.setenv(name, value)
    d = SlackGroupDriver(api, folders.policy)
    try:
        yield d
    finally:
        await d.stop()
        await api.stop()


async def start(d: Driver, folders: Folders, tmp_path: Path) -> Driver:
    """The service on a copy of the memory the platform's own export was imported into."""
    target = tmp_path / "data"
    shutil.copytree(folders.telegram if d.platform == "telegram" else folders.slack, target)
    await d.start(target)
    return d


@pytest_asyncio.fixture
async def started(driver: Driver, folders: Folders, tmp_path: Path) -> Driver:
    return await start(driver, folders, tmp_path)


# -------------------------------------------------------------------- shared scenario steps


async def fact_with(runtime: Runtime, word: str) -> Fact:
    [fact] = [f for f in await runtime.memory.all() if word in f.text]
    return fact


def consultation_notes(d: Driver) -> list[Note]:
    return [n for n in d.notes() if f"asked ({d.platform}):" in n.text]


async def in_group(d: Driver, who: str, text: str, *, go_on: bool = False) -> str:
    """``who`` asks the bot in the group (``go_on``: in the conversation of the last question);
    the bot's answer there."""
    seen = len(d.said_in_group())
    await (d.go_on_in_group if go_on else d.write_in_group)(who, text)
    await d.wait(lambda: len(d.said_in_group()) > seen)
    return d.said_in_group()[seen]


async def owner_notes_settled(d: Driver) -> list[Note]:
    """The owner's consultation notes once everything asked so far is answered: ``/consults``
    is answered after every earlier message, so a note still on its way has arrived."""
    seen = len(d.said_to("owner"))
    await d.write("owner", "/consults")
    await d.wait(lambda: len(d.said_to("owner")) > seen)
    return consultation_notes(d)


async def tap_and_wait(d: Driver, command: str, note: Note) -> None:
    """The owner taps a button of ``note``; until the bot has answered her."""
    seen = len(d.said_to("owner"))
    await d.tap("owner", command, note)
    await d.wait(lambda: len(d.said_to("owner")) > seen)


# -------------------------------------------------------------------- the acceptance tests


async def test_who_heard_the_plan_is_told_it_and_the_owner_is_asked_nothing(started: Driver) -> None:
    d = started
    plan = await fact_with(d.runtime, PLAN)
    # the import: closed, undecided, and heard by Grace (her Telegram or Slack account, by the policy)
    assert plan.closed and plan.undecided and plan.heard_by == ["grace"], plan
    reply = await ask(d, "grace", PLAN_Q)
    assert PLAN in reply, reply  # fails with EPMEM_HEARD_IT=false: the deflection
    assert await owner_notes_settled(d) == []
    assert d.runtime.owner.consultations is not None
    store = d.runtime.owner.consultations.store
    assert store is not None and await store.pending() == []
    [record] = await d.runtime.audit.records(kind="reply", contact="grace")
    assert record.body["platform"] == d.platform and plan.id in record.body["disclosed"]
    [candidate] = [c for c in record.body["candidates"] if c["fact"] == plan.id]
    assert f"heard it in {plan.heard_in}" in candidate["verdicts"]["grace"], candidate
    assert [(x.recipient, x.status) for x in await d.runtime.audit.who_knows(plan.id)] == [("grace", "told")]


async def test_who_was_not_there_is_deflected_and_the_owner_asked_once(started: Driver) -> None:
    d = started
    plan = await fact_with(d.runtime, PLAN)
    # she heard it: no consultation for her (with EPMEM_HEARD_IT=false, the deflection)
    assert PLAN in await ask(d, "grace", PLAN_Q)
    reply = await ask(d, "leo", PLAN_Q)
    assert PLAN not in reply and "let Maya Chen know you asked" in reply, reply
    await d.wait(lambda: bool(consultation_notes(d)))
    # one consultation in all (Leo's); with heard it off Grace's question would be a second one
    [note] = await owner_notes_settled(d)
    assert note.text.startswith(f"Leo Chen asked ({d.platform}):"), note.text
    assert f"{plan.id}: \u201c{plan.text}\u201d" in note.text, note.text
    assert d.runtime.owner.consultations is not None
    store = d.runtime.owner.consultations.store
    assert store is not None
    [c] = await store.pending()
    assert (c.contact, c.question, c.facts[0]) == ("leo", PLAN_Q, plan.id)
    assert [r.contact for r in await d.runtime.audit.records(kind="consultation")] == ["leo"]
    assert PLAN not in "\n".join(d.said_to("leo"))


@pytest.mark.parametrize("consult_groups", [False, True], ids=["group-consult-off", "group-consult-on"])
async def test_a_group_with_someone_who_was_not_there_gets_nothing_of_it(
    driver: Driver, folders: Folders, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, consult_groups: bool
) -> None:
    """Grace heard the plan; Leo, who reads the group too, did not: nothing of it is said there,
    now or later, whoever asks and whatever the owner is asked (``EPMEM_CONSULT_GROUPS``: off by
    default; on, the owner's "keep private" sends nothing after)."""
    monkeypatch.setenv("EPMEM_CONSULT_GROUPS", str(consult_groups).lower())
    d = await start(driver, folders, tmp_path)
    plan = await fact_with(d.runtime, PLAN)
    await d.seen_in_group("leo")
    reply = await in_group(d, "grace", PLAN_Q)
    assert PLAN not in reply, reply
    [record] = await d.runtime.audit.records(kind="reply", contact="grace")
    assert record.body["chat_kind"] == "group" and sorted(record.body["audience"]) == ["grace", "leo"]
    assert plan.id not in record.body["disclosed"]
    # what Leo's reading withheld, Grace alone is told (fails with EPMEM_HEARD_IT=false)
    assert PLAN in await ask(d, "grace", PLAN_Q)
    # the conversation in the group goes on, from both of them
    for who, question in (("grace", "Where are we staying in Cornwall?"), ("leo", PLAN_Q), ("grace", PLAN_Q)):
        assert PLAN not in await in_group(d, who, question)
    notes = await owner_notes_settled(d)
    if not consult_groups:
        assert notes == []
    else:  # Maya is asked about Grace's question, told that Leo reads the group; she keeps it private
        assert notes[0].text.startswith(f"Grace Chen asked ({d.platform}):"), notes[0].text
        assert "read also by Leo Chen" in notes[0].text and plan.id in notes[0].text, notes[0].text
        for note in notes:
            await tap_and_wait(d, note.buttons["\U0001f512 Keep private"], note)
        assert PLAN not in await in_group(d, "grace", PLAN_Q)
        await owner_notes_settled(d)
    assert await d.runtime.audit.records(kind="followup") == []
    assert all(PLAN not in text for text in d.said_in_group()), d.said_in_group()
    assert all(PLAN not in text for text in d.said_to("leo")), d.said_to("leo")
    assert [x.recipient for x in await d.runtime.audit.who_knows(plan.id)] == ["grace"]


async def test_a_password_said_in_a_direct_chat_is_never_told_back(started: Driver) -> None:
    d = started
    for secret in SECRETS:
        fact = await fact_with(d.runtime, secret)
        assert fact.heard_by == [] and fact.heard_in is None, fact
    plan = await fact_with(d.runtime, PLAN)
    assert plan.heard_by == ["grace"]  # she heard it all, and may be told the plan
    for question in (
        "What's the door code for the cottage?",
        "What's the code for the Mousehole cottage door?",
        "What is Maya's PIN?",
        "Which PIN do I use for the deposit?",
        "What did Maya tell me about the cottage?",
    ):
        await ask(d, "grace", question)
    said = "\n".join(d.said_to_anyone())
    assert not any(secret in said for secret in SECRETS), said
    for secret in SECRETS:
        assert await d.runtime.audit.who_knows((await fact_with(d.runtime, secret)).id) == []


async def test_a_live_group_records_who_read_every_message_as_who_heard_it(started: Driver) -> None:
    """What a contact tells the bot in a group it sits in (bot/live.py) was heard by the
    platform's roster of every message of the conversation: Grace and Leo, who read all of it,
    but not Ben, who joined between the two messages (fails with bot/serve.py passing no
    readers: then only Grace, the speaker, heard it)."""
    d = started
    await d.seen_in_group("leo")
    await in_group(d, "grace", "My new job in Lisbon starts on the first of June.")
    await d.join_group("ben")
    await in_group(d, "grace", "And we found a flat in Alfama with a view of the river.", go_on=True)
    sessions = await d.runtime.live.flush()
    assert sessions and all(s.present == ["grace", "leo"] for s in sessions), [s.present for s in sessions]
    ids = {s.id for s in sessions}
    facts = [f for f in await d.runtime.memory.all() if f.session_id in ids]
    lisbon = next(f for f in facts if "Lisbon" in f.text)
    assert lisbon.closed and lisbon.undecided and lisbon.heard_by == ["grace", "leo"], lisbon
    assert lisbon.heard_in is not None and lisbon.heard_in.startswith("the group chat of "), lisbon.heard_in
    assert all("ben" not in f.heard_by for f in facts), facts
    # told back to Leo, who read it (fails with EPMEM_HEARD_IT=false); not to Ben, who joined after
    question = "When does Grace start her new job in Lisbon?"
    assert "June" in await ask(d, "leo", question)
    assert "June" not in await ask(d, "ben", question)


@pytest.mark.parametrize("driver", ["telegram"], indirect=True)
async def test_a_member_who_left_unseen_is_not_taken_for_one_who_heard_it(started: Driver) -> None:
    d = started
    assert isinstance(d, TelegramGroupDriver)
    await d.seen_in_group("leo")
    await d.seen_in_group("ben")
    # Ben leaves; the bot gets no service message (a large group hides them), and Telegram
    # cannot say now who is in the chat: the count says three (Grace, Leo, the bot)
    d.tg.member_counts[GROUP_TG] = 3
    d.tg.fail("getChatMember", 400, "Bad Request: member not found", times=10)
    await in_group(d, "grace", "My new job in Lisbon starts on the first of June.")
    [session] = await d.runtime.live.flush()
    lisbon = await fact_with(d.runtime, "Lisbon")
    assert lisbon.session_id == session.id and lisbon.heard_by  # Grace and Leo heard it
    assert "ben" not in lisbon.heard_by, lisbon.heard_by  # fails: ['ben', 'grace', 'leo']
    assert "June" not in await ask(d, "ben", "When does Grace start her new job in Lisbon?")
