"""Identities: ``platform:id``, and which platforms' ids the library knows how to check.

Only identities decide who is asking (display names can be set to anything), so a policy's
identities are checked as strictly as their platform allows: ``telegram:12ab`` is a typo that
would silently leave a contact a stranger. The library names no platform: each platform
declares its :class:`IdentityScheme` when it is registered (``connectors/registry.py``), and
:data:`SCHEMES` is what the policy, ``/link`` and the CLI check identities against.

The one scheme the library owns is :data:`LOCAL`: the operator's own terminal (``epmem chat``),
previews and the benchmark address every contact as ``console:<contact id>`` without the policy
listing it, so a policy is usable before any platform is set up.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

#: any identity: a lower-case platform name, a colon, an id without spaces.
SHAPE = re.compile(r"^([a-z][a-z0-9_-]*):(\S+)$")
#: a platform name as it may appear before the colon (and in scenarios, audits, the outbox).
PLATFORM_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")


@dataclass(frozen=True, slots=True)
class IdentityScheme:
    """How a platform writes its people: ``pattern`` matches the part after ``platform:``."""

    platform: str
    pattern: str
    #: a valid identity, quoted in error messages so a user sees what is expected.
    example: str
    _compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not PLATFORM_NAME.match(self.platform):
            raise ValueError(f"platform name {self.platform!r} must match {PLATFORM_NAME.pattern}")
        object.__setattr__(self, "_compiled", re.compile(rf"^(?:{self.pattern})$"))
        if not self.matches(self.example):
            raise ValueError(f"the example {self.example!r} is not a {self.platform} identity")

    def matches(self, identity: str) -> bool:
        platform, _, rest = identity.partition(":")
        return platform == self.platform and bool(self._compiled.match(rest))

    def identity(self, local_id: str) -> str:
        """``platform:local_id``, checked: a wrong id is a bug, never a stranger by accident."""
        value = f"{self.platform}:{local_id}"
        if not self.matches(value):
            raise ValueError(f"{value!r} is not a {self.platform} identity (e.g. {self.example})")
        return value


#: the library's own scheme: the local terminal, previews and the benchmark (see the module doc).
LOCAL = IdentityScheme("console", r"[A-Za-z0-9_.@+-]+", "console:name")


class IdentitySchemes:
    """The schemes known in this process: :data:`LOCAL` plus every registered platform's."""

    def __init__(self, *schemes: IdentityScheme) -> None:
        self._schemes: dict[str, IdentityScheme] = {}
        for scheme in schemes:
            self.add(scheme)

    def add(self, scheme: IdentityScheme) -> None:
        known = self._schemes.get(scheme.platform)
        if known is not None and known != scheme:
            raise ValueError(f"platform {scheme.platform!r} already has an identity scheme ({known.example})")
        self._schemes[scheme.platform] = scheme

    def remove(self, platform: str) -> None:
        if platform != LOCAL.platform:
            self._schemes.pop(platform, None)

    def __iter__(self) -> Iterator[IdentityScheme]:
        return iter(self._schemes.values())

    def platform_examples(self) -> list[str]:
        """One example identity per registered platform (the local scheme left out)."""
        return [s.example for s in self._schemes.values() if s.platform != LOCAL.platform]

    def examples(self) -> str:
        """``telegram:123456789, slack:T0123/U0456 or console:name``, from what is registered."""
        shown = [*self.platform_examples(), LOCAL.example]
        return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"

    def problem(self, identity: str) -> str | None:
        """Why ``identity`` is not one (None when it is): fail closed on an unknown platform."""
        found = SHAPE.match(identity)
        scheme = self._schemes.get(found.group(1)) if found else None
        if found and scheme is None:
            known = ", ".join(sorted(self._schemes))
            return f"identity {identity!r}: unknown platform {found.group(1)!r} (known: {known})"
        if scheme is None or not scheme.matches(identity):
            return f"identity {identity!r} must look like {self.examples()}"
        return None


#: every scheme known in this process; platforms add theirs when they are registered.
SCHEMES = IdentitySchemes(LOCAL)
