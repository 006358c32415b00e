"""A fake Slack, good enough to run the real Bolt app and slack-sdk client against loopback.

Two halves:

* ``FakeSlackApi``: a real aiohttp server on 127.0.0.1 (port 0) answering ``/api/<method>`` the
  way the Web API does (``{"ok": ...}`` JSON), recording every call with its parsed parameters so
  tests assert on what the connector actually sent rather than on mocks. It also takes
  ``response_url`` posts at ``/respond/<id>``.
* ``SlackSender``: builds requests the way Slack signs them (v0 HMAC over the exact body bytes
  plus ``X-Slack-Request-Timestamp``) and posts them to the connector's HTTP endpoint: Events API
  envelopes as JSON, slash commands and ``block_actions`` as form bodies.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import aiohttp
from aiohttp import web
from slack_sdk.signature import SignatureVerifier

TEAM = "T1"
BOT_USER = "UBOT"
BOT_ID = "BBOT"


@dataclass
class ApiCall:
    """One Web API call as the fake saw it."""

    method: str
    params: dict[str, Any]
    token: str | None


@dataclass
class FakeSlackApi:
    """The Web API endpoints the connector uses, with knobs for members, paging and failures."""

    team_id: str = TEAM
    bot_user_id: str = BOT_USER
    bot_id: str = BOT_ID
    #: channel id -> member user ids, served by conversations.members.
    members: dict[str, list[str]] = field(default_factory=dict)
    #: conversations.members page size (a next_cursor is returned while more remain).
    page_size: int = 2
    #: user id -> team id, served by users.info (default: this team).
    user_teams: dict[str, str] = field(default_factory=dict)
    #: method -> Slack error code: that method answers ``{"ok": false, "error": code}``.
    fail: dict[str, str] = field(default_factory=dict)
    calls: list[ApiCall] = field(default_factory=list)
    responses: list[dict[str, Any]] = field(default_factory=list)
    #: Socket Mode: what the client sent back (acks carry ``envelope_id``).
    socket_acks: list[dict[str, Any]] = field(default_factory=list)
    _sockets: list[web.WebSocketResponse] = field(default_factory=list)
    port: int = 0
    _runner: web.AppRunner | None = None
    _ts: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        """What the connector's ``api_url`` should be (trailing slash: slack-sdk appends)."""
        return f"{self.base_url}/api/"

    def response_url(self, name: str = "1") -> str:
        return f"{self.base_url}/respond/{name}"

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_post("/respond/{name}", self._respond)
        app.router.add_get("/socket", self._socket)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    async def stop(self) -> None:
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    # ---------------------------------------------------------------- queries for tests

    def calls_to(self, method: str) -> list[ApiCall]:
        return [c for c in self.calls if c.method == method]

    def posts(self, channel: str | None = None) -> list[dict[str, Any]]:
        """Params of every chat.postMessage (to ``channel`` when given)."""
        return [
            c.params
            for c in self.calls_to("chat.postMessage")
            if channel is None or c.params.get("channel") == channel
        ]

    # ---------------------------------------------------------------- server

    async def _params(self, request: web.Request) -> dict[str, Any]:
        params: dict[str, Any] = dict(request.query)
        if request.method == "POST" and request.can_read_body:
            if request.content_type == "application/json":
                params.update(await request.json())
            else:
                params.update(dict(await request.post()))
        for key in ("blocks",):
            if isinstance(params.get(key), str):
                params[key] = json.loads(params[key])
        return params

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params = await self._params(request)
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") if auth else None
        self.calls.append(ApiCall(method, params, token))
        if method in self.fail:
            return web.json_response({"ok": False, "error": self.fail[method]})
        handler = getattr(self, "_m_" + method.replace(".", "_"), None)
        if handler is None:
            return web.json_response({"ok": False, "error": "unknown_method"})
        body: dict[str, Any] = handler(params)
        return web.json_response({"ok": True, **body})

    async def _respond(self, request: web.Request) -> web.Response:
        self.responses.append({"name": request.match_info["name"], **(await request.json())})
        return web.Response(text="ok")

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        """Socket Mode's WebSocket: envelopes go out via ``socket_send``, acks are recorded."""
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self._sockets.append(ws)
        await ws.send_str(json.dumps({"type": "hello", "num_connections": 1}))
        try:
            async for msg in ws:
                if msg.type == aiohttp.WSMsgType.TEXT:
                    self.socket_acks.append(json.loads(msg.data))
        finally:
            self._sockets.remove(ws)
        return ws

    @property
    def socket_connected(self) -> bool:
        return bool(self._sockets)

    async def socket_send(self, payload: dict[str, Any], envelope_id: str, kind: str = "events_api") -> None:
        """Push one Socket Mode envelope (``payload`` is what HTTP would have posted)."""
        envelope = {
            "envelope_id": envelope_id,
            "type": kind,
            "payload": payload,
            "accepts_response_payload": False,
            "retry_attempt": 0,
            "retry_reason": "",
        }
        await self._sockets[-1].send_str(json.dumps(envelope))

    def _m_apps_connections_open(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"url": f"ws://127.0.0.1:{self.port}/socket"}

    def _next_ts(self) -> str:
        self._ts += 1
        return f"1700000000.{self._ts:06d}"

    def _m_auth_test(self, params: dict[str, Any]) -> dict[str, Any]:
        return {
            "url": "https://fake.slack.com/",
            "team": "Fake",
            "user": "epmem",
            "team_id": self.team_id,
            "user_id": self.bot_user_id,
            "bot_id": self.bot_id,
            "is_enterprise_install": False,
        }

    def _m_chat_postMessage(self, params: dict[str, Any]) -> dict[str, Any]:
        ts = self._next_ts()
        return {"channel": params.get("channel"), "ts": ts, "message": {"text": params.get("text"), "ts": ts}}

    def _m_chat_postEphemeral(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"message_ts": self._next_ts()}

    def _m_conversations_members(self, params: dict[str, Any]) -> dict[str, Any]:
        everyone = self.members.get(str(params.get("channel")), [])
        offset = int(params.get("cursor") or 0)
        page = everyone[offset : offset + self.page_size]
        rest = offset + self.page_size < len(everyone)
        return {
            "members": page,
            "response_metadata": {"next_cursor": str(offset + self.page_size) if rest else ""},
        }

    def _m_conversations_open(self, params: dict[str, Any]) -> dict[str, Any]:
        users = str(params.get("users", ""))
        return {"channel": {"id": "D" + users.replace(",", "")}}

    def _m_users_info(self, params: dict[str, Any]) -> dict[str, Any]:
        user = str(params.get("user"))
        return {"user": {"id": user, "team_id": self.user_teams.get(user, self.team_id), "name": user.lower()}}


# -------------------------------------------------------------------- signed requests


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
) -> dict[str, Any]:
    """An Events API ``event_callback`` envelope around ``event``."""
    return {
        "token": "legacy-verification-token",
        "team_id": team_id,
        "api_app_id": "A1",
        "event": event,
        "type": "event_callback",
        "event_id": event_id,
        "event_time": int(time.time()),
        "authorizations": [
            {"enterprise_id": None, "team_id": team_id, "user_id": BOT_USER, "is_bot": True, "is_enterprise_install": False}
        ],
        "is_ext_shared_channel": ext_shared,
    }


def im_message(user: str, text: str, *, channel: str = "D1", ts: str = "1700000001.000100", **extra: Any) -> dict[str, Any]:
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


def mention(user: str, text: str, *, channel: str = "C1", ts: str = "1700000002.000200", **extra: Any) -> dict[str, Any]:
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
            "container": {"type": "message", "message_ts": "1700000000.000001", "channel_id": channel, "is_ephemeral": False},
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
