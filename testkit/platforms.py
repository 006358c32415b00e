"""Each registered platform's loopback fake, found through the registry.

A platform's registration names its fake as ``"module:attribute"`` (connectors never import
testkit); this resolves the reference, so a test or benchmark can reach any platform's fake by
the platform's name alone, and a registration that names a missing fake fails here, loudly.
"""

from __future__ import annotations

import importlib

import connectors.platforms  # noqa: F401  (the built-in platforms, registered)
from connectors.registry import PLATFORMS


def loopback_fake(platform: str) -> object:
    """The fake (a class, usually) that platform ``platform`` declares; KeyError if unregistered."""
    registered = PLATFORMS.get(platform)
    if registered is None:
        raise KeyError(f"no platform {platform!r} is registered")
    module, _, attribute = registered.fake.partition(":")
    try:
        return getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError) as exc:
        raise LookupError(f"platform {platform!r}: its fake {registered.fake!r} cannot be loaded: {exc}") from None
