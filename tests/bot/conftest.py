"""The consultation tests' house (testkit/consulting.py), opened fresh in a temp folder per test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from testkit.consulting import House, open_house


@pytest.fixture
async def house(tmp_path: Path) -> AsyncIterator[House]:
    h = await open_house(tmp_path / "data")
    try:
        yield h
    finally:
        await h.runtime.close()
