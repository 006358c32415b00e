"""The audit page: a read-only Starlette app over the audit, for the owner's eyes only.

Access: every request carries the owner's token, as ``Authorization: Bearer TOKEN`` or as the
cookie the login form sets (HttpOnly, SameSite=Strict, holding an HMAC of the token rather than
the token). Anything else gets 401 and the login form, and no data: the check runs before
routing, so even an unknown path answers 401. The only POST is the login, which changes nothing
but the browser's cookie. Templates autoescape everything; the one value echoed from a request
that is not escaped by a template is never echoed at all (a bad ``next`` is dropped).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
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
from epmem.sqlite import connect_readonly

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
    audit_db: Path
    state_db: Path
    #: the owner's policy file, read again for every who-knows page (it may have been edited).
    policy: Callable[[], Awaitable[Policy]]
    token: str


def cookie_value(token: str) -> str:
    return hmac.new(token.encode(), b"epmem-audit-page", hashlib.sha256).hexdigest()


def _templates() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("epmem.audit.web", "templates"), autoescape=True,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters["short"] = lambda h: (h or "")[:12]
    env.filters["day"] = lambda t: (t or "")[:10]
    env.filters["moment"] = lambda t: (t or "").replace("T", " ")[:19]
    return env


class OwnerOnly(BaseHTTPMiddleware):
    """401 before routing for anyone without the token; security headers on every answer."""

    def __init__(self, app: Any, token: str) -> None:
        super().__init__(app)
        self.token = token
        self.cookie = cookie_value(token)

    def allowed(self, request: Request) -> bool:
        auth = request.headers.get("authorization", "")
        if auth.lower().startswith("bearer ") and hmac.compare_digest(auth[7:].strip().encode(), self.token.encode()):
            return True
        return hmac.compare_digest(request.cookies.get(COOKIE, "").encode(), self.cookie.encode())

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        if request.url.path == "/login" and request.method == "POST":
            response = await login(request, self.token, self.cookie)
        elif self.allowed(request):
            response = await call_next(request)
        else:
            response = unauthorized(request)
        response.headers.update(SECURITY_HEADERS)
        return response


def wants_json(request: Request) -> bool:
    return "application/json" in request.headers.get("accept", "")


def safe_next(value: str) -> str:
    """Only a path on this site: no scheme, no host, no protocol-relative ``//``."""
    return value if value.startswith("/") and not value.startswith("//") and "\\" not in value else "/"


def unauthorized(request: Request, wrong: bool = False, next_path: str | None = None) -> Response:
    headers = {"WWW-Authenticate": 'Bearer realm="epmem audit"'}
    if wants_json(request):
        return JSONResponse({"error": "unauthorized"}, status_code=401, headers=headers)
    target = next_path or (request.url.path + (f"?{request.url.query}" if request.url.query else ""))
    html = request.app.state.env.get_template("login.html").render(next=safe_next(target), wrong=wrong)
    return HTMLResponse(html, status_code=401, headers=headers)


async def login(request: Request, token: str, cookie: str) -> Response:
    form = await request.form()
    given = str(form.get("token", ""))
    target = safe_next(str(form.get("next", "/")))
    if not hmac.compare_digest(given.encode(), token.encode()):
        return unauthorized(request, wrong=True, next_path=target)
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(COOKIE, cookie, httponly=True, samesite="strict", path="/")
    return response


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
        data = await pages.timeline(filters, _int(request, "before"), _int(request, "after"),
                                    _int(request, "size", 1, 500) or PAGE_SIZE)
    except BadQuery as exc:
        return await render(request, "error.html", {"error": str(exc)}, 400)
    query = filters.as_params()
    data["older_link"] = "/?" + urlencode({**query, "before": data["older_before"]}) if data["older_before"] else None
    data["newer_link"] = "/?" + urlencode({**query, "after": data["newer_after"]}) if data["newer_after"] else None
    return await render(request, "timeline.html", data)


def _other_outcomes() -> tuple[str, ...]:
    return ("preview", "paused", "rate limited", "not read", "empty", "expired", "policy change", "erasure",
            "digest", "delivery failed", "migration")


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
            state = await connect_readonly(config.state_db)
        except BaseException:
            await audit.close()
            raise
        pages = app.state.pages = AuditPages(audit, Overlay(state), FactRegister(state), config.policy)
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
    app = Starlette(routes=routes, middleware=[Middleware(OwnerOnly, token=config.token)], lifespan=lifespan,
                    exception_handlers={404: not_found, 405: not_found})
    app.state.env = _templates()
    return app
