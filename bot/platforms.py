"""Which platforms to connect, from the environment: each registered platform's settings, plus
the knobs every connector shares.

The platforms themselves are declared in ``connectors/platforms.py`` (one
:class:`~connectors.registry.Platform` each, with the settings class that reads its own
environment variables); this module only asks each of them. Our shared knobs carry the
``EPMEM_`` prefix. Who the owner is on each platform comes from the policy
(``owner.identities``), never from the environment: one place decides who may run owner commands.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from dotenv import dotenv_values
from pydantic import AliasChoices, Field, PrivateAttr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from connectors.base import Front, Handler, PersonHook, PlatformState
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
    #: platforms served by the deployment's shared client, not this owner's own (:meth:`of_owner`).
    _shared: set[str] = PrivateAttr(default_factory=set)

    def model_post_init(self, context: Any, /) -> None:
        """Every registered platform's settings, read now, so a bad value fails at start."""
        self._read(None)

    def _read(self, env_file: Path | None) -> None:
        each: dict[str, BaseSettings] = {}
        for platform in PLATFORMS:
            try:
                each[platform.name] = platform.settings(_env_file=env_file) if env_file else platform.settings()
            except ValidationError as exc:
                # a ConfigError, not a PlatformError: pydantic would wrap a ValueError raised here
                where = f"{env_file}: " if env_file else ""
                raise ConfigError(where + "; ".join(env_problems(platform.settings, exc))) from None
        self._each = each

    @classmethod
    def of_owner(cls, env_file: Path | None, shared: Collection[str] = ()) -> PlatformSettings:
        """One owner's platforms in a deployment of several (bot/owners.py): their credentials
        from their own ``owner.env`` (None: they have none), the shared knobs from the environment.

        A credential the file does not hold came from the process environment (which wins over
        a file): every owner would then share one bot, each polling it, and one owner's contacts
        would reach another's delegate. That is refused, naming the file; except for the
        platforms in ``shared``, whose environment credentials are the deployment's one shared
        client (bot/owners.py): they are not this owner's own (:meth:`configured` leaves them out)."""
        settings = cls()
        if env_file is not None:
            settings._read(env_file)
        settings._shared = set(shared)
        held = {value for value in dotenv_values(env_file).values() if value} if env_file is not None else set()
        for platform in settings.configured():
            if any(secret not in held for secret in platform.secrets(settings.of(platform.name))):
                raise ConfigError(
                    f"{env_file or 'an owner without owner.env'}: {platform.title}'s credentials come from the "
                    f"process environment; with several owners each owner's credentials go in their own "
                    f"owner.env, and the environment holds none ({platform.setup_hint})"
                )
        return settings

    def of(self, name: str) -> BaseSettings:
        """One platform's settings (KeyError for a platform registered after these were read)."""
        return self._each[name]

    def configured(self) -> list[Platform[Any]]:
        """The platforms whose settings ask for them, in registration order; raises
        :class:`PlatformError` for one that is half configured."""
        return [
            p
            for p in PLATFORMS
            if p.name in self._each and p.name not in self._shared and p.configured(self._each[p.name])
        ]

    def context(
        self,
        handler: Handler,
        state: PlatformState,
        owner: str | None,
        max_text_len: int,
        timer: Timer | None = None,
        on_uninstall: PersonHook | None = None,
        front: Front | None = None,
        owner_commands: tuple[tuple[str, str], ...] = (),
    ) -> ConnectorContext:
        """A connector's context with these settings' pacing and send timeout (and ``timer``,
        the connectors' clock: the real one unless a test passes its own); ``on_uninstall``:
        what the host does when someone takes back what they granted (bot/serve.py)."""
        return ConnectorContext(
            handler,
            state,
            owner,
            max_text_len,
            self.send_pacing,
            self.send_timeout,
            timer or Timer(),
            on_uninstall=on_uninstall,
            front=front,
            owner_commands=owner_commands,
        )

    def secrets(self) -> list[str]:
        """Every secret set for any platform, for redacting start errors."""
        return [s for p in PLATFORMS if p.name in self._each for s in p.secrets(self._each[p.name])]


def nothing_to_serve_hint() -> str:
    """``set TELEGRAM_BOT_TOKEN, or SLACK_BOT_TOKEN with ...``, from the registered platforms."""
    return "set " + ", or ".join(p.setup_hint for p in PLATFORMS)
