"""EPMEM_AUDIT_URL: the bot's audit log on a PostgreSQL server (issue 42). The delegate answers,
several workers append to the owner's one chain at once, and `epmem audit verify` passes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from pydantic import SecretStr

from bot.config import Settings
from epmem.audit import AuditLog
from testkit.postgres import EmbeddedPostgres
from testkit.runtime import example
from tests.bot.test_cli import epmem, error_lines


async def _load(url: str, workers: int = 4, each: int = 25) -> None:
    """The load run: each worker its own connection, all appending at once."""
    logs = [await AuditLog(url).open() for _ in range(workers)]
    try:
        await asyncio.gather(
            *(
                log.append(
                    "reply", {"question": f"w{w} q{n}"}, contact=f"c{w}", disclosed=[("f2", "e1")], recipients=[f"c{w}"]
                )
                for n in range(each)
                for w, log in enumerate(logs)
            )
        )
    finally:
        for log in logs:
            await log.close()


def test_the_audit_log_on_a_server_verifies_after_a_load_run(tmp_path: Path, postgres_server: EmbeddedPostgres) -> None:
    data = tmp_path / "data"
    env = {"EPMEM_AUDIT_URL": postgres_server.database()}
    assert epmem("load", str(example("house_and_bonus.yaml")), data=data, env=env).returncode == 0
    chat = epmem("chat", "--as", "raj", data=data, stdin="How is the house hunt going?\n", env=env)
    assert chat.returncode == 0, chat.stderr
    assert not (data / "audit.sqlite").exists()  # the server holds the log
    asyncio.run(_load(env["EPMEM_AUDIT_URL"]))
    verified = epmem("audit", "verify", data=data, env=env)
    assert verified.returncode == 0, verified.stderr
    assert "101" in verified.stdout
    listed = [
        json.loads(line)
        for line in epmem("audit", "list", "--json", "--limit", "200", data=data, env=env).stdout.splitlines()
    ]
    assert listed[0]["contact"] == "raj" and listed[0]["disclosed"] == ["f2"] and len(listed) == 101


def test_an_audit_url_that_is_not_a_server_is_refused(tmp_path: Path) -> None:
    result = epmem("audit", "verify", data=tmp_path / "data", env={"EPMEM_AUDIT_URL": "sqlite:///audit.db"})
    lines = error_lines(result)
    assert result.returncode != 0 and any("postgresql://" in line for line in lines), result.stderr


async def test_each_of_several_owners_has_a_chain_of_their_own(postgres_server: EmbeddedPostgres) -> None:
    """One EPMEM_AUDIT_URL for a deployment of several owners: each owner's settings put their
    chain in a schema of their own, so no owner's records follow another's."""
    url = postgres_server.database()
    targets = [Settings(audit_url=SecretStr(url), owner=who).audit_target for who in ("ana", "ben", "public")]
    assert all(isinstance(t, str) and t.startswith(url) for t in targets) and len(set(targets)) == 3
    assert Settings(audit_url=SecretStr(url)).audit_target == url
    assert str(targets[2]).endswith("schema=owner_public")  # an owner called "public" is not the folder's own
    for target in targets:
        await _load(str(target), workers=2, each=5)
    for target in targets:
        async with AuditLog(target) as log:
            assert await log.verify() == (10, None)
