"""The audit page: timeline, decisions and who-knows, read-only, for the owner (``epmem audit serve``)."""

from epmem.audit.web.app import PageConfig, create_app
from epmem.audit.web.server import TOKEN_ENV, PageRefused, choose_token, is_loopback, run_page, serve_page

__all__ = [
    "TOKEN_ENV",
    "PageConfig",
    "PageRefused",
    "choose_token",
    "create_app",
    "is_loopback",
    "run_page",
    "serve_page",
]
