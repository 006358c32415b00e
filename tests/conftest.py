"""Shared fixtures. The autouse fixture keeps every test off the real network and away from
real credentials: proxies and tokens in the developer's shell must never reach a test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

_SCRUB_PREFIXES = ("OPENAI_", "SLACK_", "TELEGRAM_", "EPMEM_")
_SCRUB_NAMES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = REPO_ROOT.parent / "shared"


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(_SCRUB_PREFIXES) or name in _SCRUB_NAMES:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
