"""A fake Slack, good enough to run the real Bolt app and slack-sdk client against loopback.

Two halves (the second in testkit/slack_requests.py, importable from here too):

* ``FakeSlackApi``: a real aiohttp server on 127.0.0.1 (port 0) answering ``/api/<method>`` the
  way the Web API does (``{"ok": ...}`` JSON), recording every call with its parsed parameters so
  tests assert on what the connector actually sent rather than on mocks. It also takes
  ``response_url`` posts at ``/respond/<id>``.
  For per-person installs it plays Slack's side of OAuth: ``/oauth/v2/authorize`` sends the
  browser of whoever is :attr:`~FakeSlackApi.signed_in` back to the app with a one-time code,
  and ``oauth.v2.access`` trades the code for a bot token and that person's user token
  (:meth:`~FakeSlackApi.revoke` makes a token dead, as uninstalling does).
* ``SlackSender``: builds requests the way Slack signs them (v0 HMAC over the exact body bytes
  plus ``X-Slack-Request-Timestamp``) and posts them to the connector's HTTP endpoint: Events API
  envelopes as JSON, slash commands and ``block_actions`` as form bodies.
"""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import aiohttp
from aiohttp import web

from testkit.late import LateAnswers
from testkit.slack_requests import (
    BOT_ID,
    BOT_USER,
    TEAM,
    InstallBrowser,
    SlackSender,
    app_uninstalled,
    channel_message,
    event_envelope,
    im_message,
    member_event,
    mention,
    sign,
    tokens_revoked,
    wait_for,
)

__all__ = [
    "BOT_ID",
    "BOT_USER",
    "TEAM",
    "ApiCall",
    "FakeSlackApi",
    "InstallBrowser",
    "SlackSender",
    "app_uninstalled",
    "channel_message",
    "event_envelope",
    "im_message",
    "member_event",
    "mention",
    "sign",
    "tokens_revoked",
    "wait_for",
]


@dataclass
class ApiCall:
    """One Web API call as the fake saw it."""

    method: str
    params: dict[str, Any]
    token: str | None
    #: False when the fake answered it with an error.
    ok: bool = True


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
    #: method -> failures still to answer, one per call: (HTTP status, error, Retry-After or None).
    failures: dict[str, list[tuple[int, str, int | None]]] = field(default_factory=dict)
    #: calls taking effect at once (a message is posted) but answered only when the test
    #: releases them (after the client's timeout): :meth:`hold`.
    late: LateAnswers = field(default_factory=LateAnswers)
    #: calls that wait *before* taking effect until :meth:`unstall`; one whose client is gone
    #: by then never takes effect (the request never reached Slack): :meth:`stall`.
    stalled: dict[str, int] = field(default_factory=dict)
    stalled_now: int = 0
    #: only calls to these channels are held (:meth:`hold`) or stalled; None: any call.
    only_channels: set[str] | None = None
    _unstalled: asyncio.Event = field(default_factory=asyncio.Event)
    #: user tokens the fake accepts (token -> the user it acts as); any other token is the bot's.
    user_tokens: dict[str, str] = field(default_factory=dict)
    #: channel -> messages (``ts``, ``user``, ``text``, ``thread_ts``), served by
    #: conversations.history / conversations.replies; posts are added as they are made.
    messages: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: what stamps ``call_times`` (a test's fake clock, to see pacing in virtual time).
    clock: Callable[[], float] = time.monotonic
    call_times: list[tuple[str, float]] = field(default_factory=list)
    calls: list[ApiCall] = field(default_factory=list)
    responses: list[dict[str, Any]] = field(default_factory=list)
    #: OAuth: the app's credentials ``oauth.v2.access`` accepts, and the bot token it grants.
    client_id: str = "1111.2222"
    client_secret: str = "fake-client-secret"
    oauth_bot_token: str = "xoxb-oauth-bot"
    #: OAuth: who is signed in to Slack in the installing browser, and where the app's redirect
    #: URL is (Slack knows it from the app's settings).
    signed_in: str | None = None
    redirect_url: str | None = None
    #: OAuth: the query of every ``/oauth/v2/authorize`` visit (scopes asked for, state).
    authorize_visits: list[dict[str, str]] = field(default_factory=list)
    #: OAuth: one-time codes not yet traded -> (team, user); tokens revoked (uninstalls).
    codes: dict[str, tuple[str, str]] = field(default_factory=dict)
    revoked: set[str] = field(default_factory=set)
    #: Socket Mode: what the client sent back (acks carry ``envelope_id``).
    socket_acks: list[dict[str, Any]] = field(default_factory=list)
    _sockets: list[web.WebSocketResponse] = field(default_factory=list)
    port: int = 0
    _runner: web.AppRunner | None = None
    _ts: int = 0
    _tick: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        """What the connector's ``api_url`` should be (trailing slash: slack-sdk appends)."""
        return f"{self.base_url}/api/"

    def service_env(self, token: str, secret: str, **extra: str) -> dict[str, str]:
        """The environment that points the bot's Slack connector at this server, its events
        endpoint on a free loopback port (as FakeTelegram.service_env), plus ``extra``."""
        return {
            "SLACK_BOT_TOKEN": token,
            "SLACK_SIGNING_SECRET": secret,
            "EPMEM_SLACK_API_URL": self.api_url,
            "EPMEM_SLACK_PORT": "0",
            "EPMEM_SLACK_HOST": "127.0.0.1",
            **extra,
        }

    def response_url(self, name: str = "1") -> str:
        return f"{self.base_url}/respond/{name}"

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_post("/respond/{name}", self._respond)
        app.router.add_get("/socket", self._socket)
        app.router.add_get("/oauth/v2/authorize", self._authorize)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    async def stop(self) -> None:
        self.late.release()
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    # ---------------------------------------------------------------- queries for tests

    def calls_to(self, method: str) -> list[ApiCall]:
        return [c for c in self.calls if c.method == method]

    def posts(self, channel: str | None = None) -> list[dict[str, Any]]:
        """Params of every chat.postMessage that went through (to ``channel`` when given)."""
        return [
            c.params
            for c in self.calls_to("chat.postMessage")
            if c.ok and (channel is None or c.params.get("channel") == channel)
        ]

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 5.0) -> None:
        """Until ``predicate()`` holds, re-checked after every API call; TimeoutError otherwise."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            self._tick.clear()
            if predicate():
                return
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                raise TimeoutError("fake Slack: condition not met")
            try:
                await asyncio.wait_for(self._tick.wait(), remaining)
            except TimeoutError:
                pass

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
        self.call_times.append((method, self.clock()))
        self._tick.set()
        if method in self.fail:
            self.calls[-1].ok = False
            return web.json_response({"ok": False, "error": self.fail[method]})
        queued = self.failures.get(method)
        if queued:
            self.calls[-1].ok = False
            status, error, retry_after = queued.pop(0)
            headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
            return web.json_response({"ok": False, "error": error}, status=status, headers=headers)
        chosen = self.only_channels is None or params.get("channel") in self.only_channels
        if chosen and self.stalled.get(method):
            self.stalled[method] -= 1
            self.stalled_now += 1
            call = self.calls[-1]
            await self._unstalled.wait()
            if request.transport is None or request.transport.is_closing():
                call.ok = False  # others were made meanwhile: this one's, not the last
                return web.json_response({"ok": False, "error": "client_gone"})
        handler = getattr(self, "_m_" + method.replace(".", "_"), None)
        if handler is None:
            return web.json_response({"ok": False, "error": "unknown_method"})
        if token in self.revoked:
            self.calls[-1].ok = False
            return web.json_response({"ok": False, "error": "token_revoked"})
        body: dict[str, Any] = handler(params, token)
        if body.get("ok") is False:
            self.calls[-1].ok = False
            return web.json_response(body)
        if chosen:
            await self.late.wait_to_answer(method)
        return web.json_response({"ok": True, **body})

    def fail_next(
        self, method: str, error: str, *, status: int = 200, retry_after: int | None = None, times: int = 1
    ) -> None:
        """The next ``times`` calls of ``method`` fail; later calls work again."""
        self.failures.setdefault(method, []).extend([(status, error, retry_after)] * times)

    def hold(self, method: str = "chat.postMessage", *, times: int = 1) -> None:
        """The next ``times`` calls of ``method`` take effect at once but are answered only at
        ``late.release()``: a client whose timeout ran out cannot know they went through."""
        self.late.hold(method, times)

    def stall(self, method: str = "chat.postMessage", *, times: int = 1) -> None:
        """The next ``times`` calls of ``method`` wait before taking effect until :meth:`unstall`
        (a request still on its way when its sender dies)."""
        self.stalled[method] = self.stalled.get(method, 0) + times

    def unstall(self) -> None:
        self._unstalled.set()

    def rate_limit(self, method: str = "chat.postMessage", *, retry_after: int = 1, times: int = 1) -> None:
        """HTTP 429 ``ratelimited`` with ``Retry-After`` for the next ``times`` calls."""
        self.fail_next(method, "ratelimited", status=429, retry_after=retry_after, times=times)

    def actor(self, token: str | None) -> str:
        """Who a call acts as: the user of a user token, else the bot."""
        return self.user_tokens.get(token or "", self.bot_user_id)

    def say(self, channel: str, user: str, text: str, ts: str, thread_ts: str | None = None) -> None:
        """A message someone wrote in ``channel`` (what history calls will list)."""
        self.messages.setdefault(channel, []).append(
            {"type": "message", "ts": ts, "user": user, "text": text, **({"thread_ts": thread_ts} if thread_ts else {})}
        )

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

    async def socket_send(
        self, payload: dict[str, Any], envelope_id: str, kind: str = "events_api", retry_attempt: int = 0
    ) -> None:
        """Push one Socket Mode envelope (``payload`` is what HTTP would have posted); a
        redelivery carries a new envelope id and ``retry_attempt`` > 0."""
        envelope = {
            "envelope_id": envelope_id,
            "type": kind,
            "payload": payload,
            "accepts_response_payload": False,
            "retry_attempt": retry_attempt,
            "retry_reason": "timeout" if retry_attempt else "",
        }
        await self._sockets[-1].send_str(json.dumps(envelope))

    # ---------------------------------------------------------------- OAuth

    @property
    def authorization_url(self) -> str:
        """Where the app's "Add to Slack" button should point (instead of slack.com's)."""
        return f"{self.base_url}/oauth/v2/authorize"

    def grant(self, user: str, team: str | None = None) -> str:
        """A one-time code, as Slack's redirect carries after ``user`` approved the app."""
        code = f"code-{secrets.token_hex(6)}"
        self.codes[code] = (team or self.team_id, user)
        return code

    def revoke(self, *tokens: str) -> None:
        """These tokens no longer work (the person or the workspace removed the app)."""
        self.revoked.update(tokens)

    def user_token_of(self, user: str) -> str | None:
        """The (newest) user token ``oauth.v2.access`` granted ``user``."""
        mine = [t for t, u in self.user_tokens.items() if u == user and t not in self.revoked]
        return mine[-1] if mine else None

    async def _authorize(self, request: web.Request) -> web.Response:
        """Slack's consent page, approved at once by whoever is signed in: back to the app with
        a code and the app's own ``state``."""
        query = dict(request.query)
        self.authorize_visits.append(query)
        if query.get("client_id") != self.client_id or self.signed_in is None:
            return web.Response(status=400, text="invalid_client_id or nobody signed in")
        target = query.get("redirect_uri") or self.redirect_url
        if target is None:
            return web.Response(status=400, text="no redirect URL")
        back = {"code": self.grant(self.signed_in), "state": query.get("state", "")}
        raise web.HTTPFound(f"{target}?{urlencode(back)}")

    def _m_oauth_v2_access(self, params: dict[str, Any], token: str | None) -> dict[str, Any]:
        """The code traded for tokens; the client authenticates with HTTP Basic (slack-sdk)."""
        basic = (token or "").removeprefix("Basic ")
        client = base64.b64decode(basic).decode() if basic else ""
        if client != f"{self.client_id}:{self.client_secret}":
            return {"ok": False, "error": "invalid_client_id"}
        grant = self.codes.pop(str(params.get("code")), None)
        if grant is None:
            return {"ok": False, "error": "invalid_code"}
        team, user = grant
        user_token = f"xoxp-{user.lower()}-{secrets.token_hex(4)}"
        self.user_tokens[user_token] = user
        return {
            "app_id": "A1",
            "access_token": self.oauth_bot_token,
            "token_type": "bot",
            "scope": "chat:write,commands,im:history",
            "bot_user_id": self.bot_user_id,
            "team": {"id": team, "name": "Fake"},
            "enterprise": None,
            "is_enterprise_install": False,
            "authed_user": {
                "id": user,
                "scope": "im:history,im:read,chat:write",
                "access_token": user_token,
                "token_type": "user",
            },
        }

    def _m_apps_connections_open(self, params: dict[str, Any], token: str | None) -> dict[str, Any]:
        return {"url": f"ws://127.0.0.1:{self.port}/socket"}

    def _next_ts(self) -> str:
        """Now, as Slack writes it, strictly increasing."""
        self._ts = max(self._ts + 1, int(time.time() * 1_000_000))
        return f"{self._ts // 1_000_000}.{self._ts % 1_000_000:06d}"

    def _m_auth_test(self, params: dict[str, Any], token: str | None) -> dict[str, Any]:
        if token in self.user_tokens:
            return {
                "url": "https://fake.slack.com/",
                "team": "Fake",
                "user": "owner",
                "team_id": self.team_id,
                "user_id": self.user_tokens[token],
                "is_enterprise_install": False,
            }
        return {
            "url": "https://fake.slack.com/",
            "team": "Fake",
            "user": "epmem",
            "team_id": self.team_id,
            "user_id": self.bot_user_id,
            "bot_id": self.bot_id,
            "is_enterprise_install": False,
        }

    def _m_chat_postMessage(self, params: dict[str, Any], token: str | None) -> dict[str, Any]:
        ts = self._next_ts()
        self.say(
            str(params.get("channel")), self.actor(token), str(params.get("text")), ts, params.get("thread_ts") or None
        )
        return {"channel": params.get("channel"), "ts": ts, "message": {"text": params.get("text"), "ts": ts}}

    def _m_chat_postEphemeral(self, params: dict[str, Any], token: str | None) -> dict[str, Any]:
        return {"message_ts": self._next_ts()}

    def _m_conversations_members(self, params: dict[str, Any], token: str | None) -> dict[str, Any]:
        everyone = self.members.get(str(params.get("channel")), [])
        offset = int(params.get("cursor") or 0)
        page = everyone[offset : offset + self.page_size]
        rest = offset + self.page_size < len(everyone)
        return {
            "members": page,
            "response_metadata": {"next_cursor": str(offset + self.page_size) if rest else ""},
        }

    def _m_conversations_open(self, params: dict[str, Any], token: str | None) -> dict[str, Any]:
        users = str(params.get("users", ""))
        return {"channel": {"id": "D" + users.replace(",", "")}}

    def _m_conversations_history(self, params: dict[str, Any], token: str | None) -> dict[str, Any]:
        oldest = float(params.get("oldest") or 0)
        found = [m for m in self.messages.get(str(params.get("channel")), []) if float(m["ts"]) > oldest]
        return {"messages": sorted(found, key=lambda m: float(m["ts"]), reverse=True), "has_more": False}

    def _m_conversations_replies(self, params: dict[str, Any], token: str | None) -> dict[str, Any]:
        root, oldest = str(params.get("ts")), float(params.get("oldest") or 0)
        found = [
            m
            for m in self.messages.get(str(params.get("channel")), [])
            if (m.get("thread_ts") == root or m["ts"] == root) and float(m["ts"]) > oldest
        ]
        return {"messages": sorted(found, key=lambda m: float(m["ts"])), "has_more": False}

    def _m_users_info(self, params: dict[str, Any], token: str | None) -> dict[str, Any]:
        user = str(params.get("user"))
        return {"user": {"id": user, "team_id": self.user_teams.get(user, self.team_id), "name": user.lower()}}
