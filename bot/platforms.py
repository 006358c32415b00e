"""Which platforms to connect, from the environment: each registered platform's settings, plus
the knobs every connector shares.

The platforms themselves are declared in ``connectors/platforms.py`` (one
:class:`~connectors.registry.Platform` each, with the settings class that reads its own
environment variables); this module only asks each of them. Our shared knobs carry the
``EPMEM_`` prefix. Who the owner is on each platform comes from the policy
(``owner.identities``), never from the environment: one place decides who may run owner commands.
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, Field, PrivateAttr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from connectors.base import Handler, PlatformState
from connectors.courier import Timer
from connectors.registry import PLATFORMS, ConnectorContext, Platform, PlatformError, env_problems

from bot.config import ConfigError

__all__ = ["ConnectorContext", "PlatformError", "PlatformSettings"]


class PlatformSettings(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore")

    #: how closely sends keep to the platforms' documented rates: 1 = as documented (one message
    #: a second per chat...), 0 = no pacing (a local Bot API server, tests).
    send_pacing: float = Field(default=1.0, ge=0, le=10, validation_alias=AliasChoices("EPMEM_SEND_PACING"))
    #: seconds a platform has to answer a send; past it the message may or may not be there, so
    #: it is not sent again (no duplicates) but kept for the owner and audited as maybe delivered.
    send_timeout: float = Field(default=10.0, gt=0, le=300, validation_alias=AliasChoices("EPMEM_SEND_TIMEOUT"))
    _each: dict[str, BaseSettings] = PrivateAttr(default_factory=dict)

    def model_post_init(self, context: Any, /) -> None:
        """Every registered platform's settings, read now, so a bad value fails at start."""
        for platform in PLATFORMS:
            try:
                self._each[platform.name] = platform.settings()
            except ValidationError as exc:
                # a ConfigError, not a PlatformError: pydantic would wrap a ValueError raised here
                raise ConfigError("; ".join(env_problems(platform.settings, exc))) from None

    def of(self, name: str) -> BaseSettings:
        """One platform's settings (KeyError for a platform registered after these were read)."""
        return self._each[name]

    def configured(self) -> list[Platform[Any]]:
        """The platforms whose settings ask for them, in registration order; raises
        :class:`PlatformError` for one that is half configured."""
        return [p for p in PLATFORMS if p.name in self._each and p.configured(self._each[p.name])]

    def context(
        self, handler: Handler, state: PlatformState, owner: str | None, max_text_len: int, timer: Timer | None = None
    ) -> ConnectorContext:
        """A connector's context with these settings' pacing and send timeout (and ``timer``,
        the connectors' clock: the real one unless a test passes its own)."""
        return ConnectorContext(
            handler, state, owner, max_text_len, self.send_pacing, self.send_timeout, timer or Timer()
        )

    def secrets(self) -> list[str]:
        """Every secret set for any platform, for redacting start errors."""
        return [s for p in PLATFORMS if p.name in self._each for s in p.secrets(self._each[p.name])]


def nothing_to_serve_hint() -> str:
    """``set TELEGRAM_BOT_TOKEN, or SLACK_BOT_TOKEN with ...``, from the registered platforms."""
    return "set " + ", or ".join(p.setup_hint for p in PLATFORMS)
