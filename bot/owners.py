"""Several owners in one deployment: each with their own data folder, and nothing else shared.

A data folder serves one owner, as it always did. A family or a team that wants a delegate for
each person gives each of them a folder under ``owners/`` (``epmem --owner-id ID init``): in it
sit that owner's policy, state and audit databases, embedded vector store and ``owner.env``,
the owner's own platform credentials (their bot token, their Slack app). ``epmem run`` serves
every owner from one process, each through their own :class:`~bot.runtime.Runtime` and
:class:`~bot.serve.Service`.

Isolation is by construction rather than by filtering: an owner's runtime opens only files
under that owner's folder, so no recall, ``/who-knows``, audit record, consultation, ledger
entry or heard-it record of one owner is even reachable from another's. What the runtimes
share holds nobody's data: the embedder and the relevance models (loaded once), and on a
Qdrant server the collections, where every point carries its owner's tenant id and every read
filters on it (epmem/store). An owner who writes to another owner's delegate is an ordinary
contact there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from connectors.base import Front
from connectors.courier import Timer
from connectors.registry import PLATFORMS

from bot.config import ACTIVE_POLICY_NAME, OWNER_ID_PATTERN, OWNERS_FOLDER, ConfigError, Settings
from bot.platforms import PlatformSettings

if TYPE_CHECKING:
    from bot.serve import Deployment

log = structlog.get_logger(__name__)

#: an owner's own platform credentials, in their folder (dotenv format, the variables of README's table).
OWNER_ENV = "owner.env"


@dataclass(frozen=True, slots=True)
class OwnerHome:
    """One owner of a deployment: their settings (their data folder, their tenant id)."""

    owner_id: str
    settings: Settings
    #: None: the one owner of a data folder (the environment's platforms are theirs). Else one
    #: of several, and the platforms whose one client every owner shares (a shared bot).
    shared: tuple[str, ...] | None = None

    @property
    def env_file(self) -> Path | None:
        path = self.settings.data_dir / OWNER_ENV
        return path if path.is_file() else None

    def platforms(self) -> PlatformSettings:
        """Their own platforms: the one owner's, from their ``owner.env`` or else the
        environment; one of several owners', from their ``owner.env`` only (whose credentials
        must all be the file's), the shared ones apart."""
        env_file = self.env_file
        if self.shared is None:
            return PlatformSettings.of_owner(env_file) if env_file is not None else PlatformSettings()
        return PlatformSettings.of_owner(env_file, self.shared)


def shared_platforms() -> tuple[PlatformSettings, tuple[str, ...]]:
    """The environment's platforms in a deployment of several owners, and which of them are a
    client every owner shares (a shared bot: its platform has a front). Any other platform
    credential in the environment is refused, owner by owner (:meth:`OwnerHome.platforms`)."""
    env = PlatformSettings()
    return env, tuple(p.name for p in env.configured() if p.front is not None)


def owner_settings(root: Settings, owner_id: str) -> Settings:
    """``root``'s settings for one owner of its deployment (``EPMEM_OWNER`` does the same)."""
    if root.owner is not None:
        raise ConfigError(f"EPMEM_OWNER={root.owner!r} already chose one owner")
    # through __init__, not model_validate (which runs the owner's validator a second time)
    return Settings(**root.model_dump(exclude={"owner_id", "owner"}), owner=owner_id, owner_id=owner_id)


def _has_policy(settings: Settings) -> bool:
    return settings.policy is not None or (settings.data_dir / ACTIVE_POLICY_NAME).is_file()


def owner_homes(root: Settings) -> list[OwnerHome]:
    """Whom ``root``'s data folder serves: one owner when ``EPMEM_OWNER`` names one or there is
    no ``owners/`` folder (the plain data folder, as ever); else the folder's own owner (if it
    has a policy) and every owner under ``owners/``. A folder there that is not a valid owner
    id, or has no policy, stops the start: an owner silently left out would go unanswered."""
    folder = root.data_dir / OWNERS_FOLDER
    if root.owner is not None or not folder.is_dir():
        return [OwnerHome(root.owner or root.owner_id, root)]
    _, shared = shared_platforms()
    homes = [OwnerHome(root.owner_id, root, shared)] if _has_policy(root) else []
    for path in sorted(p for p in folder.iterdir() if p.is_dir()):
        if not re.fullmatch(OWNER_ID_PATTERN, path.name):
            raise ConfigError(f"{path}: an owner's folder is named by an owner id (a-z, 0-9, '-', '_')")
        if path.name == root.owner_id and homes:
            raise ConfigError(f"{path}: owner id {path.name!r} is the data folder's own owner's (EPMEM_OWNER_ID)")
        home = OwnerHome(path.name, owner_settings(root, path.name), shared)
        if not _has_policy(home.settings):
            raise ConfigError(f"{path} has no active policy: epmem --owner-id {path.name} init")
        homes.append(home)
    if not homes:
        raise ConfigError(f"{folder} holds no owner: epmem --owner-id ID init")
    _one_bot_each(homes)
    return homes


def _one_bot_each(homes: list[OwnerHome]) -> None:
    """Two owners on one bot token would poll (or be sent) each other's messages."""
    seen: dict[str, str] = {}
    for home in homes:
        platforms = home.platforms()
        for platform in platforms.configured():
            for secret in platform.secrets(platforms.of(platform.name)):
                other = seen.setdefault(secret, home.owner_id)
                if other != home.owner_id:
                    raise ConfigError(
                        f"owners {other!r} and {home.owner_id!r} have the same {platform.title} credentials: "
                        "each owner's delegate is their own bot (or app)"
                    )


async def open_services(homes: list[OwnerHome], timer: Timer | None = None) -> Deployment:
    """Every owner's runtime (sharing one embedder) and service, and the platforms' shared
    clients; what opened is closed again if one fails. An owner with no platform gets no
    console (the terminal is nobody's) and is named in the log: nobody can write to them."""
    from bot.runtime import Runtime, embedder_from_settings
    from bot.serve import Deployment, Service

    env, shared = shared_platforms() if len(homes) > 1 else (None, ())
    fronts: dict[str, Front] = {}
    for name in shared:
        platform = PLATFORMS.get(name)
        assert platform is not None and platform.front is not None and env is not None
        fronts[name] = platform.front(env.of(name))
    embedder = embedder_from_settings(homes[0].settings)
    deployment = Deployment([], list(fronts.values()))
    try:
        for home in homes:
            platforms = home.platforms()
            runtime = await Runtime.open(home.settings, embedder=embedder)
            try:
                service = Service(runtime, platforms, timer=timer, console=False, fronts=(env, fronts))
            except BaseException:
                await runtime.close()
                raise
            deployment.services.append(service)
            if not service.connectors:
                log.warning("owner_unreachable", owner=home.owner_id, hint=f"set their credentials in {OWNER_ENV}")
    except BaseException:
        await deployment.close()
        raise
    return deployment
