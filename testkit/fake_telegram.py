"""A real Telegram Bot API server on loopback, for driving python-telegram-bot end to end.

Why a server and not mocks: PTB's only network seam is its HTTP request object, and the
connector's behaviour (long polling, offsets, form-encoded bodies, Message parsing, business
connection ids, reply parameters) only shows up when PTB really talks HTTP.  This fake speaks
just enough of the Bot API for the routes PTB and our connector use, records what the bot
sent, and lets a test enqueue updates that the next ``getUpdates`` long poll returns at once.

Usage::

    async with FakeTelegram() as tg:
        tg.private_text(tg.user(42, "Alice"), "hi")
        await tg.wait_for_sent(1)

or the ``fake_telegram`` fixture of tests/conftest.py. The updates a test can enqueue
(messages, joins, stickers, Business messages, button presses) are built in
testkit/telegram_updates.py.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from testkit.late import LateAnswers
from testkit.telegram_updates import JSONDict, TelegramUpdates


#: form fields PTB JSON-encodes (objects, arrays, booleans) and that we decode back.
_JSON_FIELDS = frozenset(
    {
        "reply_markup",
        "reply_parameters",
        "entities",
        "caption_entities",
        "allowed_updates",
        "link_preview_options",
        "commands",
        "scope",
        "drop_pending_updates",
        "show_alert",
        "disable_notification",
        "protect_content",
        "allow_paid_broadcast",
    }
)
#: numeric form fields; PTB sends ints as their string form (``chat_id`` arrives as "42").
_INT_FIELDS = frozenset(
    {
        "chat_id",
        "user_id",
        "message_id",
        "message_thread_id",
        "offset",
        "limit",
        "timeout",
        "reply_to_message_id",
        "max_connections",
    }
)


def _decode_form(form: Any) -> JSONDict:
    """Turn PTB's form body back into the JSON-ish dict Telegram would see."""
    out: JSONDict = {}
    for key, value in form.items():
        if not isinstance(value, str):  # a file upload: keep the part as is
            out[key] = value
            continue
        if key in _JSON_FIELDS:
            try:
                out[key] = json.loads(value)
                continue
            except ValueError:
                pass
        if key in _INT_FIELDS and value.lstrip("-").isdigit():
            out[key] = int(value)
            continue
        out[key] = value
    return out


class FakeTelegram(TelegramUpdates):
    """The fake Bot API: routes under ``/bot<token>/<method>``, an update queue, a send log.

    ``sent`` holds every sendMessage payload (decoded), ``calls`` every (method, payload),
    ``answered_callbacks`` every answerCallbackQuery payload.  ``admins`` and
    ``member_counts`` configure what getChatAdministrators / getChatMemberCount return per
    chat; ``errors`` makes a method fail with (error_code, description).
    """

    def __init__(
        self,
        token: str = "123456:TEST-TOKEN",
        bot_id: int = 123456,
        bot_username: str = "delegate_bot",
    ) -> None:
        self.token = token
        self.bot_id = bot_id
        self.bot_username = bot_username
        self.bot_user: JSONDict = {
            "id": bot_id,
            "is_bot": True,
            "first_name": "Delegate",
            "username": bot_username,
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
        }
        self.updates: list[JSONDict] = []
        self.sent: list[JSONDict] = []
        self.sent_messages: list[JSONDict] = []
        self.calls: list[tuple[str, JSONDict]] = []
        self.answered_callbacks: list[JSONDict] = []
        #: setMyCommands: the menu per scope (a chat id for a chat scope, else the scope's type).
        self.menus: dict[object, list[tuple[str, str]]] = {}
        self.unknown_methods: list[str] = []
        self.admins: dict[int, list[JSONDict]] = {}
        self.member_counts: dict[int, int] = {}
        self.errors: dict[str, tuple[int, str]] = {}
        #: method -> failures still to answer, one per call, before it works again
        #: (error_code, description, retry_after or None).
        self.failures: dict[str, list[tuple[int, str, int | None]]] = {}
        #: calls carried out at once (a message is sent) but answered only when the test
        #: releases them (after the client's timeout): :meth:`hold`.
        self.late = LateAnswers()
        #: what stamps ``call_times`` (a test's fake clock, to see pacing in virtual time).
        self.clock: Callable[[], float] = time.monotonic
        #: (method, clock()) of every call, in order.
        self.call_times: list[tuple[str, float]] = []
        self.business_connections: dict[str, JSONDict] = {}
        self.chats: dict[int, JSONDict] = {}
        self._members: dict[int, dict[int, JSONDict]] = {}
        self._update_ids = itertools.count(1)
        self._message_ids = itertools.count(1000)
        self._callback_ids = itertools.count(1)
        self._confirmed = 0
        self._new_update = asyncio.Event()
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self._closing = False
        self.port = 0
        self._routes: dict[str, Callable[[JSONDict], Any]] = {
            "getMe": lambda p: self.bot_user,
            "sendMessage": self._send_message,
            "answerCallbackQuery": self._answer_callback,
            "getChatAdministrators": self._chat_admins,
            "getChatMemberCount": self._member_count,
            "getChatMember": self._chat_member,
            "getBusinessConnection": self._business_connection,
            "deleteWebhook": lambda p: True,
            "setWebhook": lambda p: True,
            "getWebhookInfo": lambda p: {
                "url": "",
                "has_custom_certificate": False,
                "pending_update_count": 0,
            },
            "setMyCommands": self._set_commands,
            "deleteMyCommands": lambda p: True,
            "close": lambda p: True,
            "logOut": lambda p: True,
        }

    # -- server lifecycle -------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """What to give ``ApplicationBuilder().base_url`` (PTB appends the token)."""
        return f"http://127.0.0.1:{self.port}/bot"

    def service_env(self, **extra: str) -> dict[str, str]:
        """The environment that points the bot's Telegram connector at this server (short long
        polls, so tests stop quickly), plus ``extra`` variables."""
        return {
            "TELEGRAM_BOT_TOKEN": self.token,
            "EPMEM_TELEGRAM_API_URL": self.base_url,
            "EPMEM_TELEGRAM_POLL_TIMEOUT": "1",
            **extra,
        }

    async def start(self) -> None:
        """Bind 127.0.0.1 on a free port; a short shutdown timeout so open long polls
        do not hold teardown for aiohttp's default 60 s."""
        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self._dispatch)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    async def stop(self) -> None:
        """Release the port; wakes pending long polls first so they end promptly."""
        self._closing = True
        self._new_update.set()
        self.late.release()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeTelegram:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- HTTP -------------------------------------------------------------------------------

    async def _dispatch(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return web.json_response({"ok": False, "error_code": 401, "description": "Unauthorized"}, status=401)
        method = request.match_info["method"]
        payload = await self._parse_body(request)
        self.calls.append((method, payload))
        self.call_times.append((method, self.clock()))
        if method in self.errors:
            code, description = self.errors[method]
            return web.json_response({"ok": False, "error_code": code, "description": description}, status=code)
        queued = self.failures.get(method)
        if queued:
            code, description, retry_after = queued.pop(0)
            body: JSONDict = {"ok": False, "error_code": code, "description": description}
            if retry_after is not None:
                body["parameters"] = {"retry_after": retry_after}
            async with self._changed:
                self._changed.notify_all()
            return web.json_response(body, status=code)
        if method == "getUpdates":
            result: Any = await self._get_updates(payload)
        elif method in self._routes:
            result = self._routes[method](payload)
        else:
            self.unknown_methods.append(method)
            return web.json_response(
                {"ok": False, "error_code": 404, "description": f"Not Found: method {method}"},
                status=404,
            )
        async with self._changed:
            self._changed.notify_all()
        await self.late.wait_to_answer(method)
        return web.json_response({"ok": True, "result": result})

    @staticmethod
    async def _parse_body(request: web.Request) -> JSONDict:
        """PTB posts form data; other clients post JSON; GET carries the query string."""
        if request.content_type == "application/json":
            body = await request.json()
            return dict(body) if isinstance(body, dict) else {}
        if request.method == "POST" and request.can_read_body:
            return _decode_form(await request.post())
        return _decode_form(request.query)

    async def _get_updates(self, payload: JSONDict) -> list[JSONDict]:
        """Long poll: return pending updates at once, else wait up to ``timeout`` seconds."""
        offset = int(payload.get("offset") or 0)
        limit = int(payload.get("limit") or 100)
        timeout = float(payload.get("timeout") or 0)
        if offset:
            # Telegram forgets every update below the offset once it is confirmed.
            self._confirmed = max(self._confirmed, offset)
            self.updates = [u for u in self.updates if u["update_id"] >= offset]
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            pending = [u for u in self.updates if u["update_id"] >= self._confirmed]
            remaining = deadline - asyncio.get_running_loop().time()
            if pending or remaining <= 0 or self._closing:
                return pending[:limit]
            self._new_update.clear()
            try:
                await asyncio.wait_for(self._new_update.wait(), remaining)
            except TimeoutError:
                pass

    def fail(self, method: str, code: int, description: str, *, retry_after: int | None = None, times: int = 1) -> None:
        """The next ``times`` calls of ``method`` fail like Telegram would (429 with
        ``retry_after`` is flood control); later calls work again."""
        self.failures.setdefault(method, []).extend([(code, description, retry_after)] * times)

    def hold(self, method: str = "sendMessage", *, times: int = 1) -> None:
        """The next ``times`` calls of ``method`` take effect at once but are answered only at
        ``late.release()``: a client whose timeout ran out cannot know they went through."""
        self.late.hold(method, times)

    def flood(self, method: str = "sendMessage", *, retry_after: int = 1, times: int = 1) -> None:
        """Flood control: ``Too Many Requests: retry after N`` for the next ``times`` calls."""
        self.fail(method, 429, f"Too Many Requests: retry after {retry_after}", retry_after=retry_after, times=times)

    # -- methods ----------------------------------------------------------------------------

    def _send_message(self, payload: JSONDict) -> JSONDict:
        self.sent.append(payload)
        chat_id = int(payload["chat_id"])
        message: JSONDict = {
            "message_id": next(self._message_ids),
            "date": int(time.time()),
            "chat": self.chats.get(chat_id, {"id": chat_id, "type": "private", "first_name": "X"}),
            "from": self.bot_user,
            "text": payload.get("text", ""),
        }
        connection_id = payload.get("business_connection_id")
        if connection_id:
            message["business_connection_id"] = connection_id
            connection = self.business_connections.get(connection_id)
            if connection is not None:
                message["from"] = connection["user"]
                message["sender_business_bot"] = self.bot_user
        if "reply_markup" in payload:
            message["reply_markup"] = payload["reply_markup"]
        self.sent_messages.append(message)
        return message

    def _set_commands(self, payload: JSONDict) -> bool:
        """The command menu, kept per scope: a chat's id for a chat scope, else the scope's type."""
        scope = payload.get("scope") or {"type": "default"}
        key = scope.get("chat_id", scope.get("type")) if isinstance(scope, dict) else str(scope)
        self.menus[key] = [(c["command"], c["description"]) for c in payload.get("commands") or []]
        return True

    def _answer_callback(self, payload: JSONDict) -> bool:
        self.answered_callbacks.append(payload)
        return True

    def _chat_admins(self, payload: JSONDict) -> list[JSONDict]:
        chat_id = int(payload["chat_id"])
        out: list[JSONDict] = []
        for i, user in enumerate(self.admins.get(chat_id, [])):
            if i == 0:
                out.append({"status": "creator", "user": user, "is_anonymous": False})
                continue
            rights = (
                "can_be_edited can_manage_chat can_delete_messages can_manage_video_chats "
                "can_restrict_members can_promote_members can_change_info can_invite_users "
                "can_post_stories can_edit_stories can_delete_stories"
            ).split()
            member: JSONDict = {"status": "administrator", "user": user, "is_anonymous": False}
            member.update({right: False for right in rights})
            out.append(member)
        return out

    def _member_count(self, payload: JSONDict) -> int:
        chat_id = int(payload["chat_id"])
        if chat_id in self.member_counts:
            return self.member_counts[chat_id]
        members = set(self._members.get(chat_id, {}))
        members.update(admin["id"] for admin in self.admins.get(chat_id, []))
        members.add(self.bot_id)
        return len(members)

    def _chat_member(self, payload: JSONDict) -> JSONDict:
        """``member`` for users the fake has in the chat (or admins), else ``left``."""
        chat_id = int(payload["chat_id"])
        user_id = int(payload["user_id"])
        for admin in self.admins.get(chat_id, []):
            if admin["id"] == user_id:
                return {"status": "member", "user": admin}
        user = self._members.get(chat_id, {}).get(user_id)
        if user is not None:
            return {"status": "member", "user": user}
        return {"status": "left", "user": self.user(user_id, "Gone")}

    def _business_connection(self, payload: JSONDict) -> JSONDict:
        connection = self.business_connections.get(str(payload.get("business_connection_id")))
        if connection is None:
            raise web.HTTPBadRequest(
                text=json.dumps({"ok": False, "error_code": 400, "description": "Bad Request: not found"}),
                content_type="application/json",
            )
        return connection

    # -- waiting ----------------------------------------------------------------------------

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 5.0) -> None:
        """Wait until ``predicate()`` holds after some request; TimeoutError otherwise."""
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(predicate), timeout)

    async def wait_for_sent(self, n: int, timeout: float = 5.0) -> list[JSONDict]:
        """Wait until at least ``n`` sendMessage calls were recorded; returns them."""
        await self.wait_for(lambda: len(self.sent) >= n, timeout)
        return list(self.sent)

    async def wait_for_call(self, method: str, n: int = 1, timeout: float = 5.0) -> None:
        """Wait until ``method`` was called at least ``n`` times."""
        await self.wait_for(lambda: sum(m == method for m, _ in self.calls) >= n, timeout)

    async def wait_until_consumed(self, timeout: float = 5.0) -> None:
        """Wait until the bot confirmed every queued update (its next poll moved the offset
        past them), i.e. PTB has fetched and dispatched them."""
        last = self.updates[-1]["update_id"] if self.updates else 0
        await self.wait_for(lambda: self._confirmed > last, timeout)
