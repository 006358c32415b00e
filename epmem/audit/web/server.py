"""Serving the audit page: bind, say where once listening, stop cleanly on SIGINT/SIGTERM.

The socket is bound here (port 0 picks a free one) so the line names the real port. uvicorn
re-raises a signal it caught once it has shut down; the handlers installed here take that
re-raise quietly, so Ctrl-C and ``kill`` end the command with status 0 and no traceback.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import secrets
import signal
import socket
from typing import TextIO

import uvicorn

from epmem.audit.web.app import PageConfig, create_app
from epmem.errors import EpmemError

TOKEN_ENV = "EPMEM_AUDIT_TOKEN"
#: beyond loopback anyone on the network can guess: a token shorter than this is refused there.
MIN_TOKEN_CHARS = 32


class PageRefused(EpmemError, ValueError):
    """The page will not start this way (a non-loopback host without a token)."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def choose_token(host: str, env_token: str | None) -> tuple[str, bool]:
    """(token, generated). Off loopback the owner must have chosen one: anyone on the network
    could otherwise race them to a token printed into a terminal or a log."""
    if env_token:
        if not is_loopback(host) and len(env_token) < MIN_TOKEN_CHARS:
            raise PageRefused(
                f"{TOKEN_ENV} has {len(env_token)} characters; listening on {host}, beyond loopback, "
                f"it must have at least {MIN_TOKEN_CHARS} (make one with: python -c 'import secrets; "
                f"print(secrets.token_urlsafe(32))')"
            )
        return env_token, False
    if not is_loopback(host):
        raise PageRefused(f"refusing to listen on {host}, which is not loopback, without {TOKEN_ENV} set")
    return secrets.token_urlsafe(24), True


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # accepted connections inherit it: headers and body go out as separate writes, and with
    # Nagle on, the body waited for the client's delayed ACK (a flat ~40 ms on every page).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


async def _announce(server: uvicorn.Server, line: str, out: TextIO) -> None:
    while not server.started:
        if server.should_exit:
            return
        await asyncio.sleep(0.02)
    out.write(line + "\n")
    out.flush()


async def serve_page(config: PageConfig, host: str, port: int | socket.socket, out: TextIO) -> None:
    """Serve until told to stop (``server.should_exit``, set by SIGINT/SIGTERM); ``port`` may
    be a socket already bound."""
    sock = port if isinstance(port, socket.socket) else _bind(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{bound}/"
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(config),
            log_level=logging.WARNING,
            access_log=False,
            lifespan="on",
            server_header=False,
            date_header=False,
        )
    )
    announce = asyncio.create_task(_announce(server, f"audit page: {url}", out))
    try:
        await server.serve(sockets=[sock])
    finally:
        announce.cancel()
        sock.close()


def run_page(config: PageConfig, host: str, port: int, out: TextIO, token_generated: bool) -> None:
    """Blocking: serve until SIGINT or SIGTERM. A generated token is printed once, first, but
    only after the address is bound: a page that cannot start has no token to show."""
    sock = _bind(host, port)
    if token_generated:
        out.write(f"audit token: {config.token}\n")
        out.flush()
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        asyncio.run(serve_page(config, host, sock, out))
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
