"""The platform registry: everything the rest of the house knows about a platform, in one record.

A platform is a package under ``connectors/`` plus one :class:`Platform` registered in
``connectors/platforms.py`` (the table of built-in platforms). The record says

* ``identity``: how the platform writes its people (``telegram:123``), added to the library's
  schemes (:data:`epmem.identity.SCHEMES`) so policies and ``/link`` accept it;
* ``settings``: a pydantic-settings class that reads the platform's environment variables;
* ``configured``: whether those settings ask for the platform (raises :class:`PlatformError`
  when it is half configured: a typo must not start a bot that silently ignores a platform);
* ``connect``: the connector factory, given a :class:`ConnectorContext`;
* ``fake``: where its loopback fake lives (``"testkit.fake_telegram:FakeTelegram"``): a
  reference, not an import, since connectors never import testkit;
* ``setup_hint``, ``describe``, ``problems``, ``owner_chat``: what ``epmem run``, ``epmem doctor``
  and the outbox say and need, so none of them names a platform.

An explicit table rather than entry points: it works the same from the source tree, an editable
install and a wheel (entry points need the package's metadata reinstalled after every change),
mypy checks every registration, and a test registers a platform of its own with one call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from typing import Any, Generic, TypeVar

from pydantic import AliasChoices, SecretStr, ValidationError
from pydantic_settings import BaseSettings

from connectors.base import Connector, Front, Handler, PersonHook, PlatformState
from connectors.courier import Rate, Timer
from epmem.errors import EpmemError
from epmem.identity import SCHEMES, IdentityScheme, IdentitySchemes

S = TypeVar("S", bound=BaseSettings)
P = TypeVar("P")


class PlatformError(EpmemError, ValueError):
    """A platform is half configured, or its settings contradict the policy; the message says what."""


@dataclass(frozen=True, slots=True)
class ConnectorContext:
    """What every connector is built with, besides its own settings.

    ``owner`` is the owner's identity on this platform, from the policy (None: the owner has
    none there, so owner notes go through another platform); ``send_pacing`` scales the
    platform's documented rates (1 = as documented, 0 = none) and ``send_timeout_s`` bounds a send.
    ``timer`` is the clock and the sleep of every wait the connector makes (tests pass a fake one).
    """

    handler: Handler
    state: PlatformState
    owner: str | None
    max_text_len: int
    send_pacing: float = 1.0
    send_timeout_s: float = 10.0
    timer: Timer = field(default_factory=Timer)
    #: a platform where people install the app for themselves tells the host who came and went
    #: (:data:`~connectors.base.PersonHook`); None: the host does not keep per-person owners.
    on_install: PersonHook | None = None
    on_uninstall: PersonHook | None = None
    #: (command, what it does) for the owner's command menu, shown to the owner only.
    owner_commands: tuple[tuple[str, str], ...] = ()
    #: the platform's shared client (one bot for several owners, :class:`~connectors.base.Front`):
    #: the connector is fed by it for ``owner`` instead of receiving for itself.
    front: Front | None = None


def _no_problems(settings: Any, owner: str | None) -> list[str]:
    return []


def _identity_is_chat(owner: str) -> str | None:
    return owner


@dataclass(frozen=True)
class Platform(Generic[S]):
    """One platform's registration (see the module docstring for each field's use)."""

    name: str
    #: the platform's name for people ("Telegram"), in messages.
    title: str
    identity: IdentityScheme
    settings: type[S]
    configured: Callable[[S], bool]
    connect: Callable[[S, ConnectorContext], Connector]
    fake: str
    #: what to set to turn the platform on, e.g. "TELEGRAM_BOT_TOKEN".
    setup_hint: str
    #: one line for ``epmem doctor`` about configured settings (e.g. which receive mode).
    describe: Callable[[S], str] = lambda settings: "configured"
    #: what is wrong with configured settings, given the owner's identity here (doctor, start).
    problems: Callable[[S, str | None], list[str]] = _no_problems
    #: the chat the outbox reaches the owner in, from the owner's identity on this platform.
    owner_chat: Callable[[str], str | None] = _identity_is_chat
    #: one client for several owners (a shared bot: :class:`~connectors.base.Front`), from the
    #: deployment's settings; None: each owner brings their own credentials.
    front: Callable[[S], Front] | None = None

    def __post_init__(self) -> None:
        if self.identity.platform != self.name:
            raise ValueError(f"platform {self.name!r} declares identities of {self.identity.platform!r}")
        if ":" not in self.fake:
            raise ValueError(f"platform {self.name!r}: fake {self.fake!r} must read 'module:attribute'")

    def secrets(self, settings: BaseSettings) -> list[str]:
        """Every secret value set, so a start error can be redacted before anyone reads it."""
        values = (getattr(settings, name) for name in type(settings).model_fields)
        return [v.get_secret_value() for v in values if isinstance(v, SecretStr) and v.get_secret_value()]


class Registry:
    """The platforms known in this process, in registration order (the order ``epmem run`` starts them)."""

    def __init__(self, schemes: IdentitySchemes = SCHEMES) -> None:
        self._platforms: dict[str, Platform[Any]] = {}
        self._schemes = schemes

    def register(self, platform: Platform[S]) -> Platform[S]:
        if platform.name in self._platforms:
            raise ValueError(f"platform {platform.name!r} is already registered")
        self._schemes.add(platform.identity)
        self._platforms[platform.name] = platform
        return platform

    def unregister(self, name: str) -> None:
        """Forget a platform and its identities (a test's own platform, after the test)."""
        self._platforms.pop(name, None)
        self._schemes.remove(name)

    def get(self, name: str) -> Platform[Any] | None:
        return self._platforms.get(name)

    def __iter__(self) -> Iterator[Platform[Any]]:
        return iter(list(self._platforms.values()))

    def owner_identity(self, name: str, identities: list[str]) -> str | None:
        """The owner's first identity on platform ``name``, from the policy's owner.identities."""
        platform = self._platforms.get(name)
        return next((i for i in identities if platform is not None and platform.identity.matches(i)), None)


#: the registry every part of the house reads; ``connectors/platforms.py`` fills it.
PLATFORMS = Registry()


def env_problems(kind: type[BaseSettings], exc: ValidationError) -> list[str]:
    """``ENV_NAME: what is wrong`` for each error of a settings class read from the environment."""
    problems = []
    for error in exc.errors():
        name = str(error["loc"][0]) if error["loc"] else ""
        field = kind.model_fields.get(name)
        alias = field.validation_alias if field is not None else None
        if field is None:  # reported under its environment name already
            env = name
        else:
            env = str(alias.choices[0]) if isinstance(alias, AliasChoices) else f"EPMEM_{name.upper()}"
        problems.append(f"{env}: {error['msg'].removeprefix('Value error, ')}")
    return problems


def scaled(pacing: P, factor: float) -> P:
    """A pacing dataclass (fields of :class:`Rate`) with every window scaled by ``factor``."""
    rates = [getattr(pacing, f.name) for f in fields(pacing)]  # type: ignore[arg-type]
    return type(pacing)(*(Rate(r.count, r.per_s * factor) for r in rates))
