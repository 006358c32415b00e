"""The audit page: a read-only Starlette app over the audit, for the owner's eyes only.

Access: every request carries the owner's token as ``Authorization: Bearer TOKEN``, or the
session cookie the login form sets: a random id made at each sign-in (never derived from the
token, so a copied cookie is not a copied token and dies with its session), HttpOnly,
SameSite=Strict, ``Secure`` when the page listens beyond loopback, ending at sign-out or after
``session_ttl_s``. Anything else gets 401 and the login form, and no data: the check runs before
routing, so even an unknown path answers 401. The only POSTs are the login and the logout,
which change nothing but the browser's session. Templates autoescape everything, and show
bidirectional controls (U+202E...) as visible marks, so a question cannot reorder what the owner
reads; the one value echoed from a request that is not escaped by a template is never echoed at
all (a bad ``next`` is dropped).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from epmem.audit.log import AuditLog
from epmem.audit.register import FactRegister
from epmem.audit.schema import MESSAGE_OUTCOMES
from epmem.audit.web.reader import PAGE_SIZE, AuditPages, BadQuery, Filters
from epmem.policy.model import Policy
from epmem.policy.overlay import Overlay
from epmem.db import connect_to

COOKIE = "epmem_audit"
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}


@dataclass(frozen=True, slots=True)
class PageConfig:
    #: the audit log's file, or its PostgreSQL server's URL.
    audit_db: Path | str
    state_db: Path | str
    #: the owner's policy file, read again for every who-knows page (it may have been edited).
    policy: Callable[[], Awaitable[Policy]]
    token: str
    #: ``Secure`` cookies: set when the page listens beyond loopback (behind HTTPS there).
    secure_cookie: bool = False
    #: a sign-in lasts this long (seconds), then the form again.
    session_ttl_s: float = 8 * 3600.0
    clock: Callable[[], float] = time.monotonic
    #: the deployment's heard-it-from-you setting (``EPMEM_HEARD_IT``; the owner's /heard wins).
    heard_it: bool = True


class Sessions:
    """Signed-in browsers: a random id each, until sign-out or expiry. In memory: a restart of
    the page signs everyone out, which is the safe way round."""

    def __init__(self, ttl_s: float, clock: Callable[[], float]) -> None:
        self.ttl_s = ttl_s
        self.clock = clock
        self._until: dict[str, float] = {}

    def start(self) -> str:
        now = self.clock()
        self._until = {sid: t for sid, t in self._until.items() if t > now}
        sid = secrets.token_urlsafe(32)
        self._until[sid] = now + self.ttl_s
        return sid

    def state(self, sid: str) -> str:
        """ "valid", "expired" (it was one of ours) or "none"."""
        until = self._until.get(sid) if sid else None
        if until is None:
            return "none"
        if until <= self.clock():
            del self._until[sid]
            return "expired"
        return "valid"

    def end(self, sid: str) -> None:
        self._until.pop(sid, None)


#: bidirectional controls: shown as visible marks, never applied to the page's text.
BIDI = {
    c: f"\u27e8U+{ord(c):04X}\u27e9" for c in "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
}
_BIDI_TABLE = str.maketrans(BIDI)


def visible_bidi(value: object) -> object:
    """Every value a template prints: a right-to-left override in a question would otherwise
    make "gpj.exe" read as "exe.jpg" to the owner reviewing it."""
    return value.translate(_BIDI_TABLE) if isinstance(value, str) else value


def _templates() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("epmem.audit.web", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=visible_bidi,
    )
    env.filters["short"] = lambda h: (h or "")[:12]
    env.filters["day"] = lambda t: (t or "")[:10]
    env.filters["moment"] = lambda t: (t or "").replace("T", " ")[:19]
    return env


class OwnerOnly(BaseHTTPMiddleware):
    """401 before routing for anyone without the token; security headers on every answer."""

    def __init__(self, app: Any, config: PageConfig) -> None:
        super().__init__(app)
        self.config = config
        self.token = config.token
        self.sessions = Sessions(config.session_ttl_s, config.clock)

    def allowed(self, request: Request) -> str:
        """ "valid", "expired" (a session cookie past its time) or "none"."""
        auth = request.headers.get("authorization", "")
        if auth.lower().startswith("bearer ") and hmac.compare_digest(auth[7:].strip().encode(), self.token.encode()):
            return "valid"
        return self.sessions.state(request.cookies.get(COOKIE, ""))

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        if request.url.path == "/login" and request.method == "POST":
            response = await self.login(request)
        elif request.url.path == "/logout" and request.method == "POST":
            self.sessions.end(request.cookies.get(COOKIE, ""))
            response = unauthorized(request, note="You are signed out.", next_path="/")
            self._forget_cookie(response)
        else:
            state = self.allowed(request)
            if state == "valid":
                response = await call_next(request)
            else:
                note = "Your session expired: sign in again." if state == "expired" else None
                response = unauthorized(request, note=note)
                if state == "expired":
                    self._forget_cookie(response)
        response.headers.update(SECURITY_HEADERS)
        return response

    def _forget_cookie(self, response: Response) -> None:
        response.delete_cookie(COOKIE, path="/", secure=self.config.secure_cookie, httponly=True, samesite="strict")

    async def login(self, request: Request) -> Response:
        form = await request.form()
        given = str(form.get("token", ""))
        target = safe_next(str(form.get("next", "/")))
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return unauthorized(request, wrong=True, next_path=target)
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(
            COOKIE,
            self.sessions.start(),
            max_age=int(self.config.session_ttl_s) or 1,
            httponly=True,
            samesite="strict",
            secure=self.config.secure_cookie,
            path="/",
        )
        return response


def wants_json(request: Request) -> bool:
    return "application/json" in request.headers.get("accept", "")


def safe_next(value: str) -> str:
    """Only a path on this site: no scheme, no host, no protocol-relative ``//``."""
    return value if value.startswith("/") and not value.startswith("//") and "\\" not in value else "/"


def unauthorized(
    request: Request, wrong: bool = False, next_path: str | None = None, note: str | None = None
) -> Response:
    headers = {"WWW-Authenticate": 'Bearer realm="epmem audit"'}
    if wants_json(request):
        return JSONResponse({"error": "unauthorized"}, status_code=401, headers=headers)
    target = next_path or (request.url.path + (f"?{request.url.query}" if request.url.query else ""))
    if target == "/logout":
        target = "/"
    html = request.app.state.env.get_template("login.html").render(next=safe_next(target), wrong=wrong, note=note)
    return HTMLResponse(html, status_code=401, headers=headers)


async def render(request: Request, template: str, data: dict[str, Any], status: int = 200) -> Response:
    pages: AuditPages = request.app.state.pages
    chain = (await pages.chain()).as_dict()
    if wants_json(request):
        return JSONResponse({**data, "chain": chain}, status_code=status)
    html = request.app.state.env.get_template(template).render(**data, chain=chain, path=request.url.path)
    return HTMLResponse(html, status_code=status)


def _int(request: Request, name: str, low: int = 1, high: int = 10**12) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    if not raw.isdigit() or not low <= int(raw) <= high:
        raise BadQuery(f"{name}: expected a whole number from {low} to {high}")
    return int(raw)


async def timeline(request: Request) -> Response:
    pages: AuditPages = request.app.state.pages
    try:
        filters = Filters.parse(dict(request.query_params), MESSAGE_OUTCOMES + _other_outcomes())
        data = await pages.timeline(
            filters, _int(request, "before"), _int(request, "after"), _int(request, "size", 1, 500) or PAGE_SIZE
        )
    except BadQuery as exc:
        return await render(request, "error.html", {"error": str(exc)}, 400)
    query = filters.as_params()
    data["older_link"] = "/?" + urlencode({**query, "before": data["older_before"]}) if data["older_before"] else None
    data["newer_link"] = "/?" + urlencode({**query, "after": data["newer_after"]}) if data["newer_after"] else None
    return await render(request, "timeline.html", data)


def _other_outcomes() -> tuple[str, ...]:
    return (
        "preview",
        "paused",
        "rate limited",
        "not read",
        "empty",
        "expired",
        "policy change",
        "erasure",
        "digest",
        "delivery failed",
        "migration",
    )


async def decision(request: Request) -> Response:
    pages: AuditPages = request.app.state.pages
    data = await pages.decision(request.path_params["record_id"])
    if data is None:
        return await render(request, "error.html", {"error": "no such audit record"}, 404)
    return await render(request, "decision.html", data)


async def who_knows(request: Request) -> Response:
    pages: AuditPages = request.app.state.pages
    try:
        by = request.query_params.get("by", "fact")
        if by not in ("fact", "event"):
            raise BadQuery("by: fact or event")
        data = await pages.knows(by == "event", request.query_params.get("q", ""), _int(request, "page") or 1)
    except BadQuery as exc:
        return await render(request, "error.html", {"error": str(exc)}, 400)
    return await render(request, "knows.html", data)


async def not_found(request: Request, exc: Exception) -> Response:
    return await render(request, "error.html", {"error": "no such page"}, 404)


def create_app(config: PageConfig) -> Starlette:
    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        audit = await AuditLog(config.audit_db, readonly=True).open()
        try:
            state = await connect_to(config.state_db, readonly=True)
        except BaseException:
            await audit.close()
            raise
        pages = app.state.pages = AuditPages(audit, Overlay(state), FactRegister(state), config.policy, config.heard_it)
        verifier = asyncio.create_task(pages.verify_forever())
        try:
            yield
        finally:
            verifier.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await verifier
            await state.close()
            await audit.close()

    routes = [Route("/", timeline), Route("/decision/{record_id}", decision), Route("/who-knows", who_knows)]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(OwnerOnly, config=config)],
        lifespan=lifespan,
        exception_handlers={404: not_found, 405: not_found},
    )
    app.state.env = _templates()
    return app
