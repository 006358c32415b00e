"""Installing per person: Slack's OAuth flow ("Add to Slack") through Bolt's own classes.

Each person adds the app with the delegate's user scopes (:data:`USER_SCOPES`, the same as the
shipped manifest's) on top of the bot's; Bolt's :class:`AsyncOAuthFlow` serves ``/slack/install``
and ``/slack/oauth_redirect`` on the events runner, exchanges the code at ``oauth.v2.access``
and saves the :class:`Installation` here; Bolt's ``AsyncInstallationStoreAuthorize`` then
authorizes every event from this store (per team, and per user for the user token).

Where the installations live: :class:`SlackInstallations` keeps them as routes of the host's
:class:`~connectors.base.PlatformState` (``route`` / ``save_route``), so they sit in the state
database the bot owns and a connector still opens no database of its own (Bolt's SQLite and
file stores would each be a second, unowned file full of tokens). Keys, under one app
(``client_id``) and one workspace (``E-T``)::

    install/<client>/<E>-<T>/bot          the workspace's bot (the latest one)
    install/<client>/<E>-<T>/user/<U>     U's installation (user token and scopes)
    install/<client>/<E>-<T>/latest       the latest installation in the workspace
    install/<client>/<E>-<T>/users        {"users": [U, ...]}: who has an installation
    install/<client>/workspaces           {"workspaces": [[E, T], ...]}

Routes have no listing, hence the two indexes; they are read and written under one lock, so
two installs in one process cannot lose each other (two workers sharing a state database could:
see docs/SLACK_OAUTH.md).

One deployment serves one workspace: the policy owner's (``slack:<TEAM>/...``), or else the
first one installed. An installation from any other workspace (an org-wide one included) is
refused before it is saved (Bolt answers with its failure page): the bot posts with the one
workspace's bot token, and someone else's workspace must not swap it for theirs.

The OAuth ``state``: slack-sdk's :class:`StatelessOAuthStateStore`, an HMAC-signed expiring
token, bound to the installer's browser by Bolt's state cookie. A stored state would let anyone
who can reach ``/slack/install`` write rows into the state database; a signed one costs nothing
to issue and is refused when forged or stale. It can be replayed within its lifetime by the
browser that holds the cookie, but Slack's codes are single-use. slack-sdk's token carries
only its expiry, in whole seconds: two browsers sent to Slack in the same second got the same
state, so the cookie no longer told them apart (anyone fetching the install page could learn
another installer's cookie); :class:`SignedStates` adds a random nonce to the claims.

Uninstalling: ``tokens_revoked`` (someone removed their authorization) and ``app_uninstalled``
(the app left the workspace) delete what they revoke here through Bolt's own
:class:`AsyncTokenRevocationListeners`, then call the host's ``on_uninstall`` once per person
whose user token went, with their ``slack:<TEAM>/<USER>`` identity: the bot erases that
owner's data as ``/forget`` does and audits it. Logs carry ids, never tokens.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import structlog
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.error import BoltError
from slack_bolt.listener.async_builtins import AsyncTokenRevocationListeners
from slack_bolt.oauth.async_callback_options import AsyncCallbackOptions, AsyncFailureArgs, AsyncSuccessArgs
from slack_bolt.oauth.async_oauth_settings import AsyncOAuthSettings
from slack_bolt.response import BoltResponse
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore
from slack_sdk.oauth.installation_store.models.bot import Bot
from slack_sdk.oauth.installation_store.models.installation import Installation
from slack_sdk.oauth.state_store.stateless import StatelessOAuthStateStore

from connectors.base import PersonHook, PlatformState
from connectors.slack.config import SlackOAuth
from connectors.slack.ids import PLATFORM, SLACK_ID, identity

log = structlog.get_logger(__name__)

INSTALL_PATH = "/slack/install"
REDIRECT_PATH = "/slack/oauth_redirect"
#: what the bot asks for (docker/slack-app-manifest.yaml's ``oauth_config.scopes.bot``).
BOT_SCOPES = (
    "app_mentions:read",
    "channels:read",
    "groups:read",
    "mpim:read",
    "channels:history",
    "groups:history",
    "mpim:history",
    "im:read",
    "im:history",
    "im:write",
    "chat:write",
    "commands",
    "users:read",
)
#: what each person grants the delegate (the manifest's ``oauth_config.scopes.user``).
USER_SCOPES = (
    "im:history",
    "im:read",
    "channels:history",
    "groups:history",
    "mpim:history",
    "channels:read",
    "groups:read",
    "mpim:read",
    "chat:write",
)


class SignedStates(StatelessOAuthStateStore):
    """slack-sdk's signed, expiring state with a random nonce among its claims (see the module
    doc); ``consume`` is slack-sdk's own: signature and expiry."""

    def issue(self, *args: Any, **kwargs: Any) -> str:
        header = self._b64url_encode(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
        claims = {"exp": int(time.time()) + self.expiration_seconds, "nonce": secrets.token_urlsafe(16)}
        payload = self._b64url_encode(json.dumps(claims, separators=(",", ":")).encode())
        return f"{header}.{payload}.{self._sign(f'{header}.{payload}')}"


def _part(value: str | None) -> str:
    return value or "none"


class SlackInstallations(AsyncInstallationStore):
    """Bolt's installation store over the host's routes (see the module doc for the keys)."""

    def __init__(
        self, state: PlatformState, client_id: str, team_id: str | None = None, logger: logging.Logger | None = None
    ) -> None:
        self.state = state
        self.client_id = client_id
        #: the workspace served (None: the first one installed).
        self.team_id = team_id
        self._logger = logger or logging.getLogger(__name__)
        self._lock = asyncio.Lock()

    @property
    def logger(self) -> logging.Logger:
        return self._logger

    # ------------------------------------------------------------------ keys and documents

    def _key(self, enterprise_id: str | None, team_id: str | None, *rest: str) -> str:
        return "/".join(("install", self.client_id, f"{_part(enterprise_id)}-{_part(team_id)}", *rest))

    async def _get(self, key: str) -> dict[str, Any] | None:
        return await self.state.route(PLATFORM, key)

    async def _put(self, key: str, value: dict[str, Any] | None) -> None:
        await self.state.save_route(PLATFORM, key, value)

    async def users(self, enterprise_id: str | None, team_id: str | None) -> list[str]:
        """Who in this workspace has an installation (a user token) here."""
        doc = await self._get(self._key(enterprise_id, team_id, "users"))
        return [str(u) for u in (doc or {}).get("users", [])]

    async def workspaces(self) -> list[tuple[str | None, str | None]]:
        """Every (enterprise, team) with something stored, oldest first."""
        doc = await self._get(f"install/{self.client_id}/workspaces")
        return [(e, t) for e, t in (doc or {}).get("workspaces", [])]

    async def _set_users(self, enterprise_id: str | None, team_id: str | None, users: list[str]) -> None:
        await self._put(self._key(enterprise_id, team_id, "users"), {"users": users} if users else None)

    async def _set_workspace(self, enterprise_id: str | None, team_id: str | None, present: bool) -> None:
        key = f"install/{self.client_id}/workspaces"
        known = [w for w in await self.workspaces() if w != (enterprise_id, team_id)]
        known += [(enterprise_id, team_id)] if present else []
        await self._put(key, {"workspaces": [list(w) for w in known]} if known else None)

    # ------------------------------------------------------------------ AsyncInstallationStore

    async def serving(self) -> str | None:
        """The workspace this deployment serves, once known."""
        return self.team_id or next((t for _, t in await self.workspaces() if t), None)

    async def async_save(self, installation: Installation) -> None:
        e, t, u = installation.enterprise_id, installation.team_id, installation.user_id
        async with self._lock:
            serving = await self.serving()
            if installation.is_enterprise_install or not t or (serving is not None and t != serving):
                log.warning("slack.install_refused", enterprise_id=e, team_id=t, user_id=u, serving=serving)
                raise BoltError("an installation in a workspace this delegate does not serve")
            if installation.bot_token is not None:
                await self._put(self._key(e, t, "bot"), dict(installation.to_bot().__dict__))
            document = dict(installation.__dict__)
            await self._put(self._key(e, t, "latest"), document)
            await self._put(self._key(e, t, "user", u), document)
            users = [x for x in await self.users(e, t) if x != u]
            await self._set_users(e, t, [*users, u])
            await self._set_workspace(e, t, True)
        log.info("slack.installation_saved", enterprise_id=e, team_id=t, user_id=u)

    async def async_save_bot(self, bot: Bot) -> None:
        if bot.bot_token is None:
            return
        async with self._lock:
            await self._put(self._key(bot.enterprise_id, bot.team_id, "bot"), dict(bot.__dict__))
            await self._set_workspace(bot.enterprise_id, bot.team_id, True)

    async def async_find_bot(
        self, *, enterprise_id: str | None, team_id: str | None, is_enterprise_install: bool | None = False
    ) -> Bot | None:
        doc = await self._get(self._key(enterprise_id, None if is_enterprise_install else team_id, "bot"))
        return Bot(**doc) if doc else None

    async def async_find_installation(
        self,
        *,
        enterprise_id: str | None,
        team_id: str | None,
        user_id: str | None = None,
        is_enterprise_install: bool | None = False,
    ) -> Installation | None:
        team = None if is_enterprise_install else team_id
        doc = await self._get(self._key(enterprise_id, team, *(("user", user_id) if user_id else ("latest",))))
        if doc is None:
            return None
        installation = Installation(**doc)
        # a user's installation carries the bot token of its day: the workspace's latest bot
        # wins (as slack-sdk's own stores do, bolt-python#664)
        bot = await self.async_find_bot(
            enterprise_id=enterprise_id, team_id=team_id, is_enterprise_install=is_enterprise_install
        )
        if bot is not None and bot.bot_token != installation.bot_token:
            installation.bot_id, installation.bot_user_id = bot.bot_id, bot.bot_user_id
            installation.bot_token, installation.bot_scopes = bot.bot_token, bot.bot_scopes
            installation.bot_refresh_token = bot.bot_refresh_token
            installation.bot_token_expires_at = bot.bot_token_expires_at
        return installation

    async def async_delete_bot(self, *, enterprise_id: str | None, team_id: str | None) -> None:
        async with self._lock:
            await self._put(self._key(enterprise_id, team_id, "bot"), None)
            await self._forget_workspace_if_empty(enterprise_id, team_id)

    async def async_delete_installation(
        self, *, enterprise_id: str | None, team_id: str | None, user_id: str | None = None
    ) -> None:
        """``user_id``'s installation (every one in the workspace when None). The workspace's
        "latest" must not keep a deleted user's token: it becomes the newest remaining one."""
        async with self._lock:
            users = await self.users(enterprise_id, team_id)
            gone = users if user_id is None else [u for u in users if u == user_id] or [user_id]
            for user in gone:
                await self._put(self._key(enterprise_id, team_id, "user", user), None)
            remaining = [u for u in users if u not in gone]
            await self._set_users(enterprise_id, team_id, remaining)
            latest = await self._get(self._key(enterprise_id, team_id, "latest"))
            if latest is not None and (not remaining or latest.get("user_id") in gone):
                newest = (
                    await self._get(self._key(enterprise_id, team_id, "user", remaining[-1])) if remaining else None
                )
                await self._put(self._key(enterprise_id, team_id, "latest"), newest)
            await self._forget_workspace_if_empty(enterprise_id, team_id)

    async def _forget_workspace_if_empty(self, enterprise_id: str | None, team_id: str | None) -> None:
        bot = await self._get(self._key(enterprise_id, team_id, "bot"))
        if bot is None and not await self.users(enterprise_id, team_id):
            await self._set_workspace(enterprise_id, team_id, False)


# ---------------------------------------------------------------------- uninstalls


class Uninstalls:
    """The ``tokens_revoked`` and ``app_uninstalled`` listeners: Bolt's own deletions, then the
    host told who is gone (bound methods; Bolt injects ``event``, ``body`` and ``context``)."""

    def __init__(
        self,
        store: SlackInstallations,
        on_uninstall: PersonHook,
        claim: Callable[[dict[str, Any]], Awaitable[bool]],
        changed: Callable[[], Awaitable[None]],
        tracked: Callable[[], AbstractAsyncContextManager[None]],
    ) -> None:
        self.store = store
        self.on_uninstall = on_uninstall
        self._claim = claim
        #: the connector's listener tracking: ``stop()`` lets an erasure under way finish.
        self._tracked = tracked
        #: awaited once the store lost something (the connector takes up what remains).
        self._changed = changed
        self._builtin = AsyncTokenRevocationListeners(store)

    async def tokens_revoked(self, body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext) -> None:
        """Each person in ``tokens.oauth`` lost their user token: their installation goes, and
        they are gone as owners. A revoked bot token (``tokens.bot``) drops the workspace's bot;
        the people's own installations stay until they, or the app, go."""
        async with self._tracked():
            if not await self._claim(body):
                return
            tokens = event.get("tokens") or {}
            users = [u for u in tokens.get("oauth") or [] if isinstance(u, str)]
            log.info("slack.tokens_revoked", team_id=context.team_id, users=users, bot=bool(tokens.get("bot")))
            await self._builtin.handle_tokens_revoked_events(event, context)
            await self._changed()
            await self._gone(context.team_id, users)

    async def app_uninstalled(self, body: dict[str, Any], context: AsyncBoltContext) -> None:
        """The app left the workspace: every installation there goes, every installer with it."""
        async with self._tracked():
            if not await self._claim(body):
                return
            users = await self.store.users(context.enterprise_id, context.team_id)
            log.info("slack.app_uninstalled", team_id=context.team_id, users=users)
            await self._builtin.handle_app_uninstalled_events(context)
            await self._changed()
            await self._gone(context.team_id, users)

    async def _gone(self, team_id: str | None, users: list[str]) -> None:
        """``on_uninstall`` once per person, each on their own: one failure stops nobody else's
        erasure (Bolt has acknowledged already: Slack will not send the event again)."""
        for user in users:
            if not team_id or not SLACK_ID.match(team_id) or not SLACK_ID.match(user):
                log.warning("slack.uninstall_unattributable", team_id=team_id)
                continue
            who = identity(team_id, user)
            try:
                await self.on_uninstall(who)
            except Exception:
                log.exception("slack.uninstall_failed", identity=who)
            else:
                log.info("slack.uninstalled", identity=who)


# ---------------------------------------------------------------------- Bolt's settings


def oauth_settings(
    oauth: SlackOAuth,
    store: SlackInstallations,
    *,
    logger: logging.Logger,
    on_installed: Callable[[Installation], Awaitable[None]],
) -> AsyncOAuthSettings:
    """Bolt's OAuth settings: our store and a signed state, the manifest's scopes, and
    ``on_installed(installation)`` awaited before Bolt's own success page."""

    async def success(args: AsyncSuccessArgs) -> BoltResponse:
        await on_installed(args.installation)
        return await args.default.success(args)

    async def failure(args: AsyncFailureArgs) -> BoltResponse:
        log.warning("slack.install_failed", reason=args.reason, status=args.suggested_status_code)
        return await args.default.failure(args)

    return AsyncOAuthSettings(
        client_id=oauth.client_id,
        client_secret=oauth.client_secret,
        scopes=list(BOT_SCOPES),
        user_scopes=list(USER_SCOPES),
        redirect_uri=oauth.redirect_uri,
        install_path=INSTALL_PATH,
        redirect_uri_path=REDIRECT_PATH,
        callback_options=AsyncCallbackOptions(success=success, failure=failure),
        authorization_url=oauth.authorization_url,
        installation_store=store,
        state_store=SignedStates(
            expiration_seconds=oauth.state_expiration_s, signing_secret=oauth.state_secret(), logger=logger
        ),
        state_expiration_seconds=oauth.state_expiration_s,
        logger=logger,
    )
