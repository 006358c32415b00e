"""Requests into the connector signed the way Slack signs them, and the events they carry.

``SlackSender`` builds requests the way Slack signs them (v0 HMAC over the exact body bytes plus
``X-Slack-Request-Timestamp``) and posts them to the connector's HTTP endpoint: Events API
envelopes as JSON, slash commands and ``block_actions`` as form bodies. The event builders
(:func:`im_message`, :func:`mention`, ...) name the fake workspace's ids below, the ones the
loopback Web API (testkit/fake_slack.py) answers for. ``InstallBrowser`` is a person's browser
going through "Add to Slack" (per-person installs) against the connector and the fake.
"""

from __future__ import annotations

import asyncio
import html
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

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


def tokens_revoked(users: list[str], bots: list[str] | None = None) -> dict[str, Any]:
    """``tokens_revoked``: these people's user tokens (``oauth``) and bot tokens went."""
    return {"type": "tokens_revoked", "tokens": {"oauth": users, "bot": bots or []}, "event_ts": f"{time.time():.6f}"}


def app_uninstalled() -> dict[str, Any]:
    """``app_uninstalled``: the app left the workspace."""
    return {"type": "app_uninstalled", "event_ts": f"{time.time():.6f}"}


@dataclass
class InstallBrowser:
    """One person's browser adding the app: the app's install page (which sets the state
    cookie), Slack's consent page (the fake's, which answers with a code) and back to the app's
    redirect URL with the cookie, as a browser sends it (Bolt's cookie is ``Secure``: a client
    jar would not send it to a loopback ``http://`` address, so it is kept here by hand)."""

    port_of: Callable[[], int | None]
    cookie_name: str = "slack-app-oauth-state"
    #: the state cookie's value, once the install page set it.
    state: str | None = None

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port_of()}{path}"

    async def install_page(self) -> tuple[int, str]:
        """GET /slack/install: the page with the "Add to Slack" link (its URL is returned)."""
        async with aiohttp.ClientSession(trust_env=False) as session:
            async with session.get(self.url("/slack/install"), allow_redirects=False) as resp:
                for header in resp.headers.getall("Set-Cookie", []):
                    found = re.match(rf"{re.escape(self.cookie_name)}=([^;]*)", header)
                    if found:
                        self.state = found.group(1)
                page = await resp.text()
        link = re.search(r'<a href="([^"]+)"', page)
        return resp.status, html.unescape(link.group(1)) if link else ""

    async def consent(self, authorize_url: str) -> str:
        """Slack's consent page (approved at once by the fake): where it sends the browser back."""
        async with aiohttp.ClientSession(trust_env=False) as session:
            async with session.get(authorize_url, allow_redirects=False) as resp:
                assert resp.status == 302, await resp.text()
                return resp.headers["Location"]

    async def back_to_app(self, location: str, *, cookie: bool = True) -> tuple[int, str]:
        """The redirect URL Slack sent the browser to, with the state cookie (unless not)."""
        parts = urlsplit(location)
        headers = {"Cookie": f"{self.cookie_name}={self.state}"} if cookie and self.state else {}
        async with aiohttp.ClientSession(trust_env=False) as session:
            async with session.get(self.url(f"{parts.path}?{parts.query}"), headers=headers) as resp:
                return resp.status, await resp.text()

    async def add_to_slack(self) -> tuple[int, str]:
        """The whole flow; the app's answer to the redirect."""
        status, authorize_url = await self.install_page()
        assert status == 200 and authorize_url, status
        return await self.back_to_app(await self.consent(authorize_url))


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
