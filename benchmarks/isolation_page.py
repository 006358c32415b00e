"""One owner's audit page, read the way the owner's browser reads it (the isolation benchmark).

The page is ``epmem audit serve``'s app (:func:`epmem.audit.web.create_app`) over that owner's
databases and policy, driven by Starlette's test client (the app's lifespan runs, requests go
through its token check): every timeline page, following the "older" links, the who-knows
page and a few decisions.
"""

from __future__ import annotations

import asyncio
import html
import re

from starlette.testclient import TestClient

from bot.config import Settings
from epmem.audit.web import PageConfig, create_app
from epmem.policy import Policy, load_policy

_OLDER = re.compile(r'href="(/\?[^"]*before=\d+[^"]*)"')


def audit_pages(settings: Settings, token: str, decisions: list[str]) -> list[tuple[str, str]]:
    """(url, html) of every page read; raises if one does not answer 200."""
    policy_path = settings.policy_path()

    async def policy() -> Policy:
        return await asyncio.to_thread(load_policy, policy_path)

    app = create_app(PageConfig(settings.audit_target, settings.state_target, policy, token))
    read: list[tuple[str, str]] = []
    with TestClient(app, headers={"Authorization": f"Bearer {token}"}) as client:

        def get(url: str) -> str:
            response = client.get(url)
            if response.status_code != 200:
                raise RuntimeError(f"audit page {url}: {response.status_code}")
            read.append((url, response.text))
            return response.text

        url: str | None = "/?size=500"
        while url is not None:
            page = get(url)
            older = _OLDER.search(page)
            url = html.unescape(older.group(1)) if older else None
        get("/who-knows")
        for record_id in decisions:
            get(f"/decision/{record_id}")
    return read
