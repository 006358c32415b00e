"""A platform is a plugin: a toy platform, defined here and registered through the registry
alone, gets replies from the real agent end to end, and its identities work in a policy.

Nothing in ``epmem/``, ``bot/`` or ``connectors/`` knows the toy: the test writes a package's
worth of code (identity scheme, settings read from the environment, a connector, a loopback
fake) and makes one registration call, which is what CONTRIBUTING.md ("How do I add a
platform?") asks of a real platform. ``epmem run``'s own :class:`~bot.serve.Service` then
starts it from its environment variable, the owner reaches the delegate through it, and the
privacy calculus treats a toy contact exactly as it treats the same contact on Telegram.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import pytest_asyncio
from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from bot.platforms import PlatformSettings
from bot.runtime import Runtime
from bot.serve import Service
from connectors.base import Action, Connector, Inbound
from connectors.registry import PLATFORMS, ConnectorContext, Platform
from epmem.identity import IdentityScheme
from epmem.policy import Policy
from testkit.house import COVER, HOUSE_Q, TRUTH, house_policy, house_runtime
from testkit.platforms import loopback_fake

NAME = "toy"


@dataclass
class ToyNetwork:
    """The toy platform's loopback fake: a chat server in this process. People ``say`` things;
    the bot's connector reads them from ``inbox`` and posts into ``sent`` (chat, text)."""

    name: str
    inbox: asyncio.Queue[tuple[str, str]] = field(default_factory=asyncio.Queue)
    sent: list[tuple[str, str]] = field(default_factory=list)

    def say(self, user: str, text: str) -> None:
        self.inbox.put_nowait((user, text))

    def to(self, user: str) -> list[str]:
        return [text for chat, text in self.sent if chat == f"{NAME}:{user}"]

    async def wait_for(self, check: Callable[[], bool], timeout: float = 30.0) -> None:
        async with asyncio.timeout(timeout):
            while not check():
                await asyncio.sleep(0.02)


#: the "servers" a toy connector can reach, by name (what a real platform's API URL is).
NETWORKS: dict[str, ToyNetwork] = {}


class ToySettings(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore")

    network: str | None = Field(default=None, validation_alias=AliasChoices("TOY_NETWORK"))
    token: SecretStr | None = Field(default=None, validation_alias=AliasChoices("TOY_TOKEN"))


class ToyConnector:
    """Every direct chat's id is the person's identity; the reply goes back into that chat."""

    platform = NAME

    def __init__(self, network: ToyNetwork, ctx: ConnectorContext) -> None:
        self.network, self.ctx = network, ctx
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._receive())

    async def _receive(self) -> None:
        while True:
            user, text = await self.network.inbox.get()
            sender = f"{NAME}:{user}"
            out = await self.ctx.handler(
                Inbound(platform=NAME, chat_id=sender, chat_kind="direct", sender=sender, text=text, audience=(sender,))
            )
            if out.text is not None:
                await self.send(sender, out.text, out.actions)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def send(self, chat_id: str, text: str, actions: tuple[Action, ...] = ()) -> None:
        self.network.sent.append((chat_id, text))


def connect(settings: ToySettings, ctx: ConnectorContext) -> Connector:
    assert settings.network is not None
    return ToyConnector(NETWORKS[settings.network], ctx)


TOY: Platform[ToySettings] = Platform(
    name=NAME,
    title="Toy",
    identity=IdentityScheme(NAME, r"[a-z]+", "toy:alice"),
    settings=ToySettings,
    configured=lambda s: s.network is not None,
    connect=connect,
    fake=f"{__name__}:ToyNetwork",
    setup_hint="TOY_NETWORK",
)


def toy_policy() -> Policy:
    """The house policy with the owner and three contacts on the toy platform only."""
    data = house_policy().model_dump(mode="json")
    data["owner"]["identities"] = ["toy:maya"]
    for cid in data["contacts"]:
        data["contacts"][cid]["identities"] = [f"toy:{cid}"] if cid in ("leo", "raj", "kim") else []
    return Policy.model_validate(data)


@dataclass
class Toy:
    network: ToyNetwork
    runtime: Runtime
    service: Service


@pytest.fixture
def registered() -> Iterator[None]:
    PLATFORMS.register(TOY)
    try:
        yield None
    finally:
        PLATFORMS.unregister(NAME)


@pytest_asyncio.fixture
async def toy(registered: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Toy]:
    network = NETWORKS.setdefault("loop", ToyNetwork("loop"))
    monkeypatch.setenv("TOY_NETWORK", network.name)
    monkeypatch.setenv("TOY_TOKEN", "toy-secret")
    runtime = await house_runtime(tmp_path / "data", policy=toy_policy())
    service = Service(runtime, PlatformSettings())
    try:
        await service.start()
        yield Toy(network, runtime, service)
    finally:
        await service.stop()
        await runtime.close()
        NETWORKS.pop(network.name)


async def test_a_registered_platform_is_served_and_answered_by_the_agent(toy: Toy) -> None:
    assert toy.service.platforms == [NAME]  # started from TOY_NETWORK alone, no other platform
    assert "toy-secret" in toy.service._secrets  # its secrets are redacted from start errors
    assert loopback_fake(NAME) is ToyNetwork
    toy.network.say("leo", HOUSE_Q)
    await toy.network.wait_for(lambda: bool(toy.network.to("leo")))
    assert TRUTH in toy.network.to("leo")[0]
    toy.network.say("raj", HOUSE_Q)  # a colleague: the cover story, as on Telegram
    await toy.network.wait_for(lambda: bool(toy.network.to("raj")))
    assert COVER in toy.network.to("raj")[0] and TRUTH not in toy.network.to("raj")[0]
    toy.network.say("eve", HOUSE_Q)  # nobody the policy knows: a stranger
    await toy.network.wait_for(lambda: bool(toy.network.to("eve")))
    assert TRUTH not in toy.network.to("eve")[0]


async def test_the_owner_commands_through_it_and_links_its_identities(toy: Toy) -> None:
    toy.network.say("maya", "/link ana toy:anna")
    await toy.network.wait_for(lambda: bool(toy.network.to("maya")))
    assert "ana" in toy.network.to("maya")[0]
    assert toy.runtime.owner.directory.resolve("toy:anna").contact_id == "ana"
    toy.network.say("maya", "/link ana toy:Anna2")
    await toy.network.wait_for(lambda: len(toy.network.to("maya")) == 2)
    assert "is not an identity: use " in toy.network.to("maya")[1] and "toy:alice" in toy.network.to("maya")[1]


def test_its_identities_are_known_only_while_it_is_registered() -> None:
    with pytest.raises(ValueError, match="unknown platform 'toy'"):
        toy_policy()
    PLATFORMS.register(TOY)
    try:
        policy = toy_policy()
        assert policy.contacts["leo"].identities == ["toy:leo"]
        with pytest.raises(ValueError, match="already registered"):
            PLATFORMS.register(TOY)
        data = policy.model_dump(mode="json")
        data["contacts"]["leo"]["identities"] = ["toy:Leo"]  # the scheme says lower case only
        with pytest.raises(ValueError, match="must look like .*toy:alice"):
            Policy.model_validate(data)
    finally:
        PLATFORMS.unregister(NAME)
    assert PLATFORMS.get(NAME) is None
