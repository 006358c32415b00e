"""Slack connector: Bolt (AsyncApp) events in, ``Inbound`` to the agent, ``Outbound`` back out.

The connector only translates. It never decides who may learn what; it gives the agent the
facts the decision needs and nothing it could be fooled by:

* identities are ``slack:<TEAM>/<USER>`` built from ids in the signed payload, never display
  names (anyone can set those);
* a mention in a channel carries the channel's *current* members as its audience, because every
  member reads the threaded reply. If the member list cannot be fetched we fail closed: the
  audience gets ``slack:<TEAM>/unknown-members``, an identity no contact has, so the agent treats
  the room as holding a stranger;
* Bolt acknowledges events before its listeners run, so a listener that crashes still answered
  200 and Slack retries only on slow or failed deliveries. Each event is claimed once by its
  ``event_id`` in the bot's ``SeenEvents`` store (the state database) so a retry (or a second
  worker sharing it) never answers twice, also across restarts.

Transport: Socket Mode when an app-level token is configured (no public URL needed), otherwise
the Events API over HTTP, served by Bolt's aiohttp app behind an ``AppRunner``; Bolt verifies
the request signature and timestamp there and answers 401 to anything unsigned or stale.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime, timezone
from typing import Any

import structlog
from aiohttp import web
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from connectors.base import Action, Handler, Inbound, Outbound, SeenEvents, request_context

log = structlog.get_logger(__name__)

PLATFORM = "slack"
#: the action ids our buttons carry; clicks on anything else are not ours to forward.
ACTION_ID_PREFIX = "epmem_action_"
ACTION_ID_PATTERN = re.compile(r"^epmem_action_\d+$")
#: the member that stands for "people we could not list": no contact has it, so it is a stranger.
UNKNOWN_MEMBERS = "unknown-members"

# Slack's own limits (Block Kit and Web API); exceeding them makes the whole post fail.
_SECTION_TEXT_MAX = 3000
_BUTTON_LABEL_MAX = 75
_BUTTON_VALUE_MAX = 2000
_ACTIONS_PER_BLOCK = 25
_MEMBERS_PAGE = 200
#: a channel larger than this is treated as "unknown members" rather than listed in full.
_MAX_MEMBER_PAGES = 50

_DRAIN_TIMEOUT_S = 5.0
_SOCKET_CONNECT_TIMEOUT_S = 30.0
_SLACK_ID = re.compile(r"^[A-Za-z0-9]{1,32}$")


@dataclass(frozen=True)
class SlackConfig:
    """Everything the connector needs; tokens are kept out of ``repr`` so they never reach logs."""

    bot_token: str = field(repr=False)
    _: KW_ONLY
    #: required for HTTP events: unsigned requests are refused, never trusted.
    signing_secret: str | None = field(default=None, repr=False)
    #: an ``xapp-`` token switches the connector to Socket Mode.
    app_token: str | None = field(default=None, repr=False)
    api_url: str = "https://slack.com/api/"
    port: int = 3000
    host: str = "0.0.0.0"
    path: str = "/slack/events"
    #: ``slack:<TEAM>/<USER>`` (or a bare user id) that receives ``Outbound.to_owner`` messages.
    owner_identity: str | None = None
    max_text_len: int = 4000


@dataclass(frozen=True, slots=True)
class _ReplyTarget:
    """Where the answer to one inbound goes; ``ephemeral_user`` makes it visible to one person."""

    channel: str
    thread_ts: str | None = None
    ephemeral_user: str | None = None
    response_url: str | None = None


def identity(team_id: str, user_id: str) -> str:
    """The platform identity the agent keys contacts on."""
    return f"{PLATFORM}:{team_id}/{user_id}"


def _user_of_identity(value: str) -> str | None:
    """``slack:T/U`` or a bare ``U`` -> ``U``; anything else is rejected rather than guessed."""
    user = value.rsplit("/", 1)[-1] if value.startswith(f"{PLATFORM}:") else value
    return user if _SLACK_ID.match(user) else None


def _slack_escape(text: str) -> str:
    """Escape the three characters Slack treats as markup, so a reply that quotes someone can
    never turn into ``<!channel>`` pings or disguised links."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _slack_unescape(text: str) -> str:
    """Undo Slack's escaping of inbound text (one pass, ``&amp;`` last)."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _ts_to_time(ts: Any) -> datetime:
    """Slack message ``ts`` ("1700000000.000100") -> aware UTC time; now when absent or odd."""
    try:
        return datetime.fromtimestamp(float(ts), tz=timezone.utc)
    except (TypeError, ValueError, OverflowError, OSError):
        return datetime.now(timezone.utc)


def build_blocks(text: str, actions: tuple[Action, ...]) -> list[dict[str, Any]]:
    """Block Kit for a message with buttons: section(s) with the text, then actions blocks.

    Button ``action_id`` is ``epmem_action_<i>`` and ``value`` the action's command, which comes
    back verbatim in the ``block_actions`` payload. A command too long for a button value is
    dropped, never truncated: a cut command could mean something else.
    """
    blocks: list[dict[str, Any]] = []
    escaped = _slack_escape(text)
    for start in range(0, len(escaped), _SECTION_TEXT_MAX):
        chunk = escaped[start : start + _SECTION_TEXT_MAX]
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": chunk}})
    buttons: list[dict[str, Any]] = []
    for i, action in enumerate(actions):
        if not action.command or len(action.command) > _BUTTON_VALUE_MAX:
            log.warning("slack.button_dropped", index=i, command_len=len(action.command))
            continue
        label = action.label or action.command
        if len(label) > _BUTTON_LABEL_MAX:
            label = label[: _BUTTON_LABEL_MAX - 1] + "\u2026"
        buttons.append(
            {
                "type": "button",
                "text": {"type": "plain_text", "text": label},
                "action_id": f"{ACTION_ID_PREFIX}{i}",
                "value": action.command,
            }
        )
    for start in range(0, len(buttons), _ACTIONS_PER_BLOCK):
        blocks.append({"type": "actions", "elements": buttons[start : start + _ACTIONS_PER_BLOCK]})
    return blocks


class SlackConnector:
    """The Slack side of the bot: implements ``connectors.base.Connector``."""

    platform = PLATFORM

    def __init__(self, config: SlackConfig, handler: Handler, seen: SeenEvents) -> None:
        if config.app_token is None and not config.signing_secret:
            # HTTP events without a signing secret would accept anyone's forged events.
            raise ValueError("Slack HTTP events need a signing_secret (or set app_token for Socket Mode)")
        self.config = config
        self._handler = handler
        self._seen = seen
        self.client = AsyncWebClient(token=config.bot_token, base_url=config.api_url)
        socket_mode = config.app_token is not None
        self.app = AsyncApp(
            client=self.client,
            signing_secret=config.signing_secret or "",
            # Socket Mode frames are authenticated by the app token; there is nothing to sign.
            request_verification_enabled=not socket_mode,
        )
        #: the TCP port actually bound (meaningful after ``start()`` in HTTP mode; port 0 allowed).
        self.port: int | None = None
        self._runner: web.AppRunner | None = None
        self._socket: AsyncSocketModeHandler | None = None
        self._running = False
        self._inflight: set[asyncio.Task[Any]] = set()
        self._bot_user_id: str | None = None
        self._owner_dm: str | None = None
        self._user_teams: dict[str, str] = {}
        self._register()

    # ------------------------------------------------------------------ lifecycle

    def _register(self) -> None:
        """Wire Bolt listeners to our translators (bound methods; Bolt injects by arg name)."""
        self.app.event("message")(self._on_message)
        self.app.event("app_mention")(self._on_mention)
        self.app.command("/epmem")(self._on_command)
        self.app.block_action(ACTION_ID_PATTERN)(self._on_action)

    async def start(self) -> None:
        """Learn the bot's own user id, then serve; returns once serving."""
        if self._running:
            return
        try:
            # Fail fast on a wrong token instead of 401-ing at the first real message.
            auth = await self.client.auth_test()
            self._bot_user_id = auth.get("user_id")
            if self.config.app_token is not None:
                self._socket = AsyncSocketModeHandler(self.app, self.config.app_token)
                # slack-sdk retries a failed connect forever; a bad app token must fail start().
                await asyncio.wait_for(self._socket.connect_async(), _SOCKET_CONNECT_TIMEOUT_S)
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
        """Stop receiving, let in-flight answers finish (bounded); idempotent."""
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
            await socket.close_async()
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
        finally:
            if task is not None:
                self._inflight.discard(task)

    # ------------------------------------------------------------------ dedup

    async def _claim(self, body: dict[str, Any]) -> bool:
        """True the first time an ``event_id`` is seen (by any worker sharing the store).

        Without an event id there is nothing to dedup on, so the event is processed. If the
        store itself fails we answer anyway: a duplicate reply discloses nothing new, silence
        would drop a real message.
        """
        event_id = body.get("event_id")
        if not isinstance(event_id, str) or not event_id:
            return True
        try:
            fresh = await self._seen.first_time(PLATFORM, event_id)
        except Exception:
            log.exception("slack.dedup_failed", event_id=event_id)
            return True
        if not fresh:
            log.info("slack.duplicate_event", event_id=event_id)
        return fresh

    # ------------------------------------------------------------------ identities

    def _sender(self, body: dict[str, Any], context: AsyncBoltContext) -> str | None:
        """``slack:<TEAM>/<USER>`` of whoever acted; actor ids win in Slack Connect channels,
        where the plain team id is the host workspace, not the sender's."""
        user = context.actor_user_id or context.user_id
        team = context.actor_team_id or context.team_id
        event = body.get("event")
        if body.get("is_ext_shared_channel") and not context.actor_team_id and isinstance(event, dict):
            team = event.get("user_team") or team
        if not user or not team or not _SLACK_ID.match(user) or not _SLACK_ID.match(team):
            return None
        return identity(team, user)

    async def _team_of(self, user: str, default_team: str) -> str:
        """A member's home workspace (Slack Connect); cached, since it never changes."""
        if user not in self._user_teams:
            info = await self.client.users_info(user=user)
            member = info.get("user") or {}
            self._user_teams[user] = str(member.get("team_id") or default_team)
        return self._user_teams[user]

    async def _audience(
        self, channel: str, team: str, sender: str, shared: bool
    ) -> tuple[str, ...]:
        """Everyone who will read a reply in ``channel``; fails closed to a stranger placeholder.

        Membership is fetched every time (never cached): someone who joined a minute ago reads
        the reply too.
        """
        placeholder = identity(team, UNKNOWN_MEMBERS)
        members: list[str] = []
        cursor: str | None = None
        try:
            for _page in range(_MAX_MEMBER_PAGES):
                resp = await self.client.conversations_members(
                    channel=channel, limit=_MEMBERS_PAGE, cursor=cursor
                )
                members.extend(str(m) for m in resp.get("members") or [])
                cursor = (resp.get("response_metadata") or {}).get("next_cursor") or None
                if cursor is None:
                    break
            else:
                log.warning("slack.members_truncated", channel=channel, listed=len(members))
                return (sender, *self._member_ids(members, team), placeholder)
        except Exception as exc:
            log.warning("slack.members_failed", channel=channel, error=type(exc).__name__)
            return (sender, placeholder)
        if not shared:
            return self._with_sender(sender, self._member_ids(members, team))
        audience: list[str] = []
        failed = False
        for member in members:
            if member == self._bot_user_id or not _SLACK_ID.match(member):
                continue
            try:
                audience.append(identity(await self._team_of(member, team), member))
            except Exception as exc:
                log.warning("slack.member_team_failed", channel=channel, error=type(exc).__name__)
                failed = True
        if failed:
            audience.append(placeholder)
        return self._with_sender(sender, audience)

    def _member_ids(self, members: list[str], team: str) -> list[str]:
        """Member user ids -> identities, leaving out this bot (it is the speaker, not a reader)."""
        return [
            identity(team, m) for m in members if m != self._bot_user_id and _SLACK_ID.match(m)
        ]

    @staticmethod
    def _with_sender(sender: str, audience: list[str]) -> tuple[str, ...]:
        """The sender is always a reader, even if the member list lags behind."""
        ordered = dict.fromkeys([sender, *audience])
        return tuple(ordered)

    def _clip(self, text: str) -> tuple[str, str | None]:
        """Cut over-long text; the agent is told why via ``non_text``."""
        if len(text) > self.config.max_text_len:
            return text[: self.config.max_text_len], "too_long"
        return text, None

    # ------------------------------------------------------------------ listeners

    async def _on_message(
        self, body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext
    ) -> None:
        """Direct messages to the bot. Channel messages reach us as ``app_mention`` instead."""
        async with self._tracked():
            subtype = event.get("subtype")
            if subtype == "message_changed":
                return  # edits would re-ask an answered question; ignore without noise
            if event.get("channel_type") != "im":
                return
            if event.get("bot_id") or (subtype is not None and subtype != "file_share"):
                log.debug("slack.message_ignored", subtype=subtype, bot=bool(event.get("bot_id")))
                return
            raw = event.get("text") or ""
            has_file = subtype == "file_share" or bool(event.get("files"))
            if not raw.strip() and not has_file:
                return
            channel = event.get("channel")
            sender = self._sender(body, context)
            if not isinstance(channel, str) or sender is None:
                log.warning("slack.message_unattributable")
                return
            if not await self._claim(body):
                return
            non_text: str | None = None
            if raw.strip():
                text, non_text = self._clip(_slack_unescape(raw))
            else:
                text, non_text = "", "file"
            inbound = Inbound(
                platform=PLATFORM,
                chat_id=channel,
                chat_kind="direct",
                sender=sender,
                text=text,
                audience=(sender,),
                message_id=event.get("ts"),
                time=_ts_to_time(event.get("ts")),
                non_text=non_text,
            )
            await self._dispatch(inbound, _ReplyTarget(channel=channel, thread_ts=event.get("thread_ts")))

    async def _on_mention(
        self, body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext
    ) -> None:
        """``@bot`` in a channel: a group question whose readers are all channel members."""
        async with self._tracked():
            if event.get("bot_id") or event.get("subtype"):
                return
            channel = event.get("channel")
            sender = self._sender(body, context)
            team = context.team_id
            if not isinstance(channel, str) or sender is None or not team:
                log.warning("slack.mention_unattributable")
                return
            if not await self._claim(body):
                return
            bot = context.bot_user_id or self._bot_user_id
            raw = event.get("text") or ""
            if bot:
                raw = re.sub(rf"<@{re.escape(bot)}(?:\|[^>]*)?>", "", raw)
            raw = _slack_unescape(raw).strip()
            non_text: str | None = None
            if raw:
                text, non_text = self._clip(raw)
            elif event.get("files"):
                text, non_text = "", "file"
            else:
                text = ""
            audience = await self._audience(
                channel, team, sender, shared=bool(body.get("is_ext_shared_channel"))
            )
            inbound = Inbound(
                platform=PLATFORM,
                chat_id=channel,
                chat_kind="group",
                sender=sender,
                text=text,
                audience=audience,
                message_id=event.get("ts"),
                time=_ts_to_time(event.get("ts")),
                non_text=non_text,
            )
            thread = event.get("thread_ts") or event.get("ts")
            await self._dispatch(inbound, _ReplyTarget(channel=channel, thread_ts=thread))

    async def _on_command(
        self, ack: AsyncAck, command: dict[str, Any], context: AsyncBoltContext
    ) -> None:
        """``/epmem <verb> ...`` -> ``/<verb> ...``; answered ephemerally, only the invoker sees it.

        Everyone's commands are forwarded: only the agent knows who the owner is.
        """
        async with self._tracked():
            await ack()
            user = command.get("user_id")
            team = command.get("team_id") or context.team_id
            channel = command.get("channel_id")
            if not (isinstance(user, str) and isinstance(team, str) and isinstance(channel, str)):
                log.warning("slack.command_unattributable")
                return
            if not _SLACK_ID.match(user) or not _SLACK_ID.match(team):
                return
            sender = identity(team, user)
            words = (command.get("text") or "").strip().lstrip("/").strip()
            text, non_text = self._clip(f"/{words}" if words else "/help")
            inbound = Inbound(
                platform=PLATFORM,
                chat_id=channel,
                chat_kind="direct",
                sender=sender,
                text=text,
                audience=(sender,),
                message_id=command.get("trigger_id"),
                non_text=non_text,
            )
            target = _ReplyTarget(
                channel=channel, ephemeral_user=user, response_url=command.get("response_url")
            )
            await self._dispatch(inbound, target)

    async def _on_action(
        self,
        ack: AsyncAck,
        body: dict[str, Any],
        action: dict[str, Any],
        context: AsyncBoltContext,
    ) -> None:
        """A click on one of our buttons: the clicker 'says' the button's command where they are."""
        async with self._tracked():
            await ack()
            value = action.get("value")
            user_obj = body.get("user") or {}
            user = user_obj.get("id")
            team = user_obj.get("team_id") or context.team_id
            channel_obj = body.get("channel") or {}
            channel = channel_obj.get("id") or (body.get("container") or {}).get("channel_id")
            if not (isinstance(value, str) and value and isinstance(user, str) and isinstance(team, str)):
                log.warning("slack.action_unattributable")
                return
            if not isinstance(channel, str) or not _SLACK_ID.match(user) or not _SLACK_ID.match(team):
                log.warning("slack.action_without_channel")
                return
            sender = identity(team, user)
            direct = channel.startswith("D") or channel_obj.get("name") == "directmessage"
            if direct:
                audience: tuple[str, ...] = (sender,)
            else:
                audience = await self._audience(
                    channel, context.team_id or team, sender, shared=False
                )
            text, non_text = self._clip(value)
            inbound = Inbound(
                platform=PLATFORM,
                chat_id=channel,
                chat_kind="direct" if direct else "group",
                sender=sender,
                text=text,
                audience=audience,
                message_id=action.get("action_ts"),
                non_text=non_text,
            )
            await self._dispatch(inbound, _ReplyTarget(channel=channel))

    # ------------------------------------------------------------------ agent + replies

    async def _dispatch(self, inbound: Inbound, target: _ReplyTarget) -> None:
        """Run the agent and deliver its answer; nothing here may take the connector down."""
        with request_context(PLATFORM, chat_id=inbound.chat_id, message_id=inbound.message_id):
            log.info(
                "slack.inbound",
                chat_kind=inbound.chat_kind,
                sender=inbound.sender,
                audience_size=len(inbound.readers()),
                non_text=inbound.non_text,
            )
            try:
                out = await self._handler(inbound)
            except Exception:
                log.exception("slack.handler_failed")
                return
            await self._deliver(out, target)

    async def _deliver(self, out: Outbound, target: _ReplyTarget) -> None:
        """Post the reply where the question was asked, and the owner's note to the owner.

        Buttons (approve / edit / reject) belong to the owner: when the answer also carries a
        ``to_owner`` note they go on that note, never on the reply another person reads.
        """
        reply_actions = () if out.to_owner else out.actions
        if out.text:
            try:
                await self._post(target, out.text, reply_actions)
            except Exception:
                log.exception("slack.reply_failed", audit_id=out.audit_id)
        if out.to_owner:
            try:
                await self._post_to_owner(out.to_owner, out.actions)
            except Exception:
                log.exception("slack.owner_note_failed", audit_id=out.audit_id)

    async def _post(self, target: _ReplyTarget, text: str, actions: tuple[Action, ...]) -> None:
        """chat.postMessage, or chat.postEphemeral for replies meant for one person only."""
        blocks = build_blocks(text, actions) if actions else None
        fallback = _slack_escape(text)
        if target.ephemeral_user is None:
            await self.client.chat_postMessage(
                channel=target.channel, text=fallback, thread_ts=target.thread_ts, blocks=blocks
            )
            return
        try:
            await self.client.chat_postEphemeral(
                channel=target.channel, user=target.ephemeral_user, text=fallback, blocks=blocks
            )
        except Exception as exc:
            # The bot cannot post in channels it is not in; the command's response_url can.
            if not target.response_url:
                raise
            log.info("slack.ephemeral_via_response_url", error=type(exc).__name__)
            resp = await AsyncWebhookClient(target.response_url).send(
                text=fallback, blocks=blocks, response_type="ephemeral"
            )
            if resp.status_code >= 300:
                raise RuntimeError(f"response_url answered HTTP {resp.status_code}") from exc

    async def _dm_channel(self, user: str) -> str:
        """The bot's DM channel with ``user`` (conversations.open is idempotent on Slack's side)."""
        resp = await self.client.conversations_open(users=user)
        channel = (resp.get("channel") or {}).get("id")
        if not isinstance(channel, str):
            raise RuntimeError("conversations.open returned no channel")
        return channel

    async def _post_to_owner(self, text: str, actions: tuple[Action, ...]) -> None:
        """Deliver an agent note to the owner's DM; dropped (with a warning) if no owner is set."""
        owner = self.config.owner_identity
        user = _user_of_identity(owner) if owner else None
        if user is None:
            log.warning("slack.owner_note_dropped", reason="no usable owner_identity")
            return
        if self._owner_dm is None:
            self._owner_dm = await self._dm_channel(user)
        await self._post(_ReplyTarget(channel=self._owner_dm), text, actions)

    async def send(self, chat_id: str, text: str, actions: tuple[Action, ...] = ()) -> None:
        """Post outside a reply (digests, approved replies). ``chat_id`` is a channel id, or a
        ``slack:<TEAM>/<USER>`` identity to reach that person by DM. Errors propagate: the agent
        must know an approved reply did not go out."""
        channel = chat_id
        if chat_id.startswith(f"{PLATFORM}:"):
            user = _user_of_identity(chat_id)
            if user is None:
                raise ValueError("not a Slack user identity")
            channel = await self._dm_channel(user)
        await self._post(_ReplyTarget(channel=channel), text, actions)
