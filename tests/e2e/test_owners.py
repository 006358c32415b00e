"""Several owners in one deployment (bot/owners.py), end to end: the isolation benchmark on both
platforms' loopback peers (benchmarks/isolation.py), its control, and ``epmem run`` serving two
owners from one process, each on their own Telegram bot."""

from __future__ import annotations

import asyncio
from collections.abc import Sized
import functools
import os
from pathlib import Path

import pytest

from benchmarks.isolation import load_memories, run_isolation
from benchmarks.isolation_data import owners, write_owner
from benchmarks.run_latency import ask, bot_process, wait_polling
from bot.config import Settings
from bot.owners import open_services, owner_homes
from connectors.slack import SlackConnector
from testkit.fake_slack import FakeSlackApi, InstallBrowser, SlackSender, event_envelope, tokens_revoked
from testkit.fake_slack import wait_for as poll
from testkit.fake_telegram import FakeTelegram
from testkit.postgres import EmbeddedPostgres

#: real models and several runtimes: more than the suite's 120 s on busy cores
pytestmark = pytest.mark.timeout(600)


def more_than(items: Sized, n: int) -> bool:
    return len(items) > n


def files_with(folder: Path, needle: bytes) -> list[str]:
    """The files under ``folder`` holding ``needle`` (os.walk: the store compacts folders away as we look)."""
    found = []
    for top, _, names in os.walk(folder):
        for name in names:
            try:
                if needle in (Path(top) / name).read_bytes():
                    found.append(name)
            except FileNotFoundError:
                continue
    return found


@pytest.mark.parametrize("shared_bot", [False, True], ids=["a-bot-each", "one-shared-bot"])
async def test_no_owner_s_detail_reaches_another_owner_s_readers(tmp_path: Path, shared_bot: bool) -> None:
    """3 owners x 24 questions (every shared contact and the other owners asking, on Telegram
    and on Slack), then each owner's /who-knows, /why, /facts, /audit, audit page and export;
    on Telegram a bot per owner, or one bot every owner shares through their Business connection."""
    result = await run_isolation(tmp_path, n_owners=3, per_owner=24, shared_bot=shared_bot)
    assert result["nobodys_sends"] == 0
    assert result["crossings"] == 0, result["crossing_examples"]
    assert result["questions"] == 72
    assert all(o["answered"] == o["asked"] == 24 for o in result["per_owner"].values())
    assert result["leaks"] == 0 and result["pin_told"] == 0
    assert result["foreign_audit_records"] == 0 and result["audit_verified"]
    # the control: each delegate did tell its own owner's details to those who may know them
    assert all(o["own_canaries_told"] > 0 for o in result["per_owner"].values())
    assert all(o["audit_pages_read"] >= 3 and o["command_answers"] >= 10 for o in result["per_owner"].values())


async def test_the_benchmark_sees_a_misfiled_fact(tmp_path: Path) -> None:
    """Its own control: with the first owner's facts filed under the second as well, what the
    second owner's delegate says and lists carries the first owner's details."""
    result = await run_isolation(tmp_path, n_owners=2, per_owner=12, misfile=True)
    assert result["crossings"] > 0
    assert all(c.startswith(("reply", "/facts", "sent by", "/who", "blake")) for c in result["crossing_examples"])


async def test_epmem_run_serves_each_owner_on_their_own_bot(tmp_path: Path) -> None:
    bench = owners(2)
    root = tmp_path / "data"
    async with FakeTelegram(token="101:OWNER-ONE") as one, FakeTelegram(token="102:OWNER-TWO") as two:
        for owner, fake in zip(bench, (one, two), strict=True):
            write_owner(root, owner, fake.service_env(EPMEM_TELEGRAM_POLL_TIMEOUT="10"))
        await load_memories(Settings(data_dir=root), bench)
        async with bot_process(None, {"EPMEM_DATA_DIR": str(root)}) as bot:
            await wait_polling(one, bot, timeout=120)
            await wait_polling(two, bot, timeout=60)
            sam = 201  # the same account writes to both owners' bots; level 1 for Avery, 2 for Blake
            _, to_avery = await ask(one, sam, "Where is the house Avery made an offer on?", timeout=30)
            _, to_blake = await ask(two, sam, "Where is the house Blake made an offer on?", timeout=30)
            code, _ = await bot.terminate()
    assert code == 0, "\n".join(bot.lines[-20:])
    avery, blake = bench
    assert avery.canaries["street"] in to_avery and blake.canaries["street"] not in to_avery
    assert blake.canaries["street"] in to_blake and avery.canaries["street"] not in to_blake
    assert "stopped (2 owners)" in "\n".join(bot.lines)
    text = "\n".join(bot.lines)
    assert one.token not in text and two.token not in text


async def test_one_owner_s_uninstall_leaves_the_other_owners_whole(tmp_path: Path) -> None:
    """Two owners, each with their own Slack app installed through the real OAuth flow (per-person
    installs): the first owner revoking their token erases every byte of their facts from their
    folder; the second owner's folder, memory and answers are untouched."""
    bench = owners(2)
    root = tmp_path / "data"
    apis = [FakeSlackApi(client_id=f"1111.{i}", client_secret=f"secret-{i}") for i in range(2)]
    for api in apis:
        await api.start()
    try:
        for owner, api in zip(bench, apis, strict=True):
            env = {
                "SLACK_CLIENT_ID": api.client_id,
                "SLACK_CLIENT_SECRET": api.client_secret,
                "SLACK_SIGNING_SECRET": f"signing-{owner.owner_id}",
                "EPMEM_SLACK_API_URL": api.api_url,
                "EPMEM_SLACK_PORT": "0",
                "EPMEM_SLACK_HOST": "127.0.0.1",
            }
            write_owner(root, owner, env)
        await load_memories(Settings(data_dir=root), bench)
        deployment = await open_services(owner_homes(Settings(data_dir=root)))
        services = deployment.services
        try:
            await deployment.start()
            ports = []
            for service, owner, api in zip(services, bench, apis, strict=True):
                [connector] = service.connectors
                assert isinstance(connector, SlackConnector) and connector.port is not None
                ports.append(connector.port)
                api.redirect_url = f"http://127.0.0.1:{connector.port}/slack/oauth_redirect"
                api.signed_in = owner.slack
                status, page = await InstallBrowser(functools.partial(int, connector.port)).add_to_slack()
                assert status == 200, page
            avery, blake = bench
            assert files_with(root / "owners" / "avery", avery.canaries["street"].encode())  # the check sees it
            sender = SlackSender("signing-avery", lambda: ports[0])
            status, _ = await sender.event(event_envelope(tokens_revoked([avery.slack]), event_id="Ev-avery"))
            assert status == 200
            await poll(lambda: not files_with(root / "owners" / "avery", avery.canaries["street"].encode()), 30)
            assert await services[0].runtime.memory.count() == 0
            assert await services[1].runtime.memory.count() == len(blake.scenario.facts)
        finally:
            await deployment.close()
    finally:
        for api in apis:
            await api.stop()
    for detail in avery.canaries.values():
        assert files_with(root / "owners" / "avery", detail.encode()) == [], detail
    assert files_with(root / "owners" / "blake", blake.canaries["street"].encode())


async def test_one_shared_bot_answers_each_owner_through_their_own_business_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One TELEGRAM_BOT_TOKEN for the whole deployment, polled once (connectors/telegram/front.py):
    each owner links their own account (a Business connection each); a customer writing to an
    owner's account is answered from that owner's memory through that owner's connection, the
    same customer writing to the other owner gets the other's; an owner's command in their chat
    with the bot is theirs; someone writing to the bot itself is nobody's and is not answered."""
    bench = owners(2)
    root = tmp_path / "data"
    for owner in bench:
        write_owner(root, owner)
    await load_memories(Settings(data_dir=root), bench)
    async with FakeTelegram(token="300:SHARED-BOT") as tg:
        for name, value in tg.service_env(EPMEM_SEND_PACING="0").items():
            monkeypatch.setenv(name, value)
        deployment = await open_services(owner_homes(Settings(data_dir=root)))
        try:
            assert [f.platform for f in deployment.fronts] == ["telegram"]
            await deployment.start()
            avery, blake = bench
            users = {o.owner_id: FakeTelegram.user(o.telegram, o.first) for o in bench}
            for owner in bench:
                tg.business_connection(f"bc-{owner.owner_id}", users[owner.owner_id])
            sam = FakeTelegram.user(201, "Sam")  # a contact of both, on one account
            replies = {}
            for owner in bench:
                before = len(tg.sent_messages)
                tg.business_message(f"bc-{owner.owner_id}", sam, f"Where is the house {owner.first} made an offer on?")
                await tg.wait_for(functools.partial(more_than, tg.sent_messages, before), 30)
                replies[owner.owner_id] = tg.sent_messages[-1]
            assert replies["avery"]["business_connection_id"] == "bc-avery"
            assert avery.canaries["street"] in replies["avery"]["text"]
            assert blake.canaries["street"] not in replies["avery"]["text"]
            assert replies["blake"]["business_connection_id"] == "bc-blake"
            assert blake.canaries["street"] in replies["blake"]["text"]
            assert avery.canaries["street"] not in replies["blake"]["text"]
            seen = len(tg.sent_messages)
            tg.private_text(users["blake"], "/facts")
            await tg.wait_for(lambda: len(tg.sent_messages) > seen, 30)
            listing = tg.sent_messages[-1]
            assert listing["chat"]["id"] == blake.telegram
            assert blake.canaries["pin"] in listing["text"] and avery.canaries["pin"] not in listing["text"]
            # each owner's command menu is set for their own chat with the bot, and nobody else's
            assert set(tg.menus) == {avery.telegram, blake.telegram}
            assert "facts" in [word for word, _ in tg.menus[blake.telegram]]
            seen = len(tg.sent_messages)
            tg.private_text(sam, "Where is the house Avery made an offer on?")
            await tg.wait_until_consumed(10)
            await asyncio.sleep(1.0)
            assert len(tg.sent_messages) == seen  # the bot itself is nobody's delegate
        finally:
            await deployment.close()


@pytest.mark.parametrize("setting", ["audit_url", "database_url"])
async def test_owners_on_one_postgres_server_stay_apart(
    tmp_path: Path, postgres_server: EmbeddedPostgres, setting: str
) -> None:
    """EPMEM_AUDIT_URL for the whole deployment: each owner's chain in a schema of their own;
    EPMEM_DATABASE_URL: their state and memory log too. The isolation benchmark reads each
    owner's audit page and export from there."""
    result = await run_isolation(tmp_path, n_owners=3, per_owner=12, server=(setting, postgres_server.database()))
    assert result["crossings"] == 0, result["crossing_examples"]
    assert result["audit"] == "postgresql, a schema per owner"
    assert result["state"] == ("postgresql, schemas per owner" if setting == "database_url" else "sqlite")
    assert result["foreign_audit_records"] == 0 and result["audit_verified"]
    counts = [o["audit_records"] for o in result["per_owner"].values()]
    assert all(count >= 24 for count in counts), counts  # each owner's 12 replies and deliveries, and theirs only
