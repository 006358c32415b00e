"""Telegram's registration: its identities, settings from the environment, and its connector.

Credentials keep the names Telegram's own docs use (``TELEGRAM_BOT_TOKEN``); our knobs carry
the ``EPMEM_`` prefix. Secrets are ``SecretStr`` so settings printed or logged by mistake show
``**********``. Who the owner is here comes from the policy (``ConnectorContext.owner``), never
from the environment: one place decides who may run owner commands.
"""

from __future__ import annotations

import dataclasses
import secrets
from urllib.parse import urlsplit

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from connectors.base import Connector
from connectors.registry import ConnectorContext, Platform, PlatformError, scaled
from connectors.telegram.app import TelegramConnector
from connectors.telegram.config import PLATFORM, TelegramConfig, TelegramPacing
from connectors.telegram.front import TelegramFront
from epmem.identity import IdentityScheme

API_URL = "https://api.telegram.org/bot"


class TelegramSettings(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore")

    bot_token: SecretStr | None = Field(default=None, validation_alias=AliasChoices("TELEGRAM_BOT_TOKEN"))
    #: Bot API base ending in ``/bot`` (the token is appended), e.g. a local Bot API server.
    api_url: str = Field(default=API_URL, validation_alias=AliasChoices("EPMEM_TELEGRAM_API_URL"))
    #: set to receive updates by webhook at this public HTTPS URL instead of long polling.
    webhook_url: str | None = Field(default=None, validation_alias=AliasChoices("EPMEM_TELEGRAM_WEBHOOK_URL"))
    webhook_listen: str = Field(default="0.0.0.0", validation_alias=AliasChoices("EPMEM_TELEGRAM_WEBHOOK_LISTEN"))
    webhook_port: int = Field(
        default=8443, ge=0, le=65535, validation_alias=AliasChoices("EPMEM_TELEGRAM_WEBHOOK_PORT")
    )
    #: checked on every webhook request; a random one is made at start when unset.
    webhook_secret: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("EPMEM_TELEGRAM_WEBHOOK_SECRET")
    )
    poll_timeout: float = Field(default=30.0, ge=0, validation_alias=AliasChoices("EPMEM_TELEGRAM_POLL_TIMEOUT"))


def configured(s: TelegramSettings) -> bool:
    return s.bot_token is not None and bool(s.bot_token.get_secret_value())


def config(s: TelegramSettings, ctx: ConnectorContext) -> TelegramConfig:
    """The connector's config from the settings and the owner's ``telegram:ID`` in the policy."""
    assert s.bot_token is not None
    secret = s.webhook_secret.get_secret_value() if s.webhook_secret else None
    if s.webhook_url and not secret:
        # we register the webhook ourselves at start, so a fresh secret each start is enough.
        secret = secrets.token_urlsafe(32)
    return TelegramConfig(
        token=s.bot_token.get_secret_value(),
        base_url=s.api_url,
        webhook_url=s.webhook_url or None,
        webhook_listen=s.webhook_listen,
        webhook_port=s.webhook_port,
        owner_user_id=int(ctx.owner.split(":", 1)[1]) if ctx.owner else None,
        max_text_len=ctx.max_text_len,
        secret_token=secret,
        poll_timeout=s.poll_timeout,
        send_timeout_s=ctx.send_timeout_s,
        pacing=scaled(TelegramPacing(), ctx.send_pacing),
        timer=ctx.timer,
        owner_commands=ctx.owner_commands,
    )


def connect(s: TelegramSettings, ctx: ConnectorContext) -> Connector:
    if ctx.front is None:
        return TelegramConnector(config(s, ctx), ctx.handler, state=ctx.state)
    fed = dataclasses.replace(config(s, ctx), fed=True)
    if fed.owner_user_id is None:
        raise PlatformError("a shared bot needs each owner's telegram: identity in their policy (owner.identities)")
    connector = TelegramConnector(fed, ctx.handler, state=ctx.state)
    assert isinstance(ctx.front, TelegramFront)
    ctx.front.attach(fed.owner_user_id, connector)
    return connector


def front(s: TelegramSettings) -> TelegramFront:
    """The shared bot's one poller (several owners, one TELEGRAM_BOT_TOKEN in the deployment's environment)."""
    assert s.bot_token is not None
    return TelegramFront(
        TelegramConfig(token=s.bot_token.get_secret_value(), base_url=s.api_url, poll_timeout=s.poll_timeout)
    )


def describe(s: TelegramSettings) -> str:
    return "TELEGRAM_BOT_TOKEN set" + (" (webhook)" if s.webhook_url else " (long polling)")


def problems(s: TelegramSettings, owner: str | None) -> list[str]:
    if s.webhook_url and urlsplit(s.webhook_url).scheme != "https":
        return ["EPMEM_TELEGRAM_WEBHOOK_URL must be an https:// address (Telegram refuses others)"]
    return []


def owner_chat(owner: str) -> str:
    """The owner's private chat with the bot has the owner's numeric user id."""
    return owner.split(":", 1)[1]


TELEGRAM: Platform[TelegramSettings] = Platform(
    name=PLATFORM,
    title="Telegram",
    identity=IdentityScheme(PLATFORM, r"\d+", "telegram:123456789"),
    settings=TelegramSettings,
    configured=configured,
    connect=connect,
    fake="testkit.fake_telegram:FakeTelegram",
    setup_hint="TELEGRAM_BOT_TOKEN",
    describe=describe,
    problems=problems,
    owner_chat=owner_chat,
    front=front,
)
