"""An owner who takes the Slack app back takes their memory with them (bot/serve.py, bot/erasure.py).

Per-person installs through the real Bolt OAuth flow against the loopback Slack, served by the
real ``Service`` over a real runtime (the house example's memory): Maya (the owner) and her
colleague Grace add the app at ``/slack/install``; a contact's question is answered from Maya's
memory; Grace revoking her token changes nothing of Maya's; Maya revoking hers erases her whole
memory, as ``/forget`` erases a fact: no byte of her facts in any file of her data folder, and
the audit chain verifies, with an erasure record naming her. An erasure a crash interrupted is
finished at the next start, before anything is answered.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from epmem.db.base import split_schema

from bot.platforms import PlatformSettings
from bot.runtime import Runtime
from bot.serve import ERASE_OWED_FLAG, Service
from connectors.base import Inbound
from connectors.slack import SlackConnector
from testkit.fake_slack import FakeSlackApi, InstallBrowser, SlackSender, event_envelope, im_message, tokens_revoked
from testkit.fake_slack import wait_for as poll
from testkit.postgres import EmbeddedPostgres
from testkit.house import HOUSE_Q, OWNER_SLACK, SLACK, TEAM, TRUTH, house_runtime, reopen

pytestmark = pytest.mark.timeout(300)

SECRET = "uninstall-signing-secret"
#: the house memory's words, as its facts say them (none is a word of the policy file)
WORDS = (b"Elm Road", b"retention bonus", b"Atlas launch", b"half marathon")


def files_with(folder: Path, needle: bytes) -> list[str]:
    """The files holding ``needle``; os.walk, as the store compacts folders away while we look."""
    found = []
    for top, _, names in os.walk(folder):
        for name in names:
            path = Path(top) / name
            try:
                if needle in path.read_bytes():
                    found.append(str(path.relative_to(folder)))
            except FileNotFoundError:
                continue
    return sorted(found)


@pytest.fixture
async def api(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeSlackApi]:
    fake = FakeSlackApi()
    await fake.start()
    env = {
        "SLACK_CLIENT_ID": fake.client_id,
        "SLACK_CLIENT_SECRET": fake.client_secret,
        "SLACK_SIGNING_SECRET": SECRET,
        "EPMEM_SLACK_API_URL": fake.api_url,
        "EPMEM_SLACK_PORT": "0",
        "EPMEM_SLACK_HOST": "127.0.0.1",
        "EPMEM_SEND_PACING": "0",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    try:
        yield fake
    finally:
        await fake.stop()


async def serve(runtime: Runtime, api: FakeSlackApi) -> tuple[Service, SlackConnector]:
    service = Service(runtime, PlatformSettings())
    await service.start()
    [connector] = service.connectors
    assert isinstance(connector, SlackConnector) and connector.port is not None
    api.redirect_url = f"http://127.0.0.1:{connector.port}/slack/oauth_redirect"
    return service, connector


async def test_the_owner_s_uninstall_erases_their_memory_and_nobody_else_s_does(
    tmp_path: Path, api: FakeSlackApi
) -> None:
    data = tmp_path / "data"
    runtime = await house_runtime(data)
    service, connector = await serve(runtime, api)
    sender = SlackSender(SECRET, lambda: connector.port)
    try:
        for who in (OWNER_SLACK, SLACK["grace"]):
            api.signed_in = who
            status, page = await InstallBrowser(lambda: connector.port).add_to_slack()
            assert status == 200, page
        leo = SLACK["leo"]
        status, _ = await sender.event(event_envelope(im_message(leo, HOUSE_Q, channel=f"D{leo}"), event_id="Ev-ask"))
        assert status == 200
        await poll(lambda: bool(api.posts(f"D{leo}")), message="an answer to Leo")
        assert TRUTH in str(api.posts(f"D{leo}")[-1].get("text"))
        facts = await runtime.memory.count()
        assert facts > 0 and all(files_with(data, word) for word in WORDS)  # the check sees them

        status, _ = await sender.event(event_envelope(tokens_revoked([SLACK["grace"]]), event_id="Ev-grace"))
        assert status == 200
        status, _ = await sender.event(event_envelope(tokens_revoked([OWNER_SLACK]), event_id="Ev-maya"))
        assert status == 200
        await poll(lambda: runtime.audit.path.exists() and not files_with(data, WORDS[0]), message="the erasure")
        assert await runtime.memory.count() == 0 and (await runtime.conversations.count()) == (0, 0)
    finally:
        await service.stop()
        await runtime.close()
    assert {word: files_with(data, word) for word in WORDS} == {word: [] for word in WORDS}
    runtime = await house_runtime(data, load=False)
    try:
        checked, bad = await runtime.audit.verify()
        assert bad is None and checked > 0
        erasures = [r for r in await runtime.audit.records(kind="erasure")]
        assert [r.body.get("by") for r in erasures] == [f"slack:{TEAM}/{OWNER_SLACK}"]
        assert await runtime.overlay.get_flag(ERASE_OWED_FLAG) is None
    finally:
        await runtime.close()


async def test_an_erasure_a_crash_interrupted_is_finished_at_the_next_start(tmp_path: Path, api: FakeSlackApi) -> None:
    runtime = await house_runtime(tmp_path / "data")
    await runtime.overlay.set_flag(ERASE_OWED_FLAG, f"slack:{TEAM}/{OWNER_SLACK}")
    runtime = await reopen(runtime)
    assert await runtime.memory.count() > 0
    service, _ = await serve(runtime, api)
    try:
        assert await runtime.memory.count() == 0
        assert await runtime.overlay.get_flag(ERASE_OWED_FLAG) is None
    finally:
        await service.stop()
        await runtime.close()


async def install_and_ask(api: FakeSlackApi, connector: SlackConnector) -> Callable[[], Awaitable[None]]:
    """The owner installs through the real flow and Leo is answered; what revokes her token."""
    api.signed_in = OWNER_SLACK
    status, page = await InstallBrowser(lambda: connector.port).add_to_slack()
    assert status == 200, page
    user = SLACK["leo"]
    sender = SlackSender(SECRET, lambda: connector.port)
    status, _ = await sender.event(event_envelope(im_message(user, HOUSE_Q, channel=f"D{user}"), event_id="Ev-1"))
    assert status == 200
    await poll(lambda: bool(api.posts(f"D{user}")), message="an answer to Leo")

    async def revoke() -> None:
        status, _ = await sender.event(event_envelope(tokens_revoked([OWNER_SLACK]), event_id="Ev-2"))
        assert status == 200

    return revoke


def _rows_holding(url: str, word: str) -> list[str]:
    """Every table of the owner's audit database whose rows, as text, hold ``word``."""
    import psycopg

    with psycopg.connect(split_schema(url)[0], autocommit=True) as conn:
        tables = conn.execute(
            "SELECT table_schema, table_name FROM information_schema.tables "
            "WHERE table_schema NOT IN ('pg_catalog', 'information_schema')"
        ).fetchall()
        found = []
        for schema, table in tables:
            query = f'SELECT count(*) FROM "{schema}"."{table}" t WHERE strpos(lower(t::text), lower(%s)) > 0'
            row = conn.execute(query, (word,)).fetchone()
            if row and row[0]:
                found.append(f"{schema}.{table}")
        return found


@pytest.mark.parametrize("setting", ["audit_url", "database_url"])
async def test_the_owner_s_uninstall_leaves_no_fact_in_postgres(
    tmp_path: Path, api: FakeSlackApi, postgres_server: EmbeddedPostgres, setting: str
) -> None:
    """The same with the audit log (EPMEM_AUDIT_URL), or the state database, the audit log and
    the memory's write log (EPMEM_DATABASE_URL) on a PostgreSQL server: after the owner's
    revocation no row of any of her tables there holds a fact's words, nor any file of her
    folder (the vector replica), and the chain verifies. Another owner on the same server, with
    the same words in his memory, keeps every one of them."""
    url = postgres_server.database()
    data = tmp_path / "data"
    server: dict[str, Any] = {setting: SecretStr(url)}
    runtime = await house_runtime(data, **server)
    other = await house_runtime(tmp_path / "other", owner="ben", owner_id="ben", **server)
    leo = f"slack:{TEAM}/{SLACK['leo']}"
    assert TRUTH in str(
        (await other.agent.handle(Inbound("slack", "D1", "direct", leo, HOUSE_Q, audience=(leo,)))).text
    )
    await other.close()
    theirs = {"owner_ben", "owner_ben_state"}
    assert "owner_ben" in _schemas_holding(url, "Elm Road")  # the check sees his
    service, connector = await serve(runtime, api)
    try:
        revoke = await install_and_ask(api, connector)
        assert _schemas_holding(url, "Elm Road") - theirs  # the reply told it: the check sees hers
        await revoke()
        await poll(lambda: not _schemas_holding(url, "Elm Road") - theirs, timeout=30, message="the erasure")
        checked, bad = await runtime.audit.verify()
        assert bad is None and checked > 0
    finally:
        await service.stop()
        await runtime.close()
    hers = {"public", "state"}
    for word in ("Elm Road", "retention bonus", "Atlas launch", "half marathon"):
        assert _schemas_holding(url, word) - theirs == set(), word
        assert files_with(data, word.encode()) == [], word
        assert _files_holding(url, word, hers) == [], word
    assert _files_holding(url, "Elm Road", theirs)  # the file check sees what is there
    other = await house_runtime(tmp_path / "other", load=False, owner="ben", owner_id="ben", **server)
    try:
        out = await other.agent.handle(Inbound("slack", "D1", "direct", leo, HOUSE_Q, audience=(leo,)))
        assert TRUTH in str(out.text)
        checked, bad = await other.audit.verify()
        assert bad is None
    finally:
        await other.close()


def _files_holding(url: str, word: str, schemas: set[str]) -> list[str]:
    """The files of every relation (tables, their TOAST, indexes) of ``schemas`` holding
    ``word``, after a checkpoint wrote what the server held in memory (its write-ahead log is
    not looked at: docs/POSTGRES.md says what erasure cannot reach there)."""
    import psycopg

    with psycopg.connect(split_schema(url)[0], autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        [(data,)] = conn.execute("SHOW data_directory").fetchall()
        rels = conn.execute(
            "SELECT pg_relation_filepath(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = ANY(%s) UNION SELECT pg_relation_filepath(c.reltoastrelid) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ANY(%s) AND c.reltoastrelid <> 0",
            (sorted(schemas), sorted(schemas)),
        ).fetchall()
    needle = word.encode()
    return sorted(
        str(f) for (rel,) in rels if rel for f in Path(data).glob(f"{rel}*") if f.is_file() and needle in f.read_bytes()
    )


def _schemas_holding(url: str, word: str) -> set[str]:
    return {found.split(".")[0] for found in _rows_holding(url, word)}


async def test_after_the_uninstall_no_file_of_the_server_holds_her_words(
    tmp_path: Path, api: FakeSlackApi, postgres_server: EmbeddedPostgres
) -> None:
    """With the server set as docs/WORKERS.md says for erasure (``wal_recycle = off``, nothing
    holding old segments), her erasure moves the write-ahead log on: no file of her database
    and no write-ahead log segment holds a fact's words (a server's base backups and replicas
    are beyond any program)."""
    import psycopg

    url = postgres_server.database()
    with psycopg.connect(split_schema(url)[0], autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET wal_recycle = off")
        conn.execute("SELECT pg_reload_conf()")
        [(data,)] = conn.execute("SHOW data_directory").fetchall()
        [(oid,)] = conn.execute("SELECT oid FROM pg_database WHERE datname = current_database()").fetchall()
    folders = [Path(data) / "base" / str(oid), Path(data) / "pg_wal"]

    def server_files_with(word: bytes) -> list[str]:
        return [found for folder in folders for found in files_with(folder, word)]

    runtime = await house_runtime(tmp_path / "data", database_url=SecretStr(url))
    service, connector = await serve(runtime, api)
    try:
        revoke = await install_and_ask(api, connector)
        assert server_files_with(WORDS[0])  # in the log at least: the check sees it
        await revoke()
        await poll(lambda: not _schemas_holding(url, "Elm Road"), timeout=30, message="the erasure")
        await poll(lambda: not server_files_with(WORDS[0]), timeout=30, message="the log moved on")
    finally:
        await service.stop()
        await runtime.close()
    assert {word: server_files_with(word) for word in WORDS} == {word: [] for word in WORDS}
