"""Slack events in, :class:`Inbound` out: which messages are questions, for whom, read by whom.

What reaches the agent:

* a DM to the bot (``message.im``), with the sender as the whole audience;
* a mention of the bot in a channel or a group DM (``app_mention``), and a follow-up in a
  thread the bot answered (``message.channels`` / ``message.groups`` / ``message.mpim`` without
  a new mention), with the conversation's members as the audience, answered in the thread;
* with the owner's user token (delegate mode), a DM someone sends the owner, and a mention of
  the owner in a channel: answered as the owner, after ``delegate_delay_s``, unless the owner
  wrote there first;
* ``/epmem`` commands and clicks on our buttons.

Never forwarded: bot messages, edits and deletions, our own posts, the owner's own messages
outside the bot's DM (they only tell the delegate that the owner is answering). Each event is
claimed once through the host's state, so a retried delivery is not answered twice.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from typing import Any

import structlog
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext

from connectors.base import Inbound, PlatformState
from connectors.slack.audience import SlackAudience
from connectors.slack.config import SlackConfig
from connectors.slack.delegate import FollowedThreads, OwnerWatch
from connectors.slack.delivery import SlackDelivery, SlackTarget
from connectors.slack.ids import (
    PLATFORM,
    UNKNOWN_MEMBERS,
    SLACK_ID,
    ChatRef,
    identity,
    mentions,
    strip_mention,
    ts_to_time,
    unescape,
)

log = structlog.get_logger(__name__)

#: message subtypes that are still someone writing (everything else is a change or a system note).
_SPOKEN = frozenset({"file_share", "thread_broadcast"})
#: Slack's own bot posts as a user (reminders, notices), not as a bot: never a person asking.
_SLACKBOT = "USLACKBOT"


class Listeners:
    """The Bolt listeners; :class:`~connectors.slack.app.SlackConnector` supplies the parts."""

    config: SlackConfig
    state: PlatformState
    audience: SlackAudience
    delivery: SlackDelivery
    watch: OwnerWatch
    threads: FollowedThreads
    bot_user_id: str | None

    def _tracked(self) -> AbstractAsyncContextManager[None]:
        raise NotImplementedError

    async def _dispatch(self, inbound: Inbound, target: SlackTarget) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------------ helpers

    async def _claim(self, body: dict[str, Any]) -> bool:
        """True the first time an ``event_id`` is seen (by any worker sharing the state).

        Without an event id there is nothing to dedup on, so the event is processed. If the
        store fails we answer anyway: a duplicate reply discloses nothing new, silence would
        drop a real message.
        """
        event_id = body.get("event_id")
        if not isinstance(event_id, str) or not event_id:
            return True
        try:
            fresh = await self.state.first_time(PLATFORM, event_id)
        except Exception:
            log.exception("slack.dedup_failed", event_id=event_id)
            return True
        if not fresh:
            log.info("slack.duplicate_event", event_id=event_id)
        return fresh

    @staticmethod
    def _sender(body: dict[str, Any], context: AsyncBoltContext) -> str | None:
        """``slack:<TEAM>/<USER>`` of whoever acted; actor ids win in Slack Connect channels,
        where the plain team id is the host workspace, not the sender's."""
        user = context.actor_user_id or context.user_id
        team = context.actor_team_id or context.team_id
        event = body.get("event")
        if body.get("is_ext_shared_channel") and not context.actor_team_id and isinstance(event, dict):
            team = event.get("user_team") or team
        if not user or not team or not SLACK_ID.match(user) or not SLACK_ID.match(team):
            return None
        return identity(team, user)

    def _text(self, raw: str, files: object) -> tuple[str, str | None]:
        """Inbound text (unescaped, clipped) and, when there is none usable, why."""
        raw = unescape(raw).strip()
        if not raw:
            return "", ("file" if files else None)
        if len(raw) > self.config.max_text_len:
            return raw[: self.config.max_text_len], "too_long"
        return raw, None

    def _inbound(
        self,
        body: dict[str, Any],
        event: dict[str, Any],
        context: AsyncBoltContext,
        ref: ChatRef,
        text: str,
        non_text: str | None,
        audience: tuple[str, ...],
        group: bool,
    ) -> Inbound | None:
        sender = self._sender(body, context)
        if sender is None:
            log.warning("slack.message_unattributable")
            return None
        return Inbound(
            platform=PLATFORM,
            chat_id=str(ref),
            chat_kind="group" if group else "direct",
            sender=sender,
            text=text,
            audience=audience or (sender,),
            message_id=event.get("ts"),
            time=ts_to_time(event.get("ts")),
            non_text=non_text,
            delegation=("mention" if group else "dm") if ref.as_owner else None,
            present=_present(sender, audience) if group else None,
        )

    # ------------------------------------------------------------------ message events

    async def on_message(self, body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext) -> None:
        """Every ``message`` event: DMs (to the bot or, in delegate mode, to the owner) and
        channel messages (follow-ups in threads, mentions of the owner, the owner speaking)."""
        async with self._tracked():
            subtype = event.get("subtype")
            if event.get("bot_id") or (subtype is not None and subtype not in _SPOKEN):
                return  # bots, edits, deletions, joins...: nothing was asked
            channel, user, ts = event.get("channel"), event.get("user"), event.get("ts")
            if not (isinstance(channel, str) and isinstance(user, str) and isinstance(ts, str)):
                return
            if self.watch.is_own_post(ts) or user == _SLACKBOT:
                return
            kind = event.get("channel_type")
            if kind == "im":
                if await self._is_owners_dm(body, channel):
                    await self._on_owners_dm(body, event, context, channel, user, ts)
                else:
                    await self._on_direct(body, event, context, channel)
            elif kind in ("channel", "group", "mpim"):  # a group DM reads like a private channel
                await self._on_channel_message(body, event, context, channel, user, ts)

    async def _is_owners_dm(self, body: dict[str, Any], channel: str) -> bool:
        """A DM between the owner and someone else (not with the bot). Slack names one
        authorized party per event: the bot for its own DMs; the owner for the owner's. The
        owner's DM with the bot may name either, so that channel is checked by id. (Decided
        whether or not delegate mode is on: an app granted user scopes receives the owner's DMs
        even when no user token is configured, and they are not the bot's to answer.)"""
        auths = body.get("authorizations") or []
        auth = auths[0] if auths and isinstance(auths[0], dict) else {}
        if auth.get("is_bot", True) or not self.watch.is_owner(auth.get("user_id")):
            return False
        try:
            return channel != await self.delivery.owner_dm()
        except Exception as exc:
            log.warning("slack.owner_dm_unknown", error=type(exc).__name__)
            return False

    async def _on_direct(
        self, body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext, channel: str
    ) -> None:
        """A DM to the bot: the sender is the whole audience."""
        text, non_text = self._text(event.get("text") or "", event.get("subtype") == "file_share" or event.get("files"))
        if not text and non_text is None:
            return
        if not await self._claim(body):
            return
        ref = ChatRef(channel, event.get("thread_ts"))
        inbound = self._inbound(body, event, context, ref, text, non_text, (), group=False)
        if inbound is not None:
            await self._dispatch(inbound, SlackTarget(ref))

    async def _on_owners_dm(
        self, body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext, channel: str, user: str, ts: str
    ) -> None:
        """Delegate mode: someone wrote to the owner. The owner's own messages only mark the
        conversation as answered. Without the owner's token nothing here is answered."""
        if self.delivery.user is None:
            log.debug("slack.owners_dm_ignored", reason="no user token")
            return
        if self.watch.is_owner(user):
            self.watch.spoke(channel, ts, event.get("thread_ts"))
            return
        text, non_text = self._text(event.get("text") or "", event.get("files"))
        if (not text and non_text is None) or not await self._claim(body):
            return
        ref = ChatRef(channel, event.get("thread_ts"), as_owner=True)
        answered = await self._owner_first(ref, ts, anywhere=True)
        inbound = self._inbound(body, event, context, ref, text, non_text, (), group=False)
        if inbound is not None:
            await self._dispatch(self._quiet(inbound) if answered else inbound, SlackTarget(ref))

    async def _owner_first(self, ref: ChatRef, ts: str, *, anywhere: bool) -> bool:
        """Give the owner ``delegate_delay_s`` to answer; whether they did."""
        if self.config.delegate_delay_s > 0:
            await self.config.timer.sleep(self.config.delegate_delay_s)
        if self.watch.answered(ref, ts, anywhere=anywhere):
            return True
        return self.delivery.user is not None and await self.watch.answered_in_history(self.delivery.user, ref, ts)

    @staticmethod
    def _quiet(inbound: Inbound) -> Inbound:
        """The owner answered first: the agent records the message and says nothing."""
        log.info("slack.delegate_owner_answered", delegation=inbound.delegation)
        return replace(inbound, text="", non_text="owner_answered")

    async def _on_channel_message(
        self, body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext, channel: str, user: str, ts: str
    ) -> None:
        thread = event.get("thread_ts")
        self.audience.saw(channel, user)
        if self.watch.is_owner(user):
            self.watch.spoke(channel, ts, thread)
            if isinstance(thread, str):
                await self.threads.drop(channel, thread)  # the owner took the thread over
            return
        raw = event.get("text") or ""
        named = mentions(raw)
        if self.bot_user_id in named:
            return  # app_mention answers it
        others = named - {self.bot_user_id}
        if isinstance(thread, str) and thread != ts and not others and await self.threads.followed(channel, thread):
            await self._on_follow_up(body, event, context, ChatRef(channel, thread))
        elif self.delivery.user is not None and self.watch.owner_user in named:
            await self._on_owner_mention(body, event, context, channel, ts)

    async def _on_follow_up(
        self, body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext, ref: ChatRef
    ) -> None:
        """A message in a thread the bot answered: the conversation goes on, in the thread."""
        text, non_text = self._text(event.get("text") or "", event.get("files"))
        team = context.team_id
        if (not text and non_text is None) or not team or not await self._claim(body):
            return
        sender = self._sender(body, context) or ""
        audience = await self.audience.audience(
            self.delivery.bot, ref.channel, team, sender, shared=bool(body.get("is_ext_shared_channel"))
        )
        inbound = self._inbound(body, event, context, ref, text, non_text, audience, group=True)
        if inbound is not None:
            await self._dispatch(inbound, SlackTarget(ref))

    async def _on_owner_mention(
        self, body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext, channel: str, ts: str
    ) -> None:
        """Delegate mode: someone named the owner in a channel; answered as the owner, in the
        thread, with the channel's members as readers (listed with the owner's token)."""
        owner = self.watch.owner_user
        team = context.team_id
        if owner is None or self.delivery.user is None or not team or not await self._claim(body):
            return
        text, non_text = self._text(strip_mention(event.get("text") or "", owner), event.get("files"))
        ref = ChatRef(channel, event.get("thread_ts") or ts, as_owner=True)
        answered = await self._owner_first(ref, ts, anywhere=False)
        sender = self._sender(body, context) or ""
        audience = await self.audience.audience(
            self.delivery.user, channel, team, sender, shared=bool(body.get("is_ext_shared_channel"))
        )
        inbound = self._inbound(body, event, context, ref, text, non_text, audience, group=True)
        if inbound is not None:
            await self._dispatch(self._quiet(inbound) if answered else inbound, SlackTarget(ref))

    async def on_mention(self, body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext) -> None:
        """``@bot`` in a channel: a group question whose readers are all channel members."""
        async with self._tracked():
            if event.get("bot_id") or event.get("subtype"):
                return
            channel = event.get("channel")
            team = context.team_id
            if not isinstance(channel, str) or not team:
                log.warning("slack.mention_unattributable")
                return
            if not await self._claim(body):
                return
            bot = context.bot_user_id or self.bot_user_id
            raw = event.get("text") or ""
            text, non_text = self._text(strip_mention(raw, bot) if bot else raw, event.get("files"))
            ref = ChatRef(channel, event.get("thread_ts") or event.get("ts"))
            sender = self._sender(body, context) or ""
            audience = await self.audience.audience(
                self.delivery.bot, channel, team, sender, shared=bool(body.get("is_ext_shared_channel"))
            )
            inbound = self._inbound(body, event, context, ref, text, non_text, audience, group=True)
            if inbound is not None:
                await self._dispatch(inbound, SlackTarget(ref))

    async def on_membership(self, event: dict[str, Any]) -> None:
        """``member_joined_channel`` / ``member_left_channel`` (and the bot leaving): the
        channel's cached member list is out of date."""
        channel = event.get("channel")
        if isinstance(channel, str):
            self.audience.invalidate(channel)
            log.info("slack.members_changed", channel=channel, change=event.get("type"))

    # ------------------------------------------------------------------ commands and buttons

    async def on_command(self, ack: AsyncAck, command: dict[str, Any], context: AsyncBoltContext) -> None:
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
            if not SLACK_ID.match(user) or not SLACK_ID.match(team) or not SLACK_ID.match(channel):
                return
            sender = identity(team, user)
            words = (command.get("text") or "").strip().lstrip("/").strip()
            text, non_text = self._text(f"/{words}" if words else "/help", None)
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
            target = SlackTarget(ChatRef(channel), ephemeral_user=user, response_url=command.get("response_url"))
            await self._dispatch(inbound, target)

    async def on_action(
        self, ack: AsyncAck, body: dict[str, Any], action: dict[str, Any], context: AsyncBoltContext
    ) -> None:
        """A click on one of our buttons: the clicker 'says' the button's command where they are."""
        async with self._tracked():
            await ack()
            value = action.get("value")
            user_obj = body.get("user") or {}
            user, team = user_obj.get("id"), user_obj.get("team_id") or context.team_id
            channel_obj = body.get("channel") or {}
            channel = channel_obj.get("id") or (body.get("container") or {}).get("channel_id")
            if not (isinstance(value, str) and value and isinstance(user, str) and isinstance(team, str)):
                log.warning("slack.action_unattributable")
                return
            if not isinstance(channel, str) or not all(SLACK_ID.match(v) for v in (user, team, channel)):
                log.warning("slack.action_without_channel")
                return
            sender = identity(team, user)
            direct = channel.startswith("D") or channel_obj.get("name") == "directmessage"
            audience: tuple[str, ...] = (sender,)
            if not direct:
                audience = await self.audience.audience(
                    self.delivery.bot, channel, context.team_id or team, sender, shared=False
                )
            text, non_text = self._text(value, None)
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
            await self._dispatch(inbound, SlackTarget(ChatRef(channel)))


def _present(sender: str, audience: tuple[str, ...]) -> tuple[str, ...]:
    """Who heard a channel message said: the members Slack listed (the list a reply is judged
    for). When they could not all be listed (a placeholder stands in), only the sender."""
    if any(a.endswith("/" + UNKNOWN_MEMBERS) for a in audience):
        return (sender,)
    return audience or (sender,)
