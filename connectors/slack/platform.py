"""Slack's registration: its identities, settings from the environment, and its connector.

Credentials keep the names Slack's own docs use (``SLACK_BOT_TOKEN``, ``SLACK_SIGNING_SECRET``,
``SLACK_APP_TOKEN``, ``SLACK_USER_TOKEN``; for per-person installs Bolt's ``SLACK_CLIENT_ID``,
``SLACK_CLIENT_SECRET``, ``SLACK_REDIRECT_URI``); our knobs carry the ``EPMEM_`` prefix. Who the
owner is here comes from the policy (``ConnectorContext.owner``), never from the environment.

Two ways to run, never both: one workspace with the tokens pasted in (``SLACK_BOT_TOKEN``, and
``SLACK_USER_TOKEN`` for delegate mode), or per-person installs (``SLACK_CLIENT_ID`` and
``SLACK_CLIENT_SECRET``): everyone adds the app at ``/slack/install`` and every token comes
from an installation (connectors/slack/oauth.py).
"""

from __future__ import annotations

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from connectors.base import Connector
from connectors.registry import ConnectorContext, Platform, PlatformError, scaled
from connectors.slack.app import SlackConnector
from connectors.slack.config import SlackConfig, SlackOAuth, SlackPacing
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
    #: per-person installs ("Add to Slack" at /slack/install): the app's OAuth credentials.
    client_id: str | None = Field(default=None, validation_alias=AliasChoices("SLACK_CLIENT_ID"))
    client_secret: SecretStr | None = Field(default=None, validation_alias=AliasChoices("SLACK_CLIENT_SECRET"))
    #: the Redirect URL registered with Slack (https://.../slack/oauth_redirect); unset: the only one.
    redirect_uri: str | None = Field(default=None, validation_alias=AliasChoices("SLACK_REDIRECT_URI"))


def _value(secret: SecretStr | None) -> str | None:
    """The secret, or None when unset or empty (env.example ships `SLACK_SIGNING_SECRET=` blank)."""
    return secret.get_secret_value() or None if secret is not None else None


def _per_person(s: SlackSettings) -> bool:
    """Per-person installs asked for (raises PlatformError when half set, or mixed with tokens)."""
    client_id, secret = s.client_id or None, _value(s.client_secret)
    if client_id is None and secret is None:
        return False
    if client_id is None or secret is None:
        raise PlatformError("SLACK_CLIENT_ID and SLACK_CLIENT_SECRET go together (per-person installs)")
    if _value(s.bot_token) or _value(s.user_token) or _value(s.app_token):
        raise PlatformError(
            "SLACK_CLIENT_ID is set (per-person installs: every token comes from an installation): "
            "unset SLACK_BOT_TOKEN, SLACK_USER_TOKEN and SLACK_APP_TOKEN"
        )
    if not _value(s.signing_secret):
        raise PlatformError("SLACK_CLIENT_ID is set but SLACK_SIGNING_SECRET is not (per-person installs use HTTP)")
    return True


def authorization_url(api_url: str) -> str:
    """Slack's consent page beside its Web API: https://slack.com/oauth/v2/authorize for
    https://slack.com/api/ (and a loopback Slack's own for a loopback API)."""
    return api_url.rstrip("/").removesuffix("/api") + "/oauth/v2/authorize"


def configured(s: SlackSettings) -> bool:
    """A bot token plus a way to receive events (signing secret for HTTP, or app token), or
    per-person installs (the app's client id and secret, and the signing secret)."""
    if _per_person(s):
        return True
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
    oauth = (
        SlackOAuth(
            s.client_id,
            _value(s.client_secret) or "",
            redirect_uri=s.redirect_uri or None,
            authorization_url=authorization_url(s.api_url),
        )
        if _per_person(s) and s.client_id
        else None
    )
    assert bot_token is not None or oauth is not None
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
        oauth=oauth,
    )


def connect(s: SlackSettings, ctx: ConnectorContext) -> Connector:
    return SlackConnector(
        config(s, ctx), ctx.handler, state=ctx.state, on_install=ctx.on_install, on_uninstall=ctx.on_uninstall
    )


def describe(s: SlackSettings) -> str:
    if _per_person(s):
        return "SLACK_CLIENT_ID set (per-person installs at /slack/install, HTTP events)"
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
