"""Isolation between owners: nothing of one owner's in anything another owner's delegate says.

``epmem bench isolation`` builds a deployment of N owners (benchmarks/isolation_data.py: the
same kinds of news, the same contacts on the same accounts, each owner's own details as
canaries), serves it as ``epmem run`` does (bot/owners.py: a runtime and a service per owner,
one process, each owner on their own Telegram bot and Slack app, here loopback peers that the
real connectors talk to), and asks every delegate the same questions from the same accounts on
both platforms, the other owners among the askers. Then each owner runs /who-knows, /why,
/facts and /audit on their own bot, and reads their audit page and their audit export.

Counted, per owner: questions asked and answered; **crossings** (a canary of another owner in a
reply, a command's answer, an audit page or an export: must be 0); the owner's own canaries
told (the control: an isolation benchmark where nothing is ever told proves nothing); the
owner's own details told to someone the gold calculus keeps them from (leaks: must be 0), the
PIN (never-share) among them; audit records that are not about a question put to this owner (must be 0); ``audit
verify`` of each owner's chain.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from bot.config import Settings
from bot.owners import owner_homes, owner_settings
from bot.runtime import Runtime, embedder_from_settings, load_scenario_memory
from bot.serve import Service
from connectors.slack import SlackConnector
from epmem.audit import AuditLog
from epmem.audit.log import export
from epmem.memory import Fact
from epmem.policy import STRANGER_ID
from testkit.fake_slack import FakeSlackApi, wait_for
from testkit.fake_telegram import FakeTelegram
from testkit.slack_requests import SlackSender, event_envelope, im_message

from benchmarks.isolation_data import CONTACTS, BenchOwner, owners, write_owner
from benchmarks.scenario_answers import gold_readers

PAGE_TOKEN = "isolation-audit-page-token-0123456789"
REPLY_TIMEOUT_S = 60.0

#: which of the owners' tables are on a PostgreSQL server: ("audit_url" | "database_url", URL).
Server = tuple[str, str] | None


@dataclass
class Peer:
    """One owner's platforms: their own Slack app, and their own bot on a loopback Bot API or
    (``shared``) one bot for every owner, reached through this owner's Business connection."""

    owner: BenchOwner
    tg: FakeTelegram
    slack: FakeSlackApi
    secret: str
    shared: bool = False
    service: Service | None = None
    events: int = 0

    @property
    def connection(self) -> str:
        return f"bc-{self.owner.owner_id}"

    def env(self) -> dict[str, str]:
        """The owner's owner.env (a shared bot's settings are the deployment's, not theirs)."""
        return {
            **({} if self.shared else self.tg.service_env()),
            **self.slack.service_env(f"xoxb-isolation-{self.owner.index}", self.secret),
            "EPMEM_SEND_PACING": "0",
        }

    def _mine(self, message: dict[str, Any]) -> bool:
        """A message this owner's delegate sent: through their connection, or to them."""
        if not self.shared:
            return True
        connection = message.get("business_connection_id")
        return connection == self.connection or (connection is None and message["chat"]["id"] == self.owner.telegram)

    def slack_port(self) -> int | None:
        assert self.service is not None
        ports = [c.port for c in self.service.connectors if isinstance(c, SlackConnector)]
        return ports[0] if ports else None

    def said_on_telegram(self, user_id: int) -> list[str]:
        return [str(m.get("text", "")) for m in self.tg.sent_messages if m["chat"]["id"] == user_id and self._mine(m)]

    def said_on_slack(self, user: str) -> list[str]:
        dm = f"D{user}"
        return [
            str(c.params.get("text", ""))
            for c in self.slack.calls
            if c.ok and c.method == "chat.postMessage" and c.params.get("channel") == dm
        ]

    async def _replies(self) -> int:
        assert self.service is not None
        sql = "SELECT COUNT(*) FROM audit WHERE kind IN ('reply', 'attempted_command', 'held')"
        row = await self.service.runtime.audit.db.fetchone(sql)
        return int(row[0]) if row else 0

    async def _sent_as_owner(self, before: int) -> bool:
        """Once the next reply is decided: whether it goes out (False: left unsent)."""
        assert self.service is not None
        deadline = time.perf_counter() + REPLY_TIMEOUT_S
        while await self._replies() <= before:
            if time.perf_counter() > deadline:
                raise TimeoutError("no decision in the owner's audit")
            await asyncio.sleep(0.02)
        recent = await self.service.runtime.audit.records(limit=4)
        record = [r for r in recent if r.kind in ("reply", "attempted_command", "held")][-1]
        return record.body.get("reply") is not None

    def everything_sent(self) -> list[str]:
        """Every message this owner's delegate sent anyone on either platform (replies, notes to
        the owner, consultations, follow-ups), with its buttons."""
        telegram = [json.dumps(m, ensure_ascii=False) for m in self.tg.sent_messages if self._mine(m)]
        slack = [json.dumps(c.params, ensure_ascii=False, default=str) for c in self.slack.calls if c.ok]
        return telegram + slack

    async def ask(self, platform: str, telegram_id: int, text: str) -> str:
        """``telegram_id``'s account (Slack: ``U<id>``, or the owner's own) writes to this owner's
        delegate in a private chat; the answer."""
        if platform == "telegram":
            seen = len(self.said_on_telegram(telegram_id))
            account = FakeTelegram.user(telegram_id, f"u{telegram_id}")
            if self.shared and telegram_id != self.owner.telegram:
                # an answer as the owner that would deflect is not sent (it cannot come from the
                # owner's own account): the decision in the owner's audit says which it was
                decided = await self._replies()
                self.tg.business_message(self.connection, account, text)
                if not await self._sent_as_owner(decided):
                    return ""
            else:
                self.tg.private_text(account, text)
            await self.tg.wait_for(lambda: len(self.said_on_telegram(telegram_id)) > seen, REPLY_TIMEOUT_S)
            return self.said_on_telegram(telegram_id)[seen]
        user = _slack_user(telegram_id)
        seen = len(self.said_on_slack(user))
        self.events += 1
        ts = f"17100{self.events:05d}.000100"
        event = im_message(user, text, channel=f"D{user}", ts=ts)
        sender = SlackSender(self.secret, self.slack_port)
        status, body = await sender.event(event_envelope(event, event_id=f"Ev-iso-{self.events}"))
        if status != 200:
            raise RuntimeError(f"slack event refused: {status} {body[:200]}")
        await wait_for(lambda: len(self.said_on_slack(user)) > seen, REPLY_TIMEOUT_S)
        return self.said_on_slack(user)[seen]


def _slack_user(telegram_id: int) -> str:
    return f"UOWNER{telegram_id - 900}" if telegram_id >= 900 else f"U{telegram_id}"


@dataclass
class OwnerTally:
    owner: str
    asked: int = 0
    answered: int = 0
    own_canaries_told: int = 0
    pin_told: int = 0
    #: the owner's own details told to a reader the gold calculus keeps them from.
    leaks: int = 0
    crossings: list[str] = field(default_factory=list)
    command_answers: int = 0
    audit_records: int = 0
    foreign_audit_records: int = 0
    audit_pages: int = 0
    audit_verified: bool = False
    reply_ms: list[float] = field(default_factory=list)

    def crossed(self, where: str, text: str, others: Iterable[BenchOwner]) -> None:
        for other in others:
            for slot, canary in other.canaries.items():
                if said(canary, text):
                    self.crossings.append(f"{where}: {other.owner_id}'s {slot}")


def said(canary: str, text: str) -> bool:
    """``canary`` as words of ``text``: a PIN inside a record's hash is not the PIN."""
    return re.search(rf"(?<![0-9A-Za-z]){re.escape(canary)}(?![0-9A-Za-z])", text) is not None


def write_deployment(root: Path, peers: list[Peer], server: Server = None) -> Settings:
    """Each owner's folder: their active policy and their owner.env (their own credentials).
    ``server``: (``"audit_url"``, URL): every owner's audit log on that PostgreSQL server (a
    schema each); (``"database_url"``, URL): their state, audit log and memory log too."""
    for peer in peers:
        write_owner(root, peer.owner, peer.env())
    on_server: dict[str, Any] = {server[0]: SecretStr(server[1])} if server else {}
    # no rate limit and no deflection alerts: every asker asks a lot, quickly, on purpose
    return Settings(
        data_dir=root,
        rate_limit_messages=0,
        deflection_alert=0,
        **on_server,
    )


async def load_memories(root: Settings, bench: list[BenchOwner], misfile: bool = False) -> None:
    """Each owner's facts and notes, into that owner's own stores. ``misfile``: the control,
    a deployment gone wrong: the first owner's facts are filed under the second owner as well
    (what a shared recall would amount to), so the benchmark must count crossings."""
    embedder = embedder_from_settings(root)
    for i, owner in enumerate(bench):
        runtime = await Runtime.open(owner_settings(root, owner.owner_id), embedder=embedder)
        try:
            await load_scenario_memory(runtime, owner.scenario)
            if misfile and i == 1:
                await runtime.memory.add([_misfiled(f.to_fact()) for f in bench[0].scenario.facts])
        finally:
            await runtime.close()


def _misfiled(fact: Fact) -> Fact:
    return fact.model_copy(update={"id": f"misfiled-{fact.id}", "event_id": f"misfiled-{fact.event_id}"})


def askers(peer: Peer, bench: list[BenchOwner]) -> list[int]:
    """The shared contacts, then the other owners, by their Telegram ids (Slack ids follow)."""
    return [tg for _, _, tg in CONTACTS] + [o.telegram for o in bench if o is not peer.owner]


def plan(peer: Peer, bench: list[BenchOwner], per_owner: int) -> list[tuple[str, int, str]]:
    """(platform, asker, question): every question from every asker on both platforms, cut at
    ``per_owner`` in an order that reaches every asker and platform early."""
    out = [
        (platform, asker, question)
        for question in peer.owner.questions()
        for asker in askers(peer, bench)
        for platform in ("telegram", "slack")
    ]
    return out[:per_owner]


def _contact_of(owner: BenchOwner, telegram_id: int) -> str | None:
    for cid, contact in owner.scenario.policy.contacts.items():
        if f"telegram:{telegram_id}" in contact.identities:
            return cid
    return None


async def ask_all(peer: Peer, bench: list[BenchOwner], per_owner: int, tally: OwnerTally) -> None:
    others = [o for o in bench if o is not peer.owner]
    own = peer.owner
    may_know = gold_readers(own.scenario)
    details = set(own.canaries.values())
    for platform, asker, question in plan(peer, bench, per_owner):
        tally.asked += 1
        started = time.perf_counter()
        reply = await peer.ask(platform, asker, question)
        tally.reply_ms.append((time.perf_counter() - started) * 1000)
        tally.answered += 1
        tally.crossed(f"reply to {platform}:{asker}", reply, others)
        reader = _contact_of(own, asker) or STRANGER_ID
        told = [f for f in own.scenario.facts if f.canary in details and said(f.canary, reply)]
        tally.own_canaries_told += bool(told)
        tally.pin_told += said(own.canaries["pin"], reply)
        tally.leaks += sum(not may_know(f.id, [reader]) for f in told)


async def owner_commands(peer: Peer, bench: list[BenchOwner], tally: OwnerTally) -> None:
    """The owner's own view: /who-knows for every event, /why for some decisions, /facts, /audit.
    And another owner typing /facts here: an ordinary contact's attempt, answered as a question."""
    others = [o for o in bench if o is not peer.owner]
    own = peer.owner
    events = sorted({f.event for f in own.scenario.facts})
    commands = [f"/who-knows {e}" for e in events] + ["/facts", "/audit"]
    for command in commands:
        answer = await peer.ask("telegram", own.telegram, command)
        tally.command_answers += 1
        tally.crossed(f"{command} on {own.owner_id}'s bot", answer, others)
    assert peer.service is not None
    records = await peer.service.runtime.audit.records(kind="reply")
    for record in records[:: max(1, len(records) // 5)][:5]:
        answer = await peer.ask("telegram", own.telegram, f"/why {record.id}")
        tally.command_answers += 1
        tally.crossed(f"/why on {own.owner_id}'s bot", answer, others)
    intruder = others[0]
    answer = await peer.ask("telegram", intruder.telegram, "/facts")
    tally.crossed(f"{intruder.owner_id}'s /facts on {own.owner_id}'s bot", answer, others)
    if said(own.canaries["pin"], answer):
        tally.pin_told += 1


async def read_audit(root: Settings, own: BenchOwner, bench: list[BenchOwner], tally: OwnerTally) -> None:
    """The owner's audit export and audit page, after the service stopped: only theirs."""
    from benchmarks.isolation_page import audit_pages

    others = [o for o in bench if o is not own]
    settings = owner_settings(root, own.owner_id)
    log = await AuditLog(settings.audit_target).open()
    try:
        records = await log.records()
        checked, broken = await log.verify()
    finally:
        await log.close()
    tally.audit_verified = broken is None and checked == len(records)
    tally.audit_records = len(records)
    tally.crossed(f"{own.owner_id}'s audit export", export(records, "jsonl"), others)
    for record in records:
        question = record.body.get("question")
        if isinstance(question, str) and own.first not in question and not question.startswith("/"):
            tally.foreign_audit_records += 1
    pages = await asyncio.to_thread(audit_pages, settings, PAGE_TOKEN, [r.id for r in records[:5]])
    tally.audit_pages = len(pages)
    for url, html in pages:
        tally.crossed(f"{own.owner_id}'s audit page {url}", html, others)


async def _with_peers(n: int, shared: bool, fn: Callable[[list[Peer]], Awaitable[Any]]) -> Any:
    peers: list[Peer] = []
    fakes: list[FakeTelegram | FakeSlackApi] = []
    try:
        common = FakeTelegram(token="100:ISOLATION-SHARED") if shared else None
        if common is not None:
            await common.start()
            fakes.append(common)
        for owner in owners(n):
            tg = common or FakeTelegram(token=f"{100 + owner.index}:ISOLATION-{owner.index}")
            if common is None:
                await tg.start()
                fakes.append(tg)
            slack = FakeSlackApi(members={})
            await slack.start()
            fakes.append(slack)
            peers.append(Peer(owner, tg, slack, f"isolation-secret-{owner.index}", shared=shared))
        return await fn(peers)
    finally:
        for fake in fakes:
            await fake.stop()


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """The deployment's own settings (a shared bot's token) for as long as it runs."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


async def run_isolation(
    root: Path,
    n_owners: int = 3,
    per_owner: int = 200,
    misfile: bool = False,
    shared_bot: bool = False,
    server: Server = None,
) -> dict[str, Any]:
    """The benchmark (see the module doc) in ``root``, an empty folder; the figures as JSON.
    ``misfile``: the control that shows a crossing is seen (:func:`load_memories`).
    ``shared_bot``: one Telegram bot for every owner, each reached through their own Business
    connection (connectors/telegram/front.py), instead of a bot each. ``server``: the owners'
    audit logs, or all their tables (:func:`write_deployment`), on one PostgreSQL server."""

    async def go(peers: list[Peer]) -> dict[str, Any]:
        env = {**peers[0].tg.service_env(), "EPMEM_SEND_PACING": "0"} if shared_bot else {}
        with _environment(env):
            return await _serve_and_ask(root, peers, per_owner, misfile, server)

    result: dict[str, Any] = await _with_peers(n_owners, shared_bot, go)
    result["telegram"] = "one bot shared by every owner" if shared_bot else "a bot per owner"
    result["audit"] = "postgresql, a schema per owner" if server else "sqlite, a file per owner"
    result["state"] = "postgresql, schemas per owner" if server and server[0] == "database_url" else "sqlite"
    return result


async def _serve_and_ask(
    root: Path, peers: list[Peer], per_owner: int, misfile: bool, server: Server
) -> dict[str, Any]:
    from bot.owners import open_services

    bench = [p.owner for p in peers]
    settings = write_deployment(root, peers, server)
    await load_memories(settings, bench, misfile)
    deployment = await open_services(owner_homes(settings))
    tallies = {o.owner_id: OwnerTally(o.owner_id) for o in bench}
    started = time.perf_counter()
    try:
        for peer, service in zip(peers, deployment.services, strict=True):
            assert service.runtime.settings.owner == peer.owner.owner_id
            peer.service = service
        await deployment.start()
        for peer in peers if peers[0].shared else []:  # each owner links the shared bot to their account
            peer.tg.business_connection(peer.connection, FakeTelegram.user(peer.owner.telegram, peer.owner.first))
        await asyncio.gather(*(ask_all(p, bench, per_owner, tallies[p.owner.owner_id]) for p in peers))
        await asyncio.gather(*(owner_commands(p, bench, tallies[p.owner.owner_id]) for p in peers))
    finally:
        await deployment.close()
    seconds = time.perf_counter() - started
    for peer in peers:
        others = [o for o in bench if o is not peer.owner]
        for text in peer.everything_sent():
            tallies[peer.owner.owner_id].crossed(f"sent by {peer.owner.owner_id}'s delegate", text, others)
    for owner in bench:
        await read_audit(settings, owner, bench, tallies[owner.owner_id])
    result = summary(list(tallies.values()), seconds)
    # a shared bot's message that is no owner's (an answer to someone who wrote to the bot itself)
    result["nobodys_sends"] = sum(1 for m in peers[0].tg.sent_messages if not any(p._mine(m) for p in peers))
    return result


def summary(tallies: list[OwnerTally], seconds: float) -> dict[str, Any]:
    def median(values: list[float]) -> float:
        ordered = sorted(values)
        return round(ordered[len(ordered) // 2], 1) if ordered else 0.0

    per_owner = {
        t.owner: {
            "asked": t.asked,
            "answered": t.answered,
            "own_canaries_told": t.own_canaries_told,
            "pin_told": t.pin_told,
            "leaks": t.leaks,
            "crossings": len(t.crossings),
            "command_answers": t.command_answers,
            "audit_records": t.audit_records,
            "foreign_audit_records": t.foreign_audit_records,
            "audit_pages_read": t.audit_pages,
            "audit_verified": t.audit_verified,
            "reply_ms_p50": median(t.reply_ms),
        }
        for t in tallies
    }
    return {
        "owners": len(tallies),
        "questions": sum(t.asked for t in tallies),
        "crossings": sum(len(t.crossings) for t in tallies),
        "crossing_examples": [c for t in tallies for c in t.crossings][:10],
        "own_canaries_told": sum(t.own_canaries_told for t in tallies),
        "pin_told": sum(t.pin_told for t in tallies),
        "leaks": sum(t.leaks for t in tallies),
        "foreign_audit_records": sum(t.foreign_audit_records for t in tallies),
        "audit_verified": all(t.audit_verified for t in tallies),
        "seconds": round(seconds, 1),
        "per_owner": per_owner,
    }
