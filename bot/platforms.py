"""Which platforms to connect, from the environment, and the connector configs for them.

Platform credentials keep the names the platforms' own docs use (``TELEGRAM_BOT_TOKEN``,
``SLACK_BOT_TOKEN``, ``SLACK_SIGNING_SECRET``, ``SLACK_APP_TOKEN``, ``SLACK_USER_TOKEN``); our own
knobs carry the ``EPMEM_`` prefix. Secrets are ``SecretStr`` so a settings object printed or logged by mistake
shows ``**********``.

Who the owner is on each platform comes from the policy (``owner.identities``), never from the
environment: one place decides who may run owner commands.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, fields

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from connectors.courier import Rate
from connectors.slack import SlackConfig, SlackPacing
from connectors.telegram import TelegramConfig, TelegramPacing
from epmem.errors import EpmemError
from epmem.policy import Policy

TELEGRAM_API = "https://api.telegram.org/bot"
SLACK_API = "https://slack.com/api/"


class PlatformError(EpmemError, ValueError):
    """A platform is half configured; the message says what is missing."""


def _env(*names: str) -> AliasChoices:
    return AliasChoices(*names)


class PlatformSettings(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore")

    telegram_bot_token: SecretStr | None = Field(default=None, validation_alias=_env("TELEGRAM_BOT_TOKEN"))
    #: Bot API base ending in ``/bot`` (the token is appended), e.g. a local Bot API server.
    telegram_api_url: str = Field(default=TELEGRAM_API, validation_alias=_env("EPMEM_TELEGRAM_API_URL"))
    #: set to receive updates by webhook at this public HTTPS URL instead of long polling.
    telegram_webhook_url: str | None = Field(default=None, validation_alias=_env("EPMEM_TELEGRAM_WEBHOOK_URL"))
    telegram_webhook_listen: str = Field(default="0.0.0.0", validation_alias=_env("EPMEM_TELEGRAM_WEBHOOK_LISTEN"))
    telegram_webhook_port: int = Field(default=8443, ge=0, le=65535, validation_alias=_env("EPMEM_TELEGRAM_WEBHOOK_PORT"))
    #: checked on every webhook request; a random one is made at start when unset.
    telegram_webhook_secret: SecretStr | None = Field(
        default=None, validation_alias=_env("EPMEM_TELEGRAM_WEBHOOK_SECRET")
    )
    telegram_poll_timeout: float = Field(default=30.0, ge=0, validation_alias=_env("EPMEM_TELEGRAM_POLL_TIMEOUT"))

    slack_bot_token: SecretStr | None = Field(default=None, validation_alias=_env("SLACK_BOT_TOKEN"))
    slack_signing_secret: SecretStr | None = Field(default=None, validation_alias=_env("SLACK_SIGNING_SECRET"))
    slack_app_token: SecretStr | None = Field(default=None, validation_alias=_env("SLACK_APP_TOKEN"))
    slack_api_url: str = Field(default=SLACK_API, validation_alias=_env("EPMEM_SLACK_API_URL"))
    slack_port: int = Field(default=3000, ge=0, le=65535, validation_alias=_env("EPMEM_SLACK_PORT"))
    slack_host: str = Field(default="0.0.0.0", validation_alias=_env("EPMEM_SLACK_HOST"))
    #: the owner's ``xoxp-`` user token: delegate mode (others' DMs to the owner answered as the owner).
    slack_user_token: SecretStr | None = Field(default=None, validation_alias=_env("SLACK_USER_TOKEN"))
    #: how long the delegate leaves the owner to answer a message first.
    slack_delegate_delay_s: float = Field(default=30.0, ge=0,
                                          validation_alias=_env("EPMEM_SLACK_DELEGATE_DELAY_S"))
    #: how closely sends keep to the platforms' documented rates: 1 = as documented (one message
    #: a second per chat...), 0 = no pacing (a local Bot API server, tests).
    send_pacing: float = Field(default=1.0, ge=0, le=10, validation_alias=_env("EPMEM_SEND_PACING"))
    #: seconds a platform has to answer a send; past it the message may or may not be there, so
    #: it is not sent again (no duplicates) but kept for the owner and audited as maybe delivered.
    send_timeout: float = Field(default=10.0, gt=0, le=300, validation_alias=_env("EPMEM_SEND_TIMEOUT"))

    @property
    def telegram(self) -> bool:
        return self.telegram_bot_token is not None and bool(self.telegram_bot_token.get_secret_value())

    @property
    def slack(self) -> bool:
        """A bot token plus a way to receive events (signing secret for HTTP, or app token)."""
        if self.slack_bot_token is None or not self.slack_bot_token.get_secret_value():
            # empty counts as unset: env.example ships `SLACK_SIGNING_SECRET=` blank
            if _set(self.slack_app_token) or _set(self.slack_signing_secret):
                raise PlatformError("SLACK_APP_TOKEN / SLACK_SIGNING_SECRET is set but SLACK_BOT_TOKEN is not")
            return False
        if not _set(self.slack_signing_secret) and not _set(self.slack_app_token):
            raise PlatformError(
                "SLACK_BOT_TOKEN is set but neither SLACK_SIGNING_SECRET (HTTP events) nor SLACK_APP_TOKEN "
                "(Socket Mode) is"
            )
        return True


def _set(secret: SecretStr | None) -> bool:
    return secret is not None and bool(secret.get_secret_value())


def _value(secret: SecretStr | None) -> str | None:
    """The secret, or None when unset or empty."""
    return secret.get_secret_value() or None if secret is not None else None


@dataclass(frozen=True, slots=True)
class Owners:
    """The owner's identity on each platform, from the policy (None: no owner there)."""

    telegram_user_id: int | None
    slack_identity: str | None

    @classmethod
    def of(cls, policy: Policy) -> Owners:
        telegram = next((i for i in policy.owner.identities if i.startswith("telegram:")), None)
        slack = next((i for i in policy.owner.identities if i.startswith("slack:")), None)
        return cls(int(telegram.split(":", 1)[1]) if telegram else None, slack)


def astuple_shallow(pacing: TelegramPacing | SlackPacing) -> tuple[Rate, ...]:
    """A pacing's rates in field order (``dataclasses.astuple`` would take the Rates apart too)."""
    return tuple(getattr(pacing, f.name) for f in fields(pacing))


def _scaled(rate: Rate, factor: float) -> Rate:
    return Rate(rate.count, rate.per_s * factor)


def telegram_config(p: PlatformSettings, owners: Owners, max_text_len: int) -> TelegramConfig:
    assert p.telegram_bot_token is not None
    secret = p.telegram_webhook_secret.get_secret_value() if p.telegram_webhook_secret else None
    if p.telegram_webhook_url and not secret:
        # we register the webhook ourselves at start, so a fresh secret each start is enough.
        secret = secrets.token_urlsafe(32)
    return TelegramConfig(
        token=p.telegram_bot_token.get_secret_value(),
        base_url=p.telegram_api_url,
        webhook_url=p.telegram_webhook_url or None,
        webhook_listen=p.telegram_webhook_listen,
        webhook_port=p.telegram_webhook_port,
        owner_user_id=owners.telegram_user_id,
        max_text_len=max_text_len,
        secret_token=secret,
        poll_timeout=p.telegram_poll_timeout,
        send_timeout_s=p.send_timeout,
        pacing=TelegramPacing(*(_scaled(r, p.send_pacing) for r in astuple_shallow(TelegramPacing()))),
    )


def slack_config(p: PlatformSettings, owners: Owners, max_text_len: int) -> SlackConfig:
    assert p.slack_bot_token is not None
    if _set(p.slack_user_token) and owners.slack_identity is None:
        raise PlatformError("SLACK_USER_TOKEN is set but the policy names no Slack owner identity "
                            "(owner.identities: slack:TEAM/USER): whose messages would the delegate answer?")
    return SlackConfig(
        p.slack_bot_token.get_secret_value(),
        signing_secret=_value(p.slack_signing_secret),
        app_token=_value(p.slack_app_token),
        user_token=_value(p.slack_user_token),
        api_url=p.slack_api_url,
        port=p.slack_port,
        host=p.slack_host,
        owner_identity=owners.slack_identity,
        max_text_len=max_text_len,
        delegate_delay_s=p.slack_delegate_delay_s,
        send_timeout_s=p.send_timeout,
        pacing=SlackPacing(*(_scaled(r, p.send_pacing) for r in astuple_shallow(SlackPacing()))),
    )
