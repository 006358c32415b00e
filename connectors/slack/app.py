"""Slack connector: Bolt (AsyncApp) events in, ``Inbound`` to the agent, ``Outbound`` back out.

The connector only translates. It never decides who may learn what; it gives the agent the
facts the decision needs and nothing it could be fooled by: ids from the signed payload
(:mod:`~connectors.slack.ids`), the readers of a reply (:mod:`~connectors.slack.audience`),
which messages are questions (:mod:`~connectors.slack.events`), and it delivers the answer
(:mod:`~connectors.slack.delivery`).

Transport: Socket Mode when an app-level token is configured (no public URL needed), otherwise
the Events API over HTTP, served by Bolt's aiohttp app behind an ``AppRunner``; Bolt verifies
the request signature and timestamp there and answers 401 to anything unsigned or stale.
Bolt acknowledges events before its listeners run, so a listener that crashes still answered
200 and Slack will not retry; each event is claimed once through the host's state instead.

Start-up makes one ``auth.test`` per token: Bolt is handed the result through ``authorize``
rather than a token of its own (it would test it again, and warn that the client's token
shadows it).

With ``config.oauth`` there is no token to start with: people install the app for themselves
(:mod:`~connectors.slack.oauth`), Bolt serves the install pages on the events runner and
authorizes each event from the installations the host's state keeps; the bot posts with the
served workspace's bot token, and the policy's owner, once installed, gets delegate mode.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import structlog
from aiohttp import web
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_sdk.oauth.installation_store.models.installation import Installation
from slack_sdk.web.async_client import AsyncWebClient

from connectors.base import Action, Handler, Inbound, PersonHook, PlatformState, request_context
from connectors.courier import DeliveryFailed
from connectors.logs import bolt_logger, guard_loggers, sdk_logger
from connectors.slack.audience import SlackAudience
from connectors.slack.blocks import ACTION_ID_PATTERN
from connectors.slack.config import SlackConfig
from connectors.slack.delegate import FollowedThreads, OwnerWatch
from connectors.slack.delivery import SlackDelivery, SlackTarget, retry_handlers
from connectors.slack.events import Listeners
from connectors.slack.history import posted
from connectors.slack.ids import PLATFORM, ChatRef, identity, team_of_identity, user_of_identity
from connectors.slack.oauth import SlackInstallations, Uninstalls, oauth_settings
from epmem.errors import EpmemError

log = structlog.get_logger(__name__)

_DRAIN_TIMEOUT_S = 5.0
_SOCKET_CONNECT_TIMEOUT_S = 30.0


class SlackStartError(EpmemError, RuntimeError):
    """The Slack side is misconfigured in a way that must stop the start (never a token in it)."""


class SlackConnector(Listeners):
    """The Slack side of the bot: implements ``connectors.base.Connector``."""

    platform = PLATFORM

    def __init__(
        self,
        config: SlackConfig,
        handler: Handler,
        *,
        state: PlatformState,
        on_install: PersonHook | None = None,
        on_uninstall: PersonHook | None = None,
    ) -> None:
        if config.app_token is None and not config.signing_secret:
            # HTTP events without a signing secret would accept anyone's forged events.
            raise ValueError("Slack HTTP events need a signing_secret (or set app_token for Socket Mode)")
        if config.oauth is not None and (config.bot_token or config.user_token or config.app_token):
            # every token comes from an installation, and the OAuth redirect needs the HTTP runner
            raise ValueError("per-person installs (oauth) take no bot_token, user_token or app_token")
        if config.oauth is None and not config.bot_token:
            raise ValueError("Slack needs a bot_token (or oauth, for per-person installs)")
        self.config = config
        self.state = state
        self._handler = handler
        self._on_install = on_install
        self._on_uninstall = on_uninstall
        # every client logs through a logger that withholds request and response bodies
        # slack_sdk takes whole seconds; a timed-out post is not retried by anyone (it may be there)
        self.client = self._web_client(config.bot_token)
        self.user_client = self._web_client(config.user_token) if config.user_token else None
        guard_loggers(
            "slack_sdk", "slack_sdk.socket_mode", "slack_sdk.oauth", "aiohttp.access", "aiohttp.server", "aiohttp.web"
        )
        #: per-person installs: where Bolt keeps and finds them (None: one token, as configured).
        self.installations = (
            SlackInstallations(
                state, config.oauth.client_id, team_of_identity(config.owner_identity or ""), logger=bolt_logger()
            )
            if config.oauth
            else None
        )
        self.app = self._bolt_app()
        self.audience = SlackAudience(config.members_ttl_s, config.timer.now)
        self.delivery = SlackDelivery(self.client, self.user_client, config, state, self._delivered)
        owner = user_of_identity(config.owner_identity) if config.owner_identity else None
        self.watch = OwnerWatch(owner, self.delivery.own_posts)
        self.threads = FollowedThreads(state, config.follow_thread_days)
        self.bot_user_id: str | None = None
        #: the TCP port actually bound (meaningful after ``start()`` in HTTP mode; port 0 allowed).
        self.port: int | None = None
        self._auth: AuthorizeResult | None = None
        self._runner: web.AppRunner | None = None
        self._socket: AsyncSocketModeHandler | None = None
        self._running = False
        self._inflight: set[asyncio.Task[Any]] = set()
        self._register()

    def _web_client(self, token: str | None) -> AsyncWebClient:
        """A client that sends with ``token``, retried as deliveries are."""
        return AsyncWebClient(
            token=token,
            base_url=self.config.api_url,
            logger=sdk_logger(),
            timeout=max(1, math.ceil(self.config.send_timeout_s)),
            retry_handlers=retry_handlers(),
        )

    def _bolt_app(self) -> AsyncApp:
        """Bolt's app: authorized by the one ``auth.test`` made at start, or (per-person
        installs) by Bolt's OAuth flow from the installations."""
        config = self.config
        # a client without a token: each request's token comes from the authorization
        client = AsyncWebClient(base_url=config.api_url, logger=sdk_logger())
        if config.oauth is not None and self.installations is not None:
            settings = oauth_settings(
                config.oauth, self.installations, logger=bolt_logger(), on_installed=self._installed
            )
            return AsyncApp(
                client=client, oauth_settings=settings, logger=bolt_logger(), signing_secret=config.signing_secret or ""
            )

        async def authorize(enterprise_id: str | None, team_id: str | None) -> AuthorizeResult:
            """Bolt's per-request authorization: the one ``auth.test`` made at start (Bolt
            passes arguments by name, so this is a plain function, not a bound method)."""
            if self._auth is None:
                raise SlackStartError("the Slack connector is not started")
            return self._auth

        return AsyncApp(
            client=client,
            authorize=authorize,
            # Bolt logs a request with a bad signature with its whole body: not through this one
            logger=bolt_logger(),
            signing_secret=config.signing_secret or "",
            # Socket Mode frames are authenticated by the app token; there is nothing to sign.
            request_verification_enabled=config.app_token is None,
        )

    # ------------------------------------------------------------------ lifecycle

    def _register(self) -> None:
        """Wire Bolt listeners to our translators (bound methods; Bolt injects by arg name)."""
        self.app.event("message")(self.on_message)
        self.app.event("app_mention")(self.on_mention)
        for change in ("member_joined_channel", "member_left_channel", "channel_left", "group_left"):
            self.app.event(change)(self.on_membership)
        self.app.command("/epmem")(self.on_command)
        self.app.block_action(ACTION_ID_PATTERN)(self.on_action)
        if self.installations is not None:
            uninstalls = Uninstalls(
                self.installations, self._uninstalled, self._claim, self._take_up_installations, self._tracked
            )
            self.app.event("tokens_revoked")(uninstalls.tokens_revoked)
            self.app.event("app_uninstalled")(uninstalls.app_uninstalled)

    async def _check_tokens(self) -> None:
        """One ``auth.test`` per token: the bot's identity, and (delegate mode) that the user
        token is the owner's: someone else's token would make the bot answer *their* DMs.
        Per-person installs have no token to test yet: the installations kept are taken up."""
        if self.installations is not None:
            await self._take_up_installations()
            return
        auth = await self.client.auth_test()
        self.bot_user_id = auth.get("user_id")
        self.audience.bot_user_id = self.bot_user_id
        self._auth = AuthorizeResult(
            enterprise_id=auth.get("enterprise_id"),
            team_id=auth.get("team_id"),
            bot_user_id=self.bot_user_id,
            bot_id=auth.get("bot_id"),
            bot_token=self.config.bot_token,
        )
        if self.user_client is None:
            return
        user_auth = await self.user_client.auth_test()
        if self.watch.owner_user is None or user_auth.get("user_id") != self.watch.owner_user:
            raise SlackStartError(
                "SLACK_USER_TOKEN does not belong to the policy's Slack owner identity "
                "(owner.identities: slack:TEAM/USER); delegate mode needs the owner's own token"
            )
        log.info("slack.delegate_mode", delay_s=self.config.delegate_delay_s)

    # ------------------------------------------------------------------ per-person installs

    async def _take_up_installations(self) -> None:
        """Post with the served workspace's bot; the policy's owner, once installed, turns on
        delegate mode (at start, and again after an uninstall took something away)."""
        assert self.installations is not None
        store = self.installations
        workspaces = await store.workspaces()
        serving = await store.serving()
        enterprise_id = next((e for e, t in workspaces if t == serving), None)
        bot = await store.async_find_bot(enterprise_id=enterprise_id, team_id=serving) if serving else None
        self._use_bot(bot.bot_token if bot else None, bot.bot_user_id if bot else None)
        owner = self.watch.owner_user
        mine = (
            await store.async_find_installation(enterprise_id=enterprise_id, team_id=serving, user_id=owner)
            if serving and owner and serving == team_of_identity(self.config.owner_identity or "")
            else None
        )
        self._use_owner(mine)
        log.info("slack.installations", workspaces=len(workspaces), bot=bot is not None, delegate=mine is not None)

    def _use_bot(self, token: str | None, bot_user_id: str | None) -> None:
        self.client.token = token
        self.bot_user_id = self.audience.bot_user_id = bot_user_id

    def _use_owner(self, installation: Installation | None) -> None:
        token = installation.user_token if installation is not None else None
        self.user_client = self._web_client(token) if token else None
        self.delivery.user = self.user_client

    def _is_owner(self, team_id: str | None, user_id: str | None) -> bool:
        owner = self.config.owner_identity
        return bool(team_id and user_id and owner and team_of_identity(owner) == team_id) and (
            user_id == self.watch.owner_user
        )

    async def _installed(self, installation: Installation) -> None:
        """Bolt saved someone's installation: the bot posts with its token from now on, the
        owner's turns on delegate mode, and the host hears who came (``on_install``)."""
        team_id, user_id = installation.team_id, installation.user_id
        if installation.bot_token:
            self._use_bot(installation.bot_token, installation.bot_user_id)
        if self._is_owner(team_id, user_id):
            self._use_owner(installation)
            log.info("slack.delegate_mode", delay_s=self.config.delegate_delay_s)
        if not team_id or not user_id or self._on_install is None:
            return
        try:
            await self._on_install(identity(team_id, user_id))
        except Exception:
            log.exception("slack.on_install_failed", team_id=team_id, user_id=user_id)

    async def _uninstalled(self, who: str) -> None:
        """Someone's tokens went (their installation is deleted already): the host erases what
        it keeps for them. Without a host that does, say so: their data stays."""
        if self._on_uninstall is None:
            log.warning("slack.uninstall_unhandled", identity=who)
            return
        await self._on_uninstall(who)

    async def start(self) -> None:
        """Check the tokens, then serve; returns once serving."""
        if self._running:
            return
        try:
            # Fail fast on a wrong token instead of 401-ing at the first real message.
            await self._check_tokens()
            if self.config.app_token is not None:
                self._socket = AsyncSocketModeHandler(self.app, self.config.app_token)
                # slack-sdk retries a failed connect forever; a bad app token must fail start().
                connect = self._socket.connect_async()  # type: ignore[no-untyped-call]  # unannotated in slack-bolt
                await asyncio.wait_for(connect, _SOCKET_CONNECT_TIMEOUT_S)
                log.info("slack.started", mode="socket")
            else:
                web_app = self.app.web_app(path=self.config.path, port=self.config.port)
                self._runner = web.AppRunner(web_app, shutdown_timeout=1.0)
                await self._runner.setup()
                site = web.TCPSite(self._runner, self.config.host, self.config.port)
                await site.start()
                self.port = int(self._runner.addresses[0][1])
                log.info("slack.started", mode="http", host=self.config.host, port=self.port)
        except BaseException:
            await self._close_transport()
            raise
        self._running = True

    async def stop(self) -> None:
        """Stop receiving, let in-flight answers finish (bounded); idempotent.

        A delegate message still inside its ``delegate_delay_s`` when the service stops is not
        answered (logged with its ids): answering early could answer over the owner.
        """
        if not self._running:
            return
        self._running = False
        await self._close_transport()
        await self.drain(_DRAIN_TIMEOUT_S)
        for task in list(self._inflight):
            task.cancel()
        if self._inflight:
            await asyncio.gather(*self._inflight, return_exceptions=True)
        log.info("slack.stopped")

    async def _close_transport(self) -> None:
        if self._socket is not None:
            socket, self._socket = self._socket, None
            await socket.close_async()  # type: ignore[no-untyped-call]  # unannotated in slack-bolt
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def drain(self, timeout: float = _DRAIN_TIMEOUT_S) -> None:
        """Wait until every listener already running has finished (or ``timeout`` passes).

        Bolt answers Slack before our listeners run; tests and shutdown use this to know the
        work behind an acknowledged request is done.
        """
        pending = [t for t in self._inflight if t is not asyncio.current_task()]
        if pending:
            await asyncio.wait(pending, timeout=timeout)

    @asynccontextmanager
    async def _tracked(self) -> AsyncIterator[None]:
        """Register the current listener task so ``stop()``/``drain()`` can wait for it."""
        task = asyncio.current_task()
        if task is not None:
            self._inflight.add(task)
        try:
            yield
        except asyncio.CancelledError:
            log.warning("slack.listener_cancelled")
            raise
        finally:
            if task is not None:
                self._inflight.discard(task)

    # ------------------------------------------------------------------ agent + replies

    async def _dispatch(self, inbound: Inbound, target: SlackTarget) -> None:
        """Run the agent and deliver its answer; nothing here may take the connector down."""
        with request_context(PLATFORM, chat_id=inbound.chat_id, message_id=inbound.message_id):
            log.info(
                "slack.inbound",
                chat_kind=inbound.chat_kind,
                sender=inbound.sender,
                audience_size=len(inbound.readers()),
                non_text=inbound.non_text,
                delegation=inbound.delegation,
            )
            try:
                out = await self._handler(inbound)
            except Exception:
                log.exception("slack.handler_failed")
                return
            await self.delivery.deliver(out, target)

    async def _delivered(self, target: SlackTarget) -> None:
        """A reply went out: a reply by the bot in a channel thread starts (or keeps) following
        that thread, so follow-ups there are answered without a new mention."""
        ref = target.ref
        if ref.as_owner or ref.thread_ts is None or target.ephemeral_user or not ref.channel.startswith(("C", "G")):
            return
        try:
            await self.threads.follow(ref.channel, ref.thread_ts)
        except Exception as exc:
            log.warning("slack.follow_failed", error=type(exc).__name__)

    async def readers(self, chat_id: str, sender: str) -> tuple[str, ...]:
        """Everyone who reads a message posted to this channel or thread now, ``sender`` first:
        a consultation's follow-up there is decided for them (bot/consultations/flow.py). The members
        are listed again (cached as for a reply), each in the sender's workspace: a Slack
        Connect member from another one is then nobody the policy names, a stranger, which
        holds back more, never less. ValueError for a chat or identity that is not Slack's."""
        ref = ChatRef.parse(chat_id)
        team = team_of_identity(sender)
        if team is None or ref.as_owner:
            raise ValueError("not a channel the bot answers in, or not a Slack identity")
        return await self.audience.audience(self.delivery.bot, ref.channel, team, sender, shared=False)

    async def was_sent(self, chat_id: str, text: str, since: datetime) -> bool | None:
        """Whether the bot posted ``text`` to ``chat_id`` since ``since`` (None: cannot tell)."""
        return await posted(self.client, self.bot_user_id, chat_id, text, since)

    async def send(self, chat_id: str, text: str, actions: tuple[Action, ...] = ()) -> None:
        """Post outside a reply (digests, approved replies). ``chat_id`` is an ``Inbound.chat_id``
        (a channel, a thread, a conversation answered as the owner) or a ``slack:<TEAM>/<USER>``
        identity to reach that person by DM. Errors propagate (:class:`DeliveryFailed` after the
        retries): the agent must know an approved reply did not go out."""
        if chat_id.startswith(f"{PLATFORM}:"):
            user = user_of_identity(chat_id)
            if user is None:
                raise ValueError("not a Slack user identity")
            ref = ChatRef(await self.delivery.dm_channel(user))
        else:
            try:
                ref = ChatRef.parse(chat_id)
            except ValueError:
                raise DeliveryFailed("bad_chat_id", 0, permanent=True) from None
        await self.delivery.post(SlackTarget(ref), text, actions)
