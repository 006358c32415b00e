"""The registration table: the platforms this house ships, one line each, in start order.

Importing this module registers them in :data:`connectors.registry.PLATFORMS` (and their
identity schemes in :data:`epmem.identity.SCHEMES`); ``bot`` imports it once, in its package
``__init__``, so every entry point sees the same platforms. Adding a platform: write its package
under ``connectors/`` with a :class:`~connectors.registry.Platform`, and add one line here
(CONTRIBUTING.md, "How do I add a platform?").
"""

from __future__ import annotations

from typing import Any

from connectors.registry import PLATFORMS, Platform
from connectors.slack.platform import SLACK
from connectors.telegram.platform import TELEGRAM

BUILT_IN: tuple[Platform[Any], ...] = (TELEGRAM, SLACK)

for _platform in BUILT_IN:
    if PLATFORMS.get(_platform.name) is None:
        PLATFORMS.register(_platform)
