"""Who the workers of benchmarks/workers.py serve, and where each owner's Slack events go.

One owner: each worker a plain data folder, the owner's policy in ``EPMEM_POLICY``, the Slack
app's credentials in the environment, its events port chosen by the worker (read from its log).
Several owners: each worker's folder holds ``owners/<id>/`` for every owner (their policy and
``owner.env``: their own Slack app, its signing secret and token, and the port this worker
serves their events on, chosen here), as a deployment of several owners is laid out
(docs/OWNERS.md); every worker serves every owner, each owner's memory and state in schemas of
their own on the one server.
"""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from benchmarks.run_latency import SLACK_SECRET, SLACK_TOKEN, BotProcess, slack_env
from bot.config import ACTIVE_POLICY_NAME, OWNERS_FOLDER, Settings
from bot.owners import OWNER_ENV
from testkit.fake_slack import FakeSlackApi


@dataclass(frozen=True, slots=True)
class Layout:
    owners: int
    url: str | None
    policy: Path
    lease_s: float
    beat_s: float

    def owner_ids(self) -> list[str]:
        return [f"o{k}" for k in range(self.owners)] if self.owners > 1 else []

    def token(self, owner: int) -> str:
        """The bot token of owner ``owner``'s Slack app (one owner: the environment's)."""
        return SLACK_TOKEN if self.owners == 1 else f"{SLACK_TOKEN}-o{owner}"

    def secret(self, owner: int) -> str:
        return SLACK_SECRET if self.owners == 1 else f"{SLACK_SECRET}-o{owner}"

    def settings(self, owner: int) -> Settings:
        """An owner's settings on the shared server (where their audit chain and state are)."""
        server = SecretStr(self.url) if self.url else None
        if self.owners == 1:
            return Settings(database_url=server)
        return Settings(database_url=server, owner=f"o{owner}", owner_id=f"o{owner}")

    def seed_settings(self) -> list[dict[str, Any]]:
        """The ``house_runtime`` settings that load each owner's memory into the server's log."""
        server: dict[str, Any] = {"database_url": SecretStr(self.url)} if self.url else {}
        if self.owners == 1:
            return [server]
        return [{**server, "owner": o, "owner_id": o} for o in self.owner_ids()]

    def env(self, folder: Path, api: FakeSlackApi) -> dict[str, str]:
        """A worker's process environment (one owner: with the Slack app's; several: theirs are
        in their own ``owner.env``, and the process environment must hold none)."""
        env = {
            "EPMEM_DATA_DIR": str(folder),
            **({"EPMEM_DATABASE_URL": self.url} if self.url else {}),
            "EPMEM_WORKER_LEASE_S": str(self.lease_s),
            "EPMEM_WORKER_BEAT_S": str(self.beat_s),
            "EPMEM_RATE_LIMIT_MESSAGES": "0",  # one asker sends hundreds a minute here: the load, not abuse
        }
        if self.owners == 1:
            return {**env, **slack_env(api), "EPMEM_POLICY": str(self.policy)}
        return env

    def write_owners(self, folder: Path, api: FakeSlackApi) -> list[int]:
        """Several owners: their folders in a worker's data folder; the ports chosen for them."""
        ports = []
        for k, owner in enumerate(self.owner_ids()):
            home = folder / OWNERS_FOLDER / owner
            home.mkdir(parents=True, exist_ok=True)
            (home / ACTIVE_POLICY_NAME).write_text(self.policy.read_text())
            ports.append(_free_port())
            own = {
                "SLACK_BOT_TOKEN": self.token(k),
                "SLACK_SIGNING_SECRET": self.secret(k),
                "EPMEM_SLACK_API_URL": api.api_url,
                "EPMEM_SLACK_PORT": str(ports[-1]),
                "EPMEM_SLACK_HOST": "127.0.0.1",
            }
            (home / OWNER_ENV).write_text("".join(f"{name}={value}\n" for name, value in own.items()))
        return ports


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def wait_ports(bot: BotProcess, ports: list[int], timeout: float) -> None:
    """Until every port accepts a connection (each owner's Slack app is serving)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    for port in ports:
        while True:
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                break
            except OSError:
                if bot.proc.returncode is not None or loop.time() > deadline:
                    raise RuntimeError(f"epmem run did not serve port {port}:\n" + "\n".join(bot.lines[-30:])) from None
                await asyncio.sleep(0.1)
