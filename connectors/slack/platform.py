"""Slack's registration: its identities, settings from the environment, and its connector.

Credentials keep the names Slack's own docs use (``SLACK_BOT_TOKEN``, ``SLACK_SIGNING_SECRET``,
``SLACK_APP_TOKEN``, ``SLACK_USER_TOKEN``); our knobs carry the ``EPMEM_`` prefix. Who the owner
is here comes from the policy (``ConnectorContext.owner``), never from the environment.
"""

from __future__ import annotations

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from connectors.base import Connector
from connectors.registry import ConnectorContext, Platform, PlatformError, scaled
from connectors.slack.app import SlackConnector
from connectors.slack.config import SlackConfig, SlackPacing
from connectors.slack.ids import PLATFORM
from epmem.identity import IdentityScheme

API_URL = "https://slack.com/api/"
NO_OWNER = (
    "SLACK_USER_TOKEN is set but the policy names no Slack owner identity (owner.identities: "
    "slack:TEAM/USER): whose messages would the delegate answer?"
)


class SlackSettings(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore")

    bot_token: SecretStr | None = Field(default=None, validation_alias=AliasChoices("SLACK_BOT_TOKEN"))
    signing_secret: SecretStr | None = Field(default=None, validation_alias=AliasChoices("SLACK_SIGNING_SECRET"))
    app_token: SecretStr | None = Field(default=None, validation_alias=AliasChoices("SLACK_APP_TOKEN"))
    api_url: str = Field(default=API_URL, validation_alias=AliasChoices("EPMEM_SLACK_API_URL"))
    port: int = Field(default=3000, ge=0, le=65535, validation_alias=AliasChoices("EPMEM_SLACK_PORT"))
    host: str = Field(default="0.0.0.0", validation_alias=AliasChoices("EPMEM_SLACK_HOST"))
    #: the owner's ``xoxp-`` user token: delegate mode (others' DMs to the owner answered as the owner).
    user_token: SecretStr | None = Field(default=None, validation_alias=AliasChoices("SLACK_USER_TOKEN"))
    #: how long the delegate leaves the owner to answer a message first.
    delegate_delay_s: float = Field(default=30.0, ge=0, validation_alias=AliasChoices("EPMEM_SLACK_DELEGATE_DELAY_S"))


def _value(secret: SecretStr | None) -> str | None:
    """The secret, or None when unset or empty (env.example ships `SLACK_SIGNING_SECRET=` blank)."""
    return secret.get_secret_value() or None if secret is not None else None


def configured(s: SlackSettings) -> bool:
    """A bot token plus a way to receive events (signing secret for HTTP, or app token)."""
    if _value(s.bot_token) is None:
        if _value(s.app_token) or _value(s.signing_secret):
            raise PlatformError("SLACK_APP_TOKEN / SLACK_SIGNING_SECRET is set but SLACK_BOT_TOKEN is not")
        return False
    if not _value(s.signing_secret) and not _value(s.app_token):
        raise PlatformError(
            "SLACK_BOT_TOKEN is set but neither SLACK_SIGNING_SECRET (HTTP events) nor SLACK_APP_TOKEN (Socket Mode) is"
        )
    return True


def problems(s: SlackSettings, owner: str | None) -> list[str]:
    return [NO_OWNER] if _value(s.user_token) and owner is None else []


def config(s: SlackSettings, ctx: ConnectorContext) -> SlackConfig:
    """The connector's config; delegate mode without an owner on Slack refuses to start."""
    bot_token = _value(s.bot_token)
    assert bot_token is not None
    for problem in problems(s, ctx.owner):
        raise PlatformError(problem)
    return SlackConfig(
        bot_token,
        signing_secret=_value(s.signing_secret),
        app_token=_value(s.app_token),
        user_token=_value(s.user_token),
        api_url=s.api_url,
        port=s.port,
        host=s.host,
        owner_identity=ctx.owner,
        max_text_len=ctx.max_text_len,
        delegate_delay_s=s.delegate_delay_s,
        send_timeout_s=ctx.send_timeout_s,
        pacing=scaled(SlackPacing(), ctx.send_pacing),
        timer=ctx.timer,
    )


def connect(s: SlackSettings, ctx: ConnectorContext) -> Connector:
    return SlackConnector(config(s, ctx), ctx.handler, state=ctx.state)


def describe(s: SlackSettings) -> str:
    return f"SLACK_BOT_TOKEN set ({'Socket Mode' if _value(s.app_token) else 'HTTP events'})"


SLACK: Platform[SlackSettings] = Platform(
    name=PLATFORM,
    title="Slack",
    identity=IdentityScheme(PLATFORM, r"[A-Z0-9]+/[A-Z0-9]+", "slack:T0123/U0456"),
    settings=SlackSettings,
    configured=configured,
    connect=connect,
    fake="testkit.fake_slack:FakeSlackApi",
    setup_hint="SLACK_BOT_TOKEN with SLACK_SIGNING_SECRET or SLACK_APP_TOKEN",
    describe=describe,
    problems=problems,
)
