"""Requests into the connector signed the way Slack signs them, and the events they carry.

``SlackSender`` builds requests the way Slack signs them (v0 HMAC over the exact body bytes plus
``X-Slack-Request-Timestamp``) and posts them to the connector's HTTP endpoint: Events API
envelopes as JSON, slash commands and ``block_actions`` as form bodies. The event builders
(:func:`im_message`, :func:`mention`, ...) name the fake workspace's ids below, the ones the
loopback Web API (testkit/fake_slack.py) answers for.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import aiohttp
from slack_sdk.signature import SignatureVerifier

TEAM = "T1"
BOT_USER = "UBOT"
BOT_ID = "BBOT"


def sign(secret: str, body: bytes, timestamp: int | None = None) -> dict[str, str]:
    """The two headers Slack adds to every HTTP request, over exactly these body bytes."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    signature = SignatureVerifier(secret).generate_signature(timestamp=ts, body=body)
    assert signature is not None
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": signature}


def event_envelope(
    event: dict[str, Any],
    *,
    event_id: str,
    team_id: str = TEAM,
    ext_shared: bool = False,
    authorized: str = BOT_USER,
) -> dict[str, Any]:
    """An Events API ``event_callback`` envelope around ``event``. ``authorized`` is the one
    party Slack names as authorized: the bot, or a user who granted the app their token
    (delegate mode: events from the owner's own DMs name the owner)."""
    return {
        "token": "legacy-verification-token",
        "team_id": team_id,
        "api_app_id": "A1",
        "event": event,
        "type": "event_callback",
        "event_id": event_id,
        "event_time": int(time.time()),
        "authorizations": [
            {
                "enterprise_id": None,
                "team_id": team_id,
                "user_id": authorized,
                "is_bot": authorized == BOT_USER,
                "is_enterprise_install": False,
            }
        ],
        "is_ext_shared_channel": ext_shared,
    }


def im_message(
    user: str, text: str, *, channel: str = "D1", ts: str = "1700000001.000100", **extra: Any
) -> dict[str, Any]:
    """A ``message.im`` event from ``user`` in DM ``channel``."""
    return {
        "type": "message",
        "channel_type": "im",
        "channel": channel,
        "user": user,
        "text": text,
        "ts": ts,
        "event_ts": ts,
        "team": TEAM,
        **extra,
    }


def mention(
    user: str, text: str, *, channel: str = "C1", ts: str = "1700000002.000200", **extra: Any
) -> dict[str, Any]:
    """An ``app_mention`` event; ``text`` should contain ``<@UBOT>`` like Slack's does."""
    return {
        "type": "app_mention",
        "channel": channel,
        "user": user,
        "text": text,
        "ts": ts,
        "event_ts": ts,
        "team": TEAM,
        **extra,
    }


def channel_message(
    user: str,
    text: str,
    *,
    channel: str = "C1",
    ts: str = "1700000003.000300",
    thread_ts: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A ``message.channels`` event (``thread_ts`` set: a reply in that thread)."""
    event = {
        "type": "message",
        "channel_type": "channel",
        "channel": channel,
        "user": user,
        "text": text,
        "ts": ts,
        "event_ts": ts,
        "team": TEAM,
        **extra,
    }
    if thread_ts is not None:
        event["thread_ts"] = thread_ts
    return event


def member_event(kind: str, user: str, channel: str = "C1") -> dict[str, Any]:
    """``member_joined_channel`` / ``member_left_channel``."""
    return {
        "type": kind,
        "user": user,
        "channel": channel,
        "channel_type": "C",
        "team": TEAM,
        "event_ts": f"{time.time():.6f}",
    }


@dataclass
class SlackSender:
    """Posts signed requests to the connector's ``/slack/events``."""

    secret: str
    port_of: Callable[[], int | None]
    path: str = "/slack/events"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port_of()}{self.path}"

    async def post_raw(
        self,
        body: bytes,
        content_type: str,
        *,
        timestamp: int | None = None,
        secret: str | None = None,
        retry_num: int | None = None,
    ) -> tuple[int, str]:
        headers = {"Content-Type": content_type, **sign(secret or self.secret, body, timestamp)}
        if retry_num is not None:
            headers["X-Slack-Retry-Num"] = str(retry_num)
            headers["X-Slack-Retry-Reason"] = "http_timeout"
        async with aiohttp.ClientSession(trust_env=False) as session:
            async with session.post(self.url, data=body, headers=headers) as resp:
                return resp.status, await resp.text()

    async def event(self, envelope: dict[str, Any], **kw: Any) -> tuple[int, str]:
        return await self.post_raw(json.dumps(envelope).encode(), "application/json", **kw)

    async def command(
        self,
        text: str,
        *,
        user: str,
        channel: str = "C1",
        team: str = TEAM,
        command: str = "/epmem",
        response_url: str = "https://hooks.slack.invalid/commands/1",
        **kw: Any,
    ) -> tuple[int, str]:
        form = {
            "token": "legacy",
            "team_id": team,
            "team_domain": "fake",
            "channel_id": channel,
            "channel_name": "general",
            "user_id": user,
            "user_name": user.lower(),
            "command": command,
            "text": text,
            "api_app_id": "A1",
            "is_enterprise_install": "false",
            "response_url": response_url,
            "trigger_id": "1.2.3",
        }
        return await self.post_raw(urlencode(form).encode(), "application/x-www-form-urlencoded", **kw)

    async def block_action(
        self,
        value: str,
        *,
        user: str,
        channel: str = "D1",
        team: str = TEAM,
        action_id: str = "epmem_action_0",
        **kw: Any,
    ) -> tuple[int, str]:
        payload = {
            "type": "block_actions",
            "user": {"id": user, "username": user.lower(), "team_id": team},
            "api_app_id": "A1",
            "token": "legacy",
            "container": {
                "type": "message",
                "message_ts": "1700000000.000001",
                "channel_id": channel,
                "is_ephemeral": False,
            },
            "trigger_id": "1.2.3",
            "team": {"id": team, "domain": "fake"},
            "channel": {"id": channel, "name": "directmessage" if channel.startswith("D") else "general"},
            "response_url": "https://hooks.slack.invalid/actions/1",
            "actions": [
                {
                    "type": "button",
                    "action_id": action_id,
                    "block_id": "b1",
                    "text": {"type": "plain_text", "text": "Approve"},
                    "value": value,
                    "action_ts": "1700000003.000300",
                }
            ],
        }
        body = urlencode({"payload": json.dumps(payload)}).encode()
        return await self.post_raw(body, "application/x-www-form-urlencoded", **kw)


async def wait_for(
    predicate: Callable[[], bool],
    timeout: float = 5.0,
    message: str = "condition",
) -> None:
    """Poll until ``predicate`` holds; Bolt acks before listeners run, so effects lag the 200."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        if predicate():
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {message}")
        await asyncio.sleep(0.01)
