"""A loopback OpenAI-compatible server: the "echo model" of the benchmarks, and the fake of the tests.

The privacy benchmarks drive the real openai client (and so the real request, timeout, retry
and validation code) against this server on ``127.0.0.1`` with an ephemeral port. In ``echo``
mode it answers every request with its entire prompt, the worst model there is for privacy:
whatever the reply prompt held is in the reply. Tests use the other modes (scripted answers,
malformed JSON, HTTP errors, delays, refusals); there is one implementation, here, in the
test-support package both use. openai 3.x sends through ``httpx2`` (respx does not
see it), which is one more reason for a real server over a patched transport.

Usage::

    async with FakeOpenAI() as fake:
        fake.set_script({"facts": []}, "plain text")     # replies in order
        llm = OpenAILLM(OpenAIConfig(base_url=fake.base_url, api_key="k", model="m"))
        ...
        fake.requests[0]["response_format"]               # every request body is recorded

Modes (one at a time; ``delay`` combines with any of them):

* ``script``    a queue of replies: a ``str`` is the content as is, a ``dict``/``list`` is sent
                as its JSON text, a :class:`FakeReply` controls status/refusal/usage per reply.
                An exhausted queue answers HTTP 400 (not retried) so a test fails loudly.
* ``malformed`` content ``"{not json"``.
* ``status``    HTTP ``status_code`` (500, 429, ...) with an OpenAI-style error body.
* ``echo``      the content is the whole prompt: every message's content joined by blank lines
                (the "echo model" of the privacy tests: it leaks everything it was shown).
* ``refusal``   ``message.refusal`` set, ``content`` null.
* ``misbehave`` a broken model, one way at a time (:data:`MISBEHAVIOURS`): ``repeat`` one
                sentence over and over, ``echo`` the prompt, ``wrap`` the reply in the prompt's
                markers, ``json`` instead of prose, ``empty`` content, ``foreign`` (another
                language), ``stall`` (answers only after ``stall_s``).
* ``delay``     seconds to sleep before answering (for timeouts).

A ``chooser`` (:meth:`FakeOpenAI.set_chooser`, with any mode) answers the delegate's ``choose``
prompts (epmem/reply/model_choice.py) by a rule over the facts it was offered, ``(id, text)``
pairs read from the prompt's ``<<<candidates`` block; every other request goes to the mode.
The named rules (:data:`CHOOSE_RULES`): ``all`` (every offered id), ``first`` (the first),
``none`` (an empty list), ``invent`` (an id that was not offered).

Token counts are deterministic: prompt = whitespace tokens of all message contents,
completion = whitespace tokens of the reply content.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from aiohttp import web

Mode = Literal["script", "malformed", "status", "echo", "refusal", "misbehave"]

#: the ways a broken model misbehaves (what SmolLM2-135M served by llama.cpp really did, and worse).
MISBEHAVIOURS: tuple[str, ...] = ("repeat", "echo", "wrap", "json", "empty", "foreign", "stall")
REPEATED = "I'm glad to hear that you're enjoying your new job."
FOREIGN = "Lo siento mucho, pero ahora mismo no puedo contarte nada sobre eso. Se lo diré a ella."


def _first_fact(prompt_text: str) -> str:
    """The first line of the prompt's facts block (so a misbehaving answer is about the facts)."""
    lines = prompt_text.split("<<<facts", 1)[-1].splitlines()[1:2]
    return lines[0].lstrip("0123456789.) ") if lines else "Nothing to say."


def misbehaving_answer(kind: str, prompt_text: str) -> tuple[str, str]:
    """(content, finish_reason) of a model that misbehaves in way ``kind``."""
    fact = _first_fact(prompt_text)
    if kind == "repeat":
        return " ".join([REPEATED] * 40), "length"
    if kind == "echo":
        return prompt_text, "stop"
    if kind == "wrap":
        return f"<<<reply 3f9a0c1b\n{fact}\n>>> end reply 3f9a0c1b", "stop"
    if kind == "json":
        return json.dumps({"reply": fact, "facts_used": [1]}), "stop"
    if kind == "empty":
        return "", "stop"
    if kind == "foreign":
        return FOREIGN, "stop"
    if kind == "stall":
        return fact, "stop"
    raise ValueError(f"unknown misbehaviour {kind!r}: use {', '.join(MISBEHAVIOURS)}")


#: the offered facts of a ``choose`` prompt: ``F1. text`` lines inside the candidates block.
_CANDIDATES = re.compile(r"<<<candidates (\w+)\n(.*?)\n>>> end candidates \1", re.S)
_OFFERED = re.compile(r"^(F\d+)\. (.*)$", re.M)

Offered = list[tuple[str, str]]
ChooseRule = Callable[[Offered], "str | dict[str, Any] | list[Any] | FakeReply"]

#: simple, stated rules for a model that chooses (the benchmarks' ``choose:RULE`` backends).
CHOOSE_RULES: dict[str, ChooseRule] = {
    "all": lambda offered: {"facts": [fid for fid, _ in offered]},
    "first": lambda offered: {"facts": [fid for fid, _ in offered[:1]]},
    "none": lambda offered: {"facts": []},
    "invent": lambda offered: {"facts": [f"F{len(offered) + 1}"]},
}


def offered_in(prompt_text: str) -> Offered | None:
    """The (id, text) pairs a ``choose`` prompt offers, or None for any other prompt."""
    block = _CANDIDATES.search(prompt_text)
    return None if block is None else _OFFERED.findall(block.group(2))


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    429: "rate_limit_error",
}


@dataclass(frozen=True, slots=True)
class FakeReply:
    """One scripted reply with full control (a plain str/dict in the script is the usual case)."""

    content: str | None = None
    refusal: str | None = None
    status: int = 200
    finish_reason: str = "stop"
    include_usage: bool = True
    choices: bool = True  # False: an empty ``choices`` list


def message_text(content: Any) -> str:
    """The text of one request message's content (a string or a list of text parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return str(content)


def count_tokens(text: str | None) -> int:
    return len(text.split()) if text else 0


class FakeOpenAI:
    def __init__(self, *, model: str = "fake-model", shutdown_timeout: float = 0.5) -> None:
        self.model = model
        self.mode: Mode = "script"
        self.script: deque[str | dict[str, Any] | list[Any] | FakeReply] = deque()
        self.delay: float = 0.0
        self.status_code: int = 500
        self.retry_after_ms: float | None = 10.0  # keeps the client's retry back-off short
        self.refusal_text: str = "I'm sorry, I can't help with that."
        self.include_usage: bool = True
        self.misbehaviour: str = "repeat"
        self.stall_s: float = 3600.0
        #: answers ``choose`` prompts by a rule over what they offer (None: the mode answers them).
        self.chooser: ChooseRule | None = None
        #: the facts offered by every ``choose`` prompt answered by the chooser, in order.
        self.offered: list[Offered] = []
        #: the content of the last answer sent (the echo benchmark checks what the model said).
        self.last_content: str | None = None
        self.requests: list[dict[str, Any]] = []
        #: a long benchmark turns this off so the request log does not grow without end.
        self.keep_requests: bool = True
        self.request_headers: list[dict[str, str]] = []
        self._ids = itertools.count(1)
        self._shutdown_timeout = shutdown_timeout
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    # ----- configuration -------------------------------------------------------------------

    def set_script(self, *replies: str | dict[str, Any] | list[Any] | FakeReply) -> None:
        self.mode = "script"
        self.script = deque(replies)

    def push(self, *replies: str | dict[str, Any] | list[Any] | FakeReply) -> None:
        self.script.extend(replies)

    def set_malformed(self) -> None:
        self.mode = "malformed"

    def set_status(self, status_code: int = 500, *, retry_after_ms: float | None = 10.0) -> None:
        self.mode = "status"
        self.status_code = status_code
        self.retry_after_ms = retry_after_ms

    def set_echo(self) -> None:
        self.mode = "echo"

    def set_misbehaviour(self, kind: str, stall_s: float = 3600.0) -> None:
        """Answer every request like a broken model (``stall``: after ``stall_s`` seconds)."""
        misbehaving_answer(kind, "")  # unknown kinds fail here, not in a request handler
        self.mode = "misbehave"
        self.misbehaviour = kind
        self.stall_s = stall_s

    def set_chooser(self, rule: str | ChooseRule | None) -> None:
        """Answer ``choose`` prompts by ``rule`` (a name in :data:`CHOOSE_RULES` or a function of
        the offered (id, text) pairs); the other requests by the mode as before. None: off."""
        self.chooser = CHOOSE_RULES[rule] if isinstance(rule, str) else rule

    def set_refusal(self, text: str | None = None) -> None:
        self.mode = "refusal"
        if text is not None:
            self.refusal_text = text

    # ----- lifecycle -----------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        if self._port is None:
            raise RuntimeError("FakeOpenAI is not started")
        return f"http://127.0.0.1:{self._port}/v1"

    async def start(self) -> FakeOpenAI:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat_completions)
        app.router.add_get("/v1/models", self._models)
        runner = web.AppRunner(app, shutdown_timeout=self._shutdown_timeout, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self._runner = runner
        self._port = int(runner.addresses[0][1])
        return self

    async def close(self) -> None:
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def __aenter__(self) -> FakeOpenAI:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ----- handlers ------------------------------------------------------------------------

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "object": "list",
                "data": [{"id": self.model, "object": "model", "created": 0, "owned_by": "fake"}],
            }
        )

    async def _chat_completions(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return self._error(400, "request body is not JSON")
        if not isinstance(body, dict):
            return self._error(400, "request body is not a JSON object")
        if self.keep_requests:
            self.requests.append(body)
            self.request_headers.append(dict(request.headers))

        if self.delay > 0:
            await asyncio.sleep(self.delay)

        messages = body.get("messages") or []
        prompt_text = "\n\n".join(message_text(m.get("content")) for m in messages if isinstance(m, dict))
        model = str(body.get("model") or self.model)

        offered = offered_in(prompt_text) if self.chooser is not None else None
        if self.chooser is not None and offered is not None:
            if self.keep_requests:
                self.offered.append(offered)
            reply = _as_reply(self.chooser(offered))
        elif self.mode == "status":
            return self._error(self.status_code, f"fake upstream error {self.status_code}")
        elif self.mode == "malformed":
            reply = FakeReply(content="{not json")
        elif self.mode == "echo":
            reply = FakeReply(content=prompt_text)
        elif self.mode == "refusal":
            reply = FakeReply(content=None, refusal=self.refusal_text)
        elif self.mode == "misbehave":
            if self.misbehaviour == "stall":
                await asyncio.sleep(self.stall_s)
            content, finish = misbehaving_answer(self.misbehaviour, prompt_text)
            reply = FakeReply(content=content, finish_reason=finish)
        else:
            if not self.script:
                return self._error(400, "fake_openai: script exhausted", retry=False)
            reply = _as_reply(self.script.popleft())
        if reply.status != 200:
            return self._error(reply.status, f"fake scripted error {reply.status}")

        self.last_content = reply.content
        return web.json_response(self._completion(model, prompt_text, reply))

    def _completion(self, model: str, prompt_text: str, reply: FakeReply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.refusal is not None:
            message["refusal"] = reply.refusal
        payload: dict[str, Any] = {
            "id": f"chatcmpl-fake-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": (
                [{"index": 0, "message": message, "finish_reason": reply.finish_reason, "logprobs": None}]
                if reply.choices
                else []
            ),
        }
        if self.include_usage and reply.include_usage:
            prompt_tokens = count_tokens(prompt_text)
            completion_tokens = count_tokens(reply.content or reply.refusal)
            payload["usage"] = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            }
        return payload

    def _error(self, status: int, message: str, *, retry: bool | None = None) -> web.Response:
        headers: dict[str, str] = {"x-request-id": f"req-fake-{next(self._ids)}"}
        if self.retry_after_ms is not None and status in (429, 500, 502, 503, 504):
            headers["retry-after-ms"] = str(self.retry_after_ms)
        if retry is not None:
            headers["x-should-retry"] = "true" if retry else "false"
        body = {
            "error": {
                "message": message,
                "type": _ERROR_TYPES.get(status, "server_error"),
                "param": None,
                "code": str(status),
            }
        }
        return web.json_response(body, status=status, headers=headers)


def _as_reply(item: str | dict[str, Any] | list[Any] | FakeReply) -> FakeReply:
    """A scripted (or chosen) answer as a reply: a str as is, a dict or list as its JSON text."""
    if isinstance(item, FakeReply):
        return item
    if isinstance(item, str):
        return FakeReply(content=item)
    return FakeReply(content=json.dumps(item))
