"""The one way a Slack message leaves: paced per channel, retried on 429, reported.

Slack allows about one ``chat.postMessage`` per second per channel (short bursts tolerated)
and answers more with HTTP 429 and ``Retry-After``. Every post goes through a
:class:`~connectors.courier.Courier` on the channel's lane: a 429 holds the channel for as
long as Slack asked (plus jitter), a network error or a 5xx backs off, anything else Slack
refuses (``channel_not_found``, ``not_in_channel``...) is final. A timeout once the post was
sent is not retried (``chat.postMessage`` is not idempotent: a retry could post twice); it
is reported as maybe delivered. The host hears of every
outcome through :meth:`PlatformState.report`; a reply that finally failed is kept there and
the owner told.

Replies the delegate sends *as the owner* go out with the owner's user token; everything
else with the bot's.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import structlog
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import AsyncConnectionErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from connectors.base import Action, DeliveryKind, DeliveryReport, Outbound, PlatformState
from connectors.courier import Courier, DeliveryFailed, Lane, DeliveryVerdict
from connectors.slack.blocks import build_blocks
from connectors.slack.config import SlackConfig
from connectors.slack.ids import PLATFORM, ChatRef, escape, user_of_identity

log = structlog.get_logger(__name__)

_TRANSIENT_ERRORS = frozenset({"internal_error", "fatal_error", "service_unavailable", "request_timeout"})
#: how many of our own post timestamps are remembered (to tell our posts as the owner from
#: the owner's own when their events come back).
_OWN_POSTS = 2048


def _retry_after(headers: Any) -> float:
    value = None
    if headers is not None:
        for name in ("Retry-After", "retry-after"):
            value = headers.get(name) if hasattr(headers, "get") else None
            if value is not None:
                break
    try:
        return max(0.0, float(value)) if value is not None else 1.0
    except (TypeError, ValueError):
        return 1.0


def retry_handlers() -> list[AsyncRetryHandler]:
    """slack_sdk's own retry on connection errors, less a read timeout: its default retries
    every ``ServerConnectionError``, and a read timeout is one, so a post that Slack took but
    answered late would be posted twice. A connect timeout (nothing was sent) is still retried."""
    return [
        AsyncConnectionErrorRetryHandler(
            error_types=[aiohttp.ConnectionTimeoutError, aiohttp.ServerDisconnectedError, aiohttp.ClientOSError]
        )
    ]


def classify(exc: BaseException) -> DeliveryVerdict:
    """Slack's answer to a failed call: wait as told, try again, or stop."""
    if isinstance(exc, DeliveryFailed):
        if exc.unknown:
            return DeliveryVerdict("ambiguous", exc.error)
        return DeliveryVerdict("permanent" if exc.permanent else "transient", exc.error)
    if isinstance(exc, SlackApiError):
        response = exc.response
        status = int(getattr(response, "status_code", 0) or 0)
        data = getattr(response, "data", None)
        error = str(data.get("error") or "") if isinstance(data, dict) else ""
        if status == 429 or error == "ratelimited":
            return DeliveryVerdict("retry_after", "ratelimited", _retry_after(getattr(response, "headers", None)))
        if status >= 500 or error in _TRANSIENT_ERRORS:
            return DeliveryVerdict("transient", error or f"http_{status}")
        return DeliveryVerdict("permanent", error or f"http_{status}")
    if isinstance(exc, asyncio.TimeoutError) and not isinstance(exc, aiohttp.ConnectionTimeoutError):
        # the post went out and no answer came: Slack may have posted it already
        return DeliveryVerdict("ambiguous", "timeout")
    if isinstance(exc, (aiohttp.ClientError, OSError)):
        return DeliveryVerdict("transient", type(exc).__name__)
    return DeliveryVerdict("permanent", type(exc).__name__)


@dataclass(frozen=True, slots=True)
class SlackTarget:
    """Where the answer to one inbound goes; ``ephemeral_user`` makes it visible to one person,
    ``response_url`` is a slash command's way back into a channel the bot is not in."""

    ref: ChatRef
    ephemeral_user: str | None = None
    response_url: str | None = None


class SlackDelivery:
    """Posts with the bot's (or the owner's) token and reports each outcome to the host."""

    def __init__(
        self,
        bot: AsyncWebClient,
        user: AsyncWebClient | None,
        config: SlackConfig,
        state: PlatformState,
        on_delivered: Callable[[SlackTarget], Awaitable[None]] | None = None,
    ) -> None:
        self.bot = bot
        self.user = user
        self._config = config
        self._state = state
        self._on_delivered = on_delivered
        self.courier = Courier(classify, config.retry, config.timer)
        self.own_posts: deque[str] = deque(maxlen=_OWN_POSTS)
        self._owner_dm: str | None = None

    def lanes(self, channel: str) -> list[Lane]:
        return [Lane(f"channel:{channel}", self._config.pacing.channel)]

    async def post(self, target: SlackTarget, text: str, actions: tuple[Action, ...]) -> int:
        """One message, paced and retried; the attempts it took (:class:`DeliveryFailed` else)."""
        ref = target.ref
        fallback = escape(text)
        if target.ephemeral_user is not None:  # postEphemeral has no mrkdwn switch: plain blocks
            return await self._ephemeral(target, fallback, build_blocks(text, actions))
        blocks = build_blocks(text, actions) if actions else None
        client = self.user if ref.as_owner else self.bot
        if client is None:
            raise DeliveryFailed("no_user_token", 0, permanent=True)
        response, delivered = await self.courier.send(
            self.lanes(ref.channel),
            lambda: client.chat_postMessage(
                channel=ref.channel,
                text=fallback,
                thread_ts=ref.thread_ts,
                blocks=blocks,
                mrkdwn=False,
                unfurl_links=False,
                unfurl_media=False,
            ),
        )
        ts = response.get("ts")
        if isinstance(ts, str):
            self.own_posts.append(ts)
        return delivered.attempts

    async def _ephemeral(self, target: SlackTarget, fallback: str, blocks: list[dict[str, Any]] | None) -> int:
        """chat.postEphemeral; in a channel the bot is not in, the command's response_url."""
        user = target.ephemeral_user
        assert user is not None
        try:
            _, delivered = await self.courier.send(
                self.lanes(target.ref.channel),
                lambda: self.bot.chat_postEphemeral(
                    channel=target.ref.channel, user=user, text=fallback, blocks=blocks
                ),
            )
            return delivered.attempts
        except DeliveryFailed:
            if not target.response_url:
                raise
        log.info("slack.ephemeral_via_response_url")
        url = target.response_url

        async def respond() -> None:
            resp = await AsyncWebhookClient(url).send(text=fallback, blocks=blocks, response_type="ephemeral")
            if resp.status_code >= 300:
                raise DeliveryFailed(f"response_url_http_{resp.status_code}", 1, permanent=resp.status_code < 500)

        _, delivered = await self.courier.send(self.lanes(target.ref.channel), respond)
        return delivered.attempts

    async def owner_dm(self) -> str:
        """The bot's DM channel with the owner (opened once)."""
        if self._owner_dm is None:
            owner = self._config.owner_identity
            user = user_of_identity(owner) if owner else None
            if user is None:
                raise DeliveryFailed("no_owner_identity", 0, permanent=True)
            self._owner_dm = await self.dm_channel(user)
        return self._owner_dm

    async def dm_channel(self, user: str) -> str:
        """The bot's DM channel with ``user`` (conversations.open is idempotent on Slack's side)."""
        resp, _ = await self.courier.send([], lambda: self.bot.conversations_open(users=user))
        channel = (resp.get("channel") or {}).get("id")
        if not isinstance(channel, str):
            raise DeliveryFailed("conversations_open_without_channel", 1, permanent=True)
        return channel

    async def deliver(self, out: Outbound, target: SlackTarget) -> None:
        """The reply where the question was asked, the owner's note to the owner.

        Buttons (approve / edit / reject) belong to the owner: when the answer also carries a
        ``to_owner`` note they go on that note, never on the reply another person reads.
        """
        reply_actions = () if out.to_owner else out.actions
        if out.text:
            if await self.reported("reply", target, out.text, reply_actions, out.audit_id) and self._on_delivered:
                await self._on_delivered(target)
        out.delivered()  # the reply is out: what waits for that may start
        if out.to_owner:
            try:
                owner_target = SlackTarget(ChatRef(await self.owner_dm()))
            except DeliveryFailed as exc:
                log.warning("slack.owner_unreachable", error=exc.error)
                await self._report("owner_note", "owner", False, exc.attempts, out.audit_id, exc.error, out.to_owner)
                return
            await self.reported("owner_note", owner_target, out.to_owner, out.actions, out.audit_id)

    async def reported(
        self, kind: DeliveryKind, target: SlackTarget, text: str, actions: tuple[Action, ...], audit_id: str | None
    ) -> bool:
        """Post and tell the host how it went; never raises for a failed delivery."""
        try:
            attempts = await self.post(target, text, actions)
        except DeliveryFailed as exc:
            log.error(
                "slack.undelivered",
                kind=kind,
                error=exc.error,
                attempts=exc.attempts,
                audit_id=audit_id,
                unknown=exc.unknown,
            )
            await self._report(
                kind, str(target.ref), False, exc.attempts, audit_id, exc.error, text, unknown=exc.unknown
            )
            return False
        await self._report(kind, str(target.ref), True, attempts, audit_id)
        return True

    async def _report(
        self,
        kind: DeliveryKind,
        chat: str,
        delivered: bool,
        attempts: int,
        audit_id: str | None,
        error: str | None = None,
        text: str | None = None,
        *,
        unknown: bool = False,
    ) -> None:
        try:
            await self._state.report(
                DeliveryReport(PLATFORM, chat, kind, delivered, attempts, audit_id, error, text, unknown)
            )
        except Exception as exc:
            log.error("slack.report_failed", kind=kind, delivered=delivered, error=type(exc).__name__)
