"""The one place the effective policy lives; every reader asks it for the current one.

The owner's file is the base; commands change contacts on top of it (see ``overrides``). If
each part kept its own copy of the policy, a refresh would have to find them all, and missing
one would leave a reader deciding with yesterday's trust levels. So parts keep the holder
instead, and read ``holder.current`` each time they need the policy.

What a refresh may change is bounded: contacts (level, domain, identities). The categories are
fixed for the holder's life, because parts embed them once (category profiles for recall and
for the classifier); a new set of categories means a new holder, i.e. a restart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from epmem.policy.model import Policy
from epmem.policy.overrides import Skipped, apply_overrides


class PolicyHolder:
    def __init__(self, base: Policy) -> None:
        self._base = base
        self._current = base

    @classmethod
    def of(cls, policy: Policy | PolicyHolder) -> PolicyHolder:
        """A holder for a fixed policy (library callers and tests pass a plain ``Policy``)."""
        return policy if isinstance(policy, PolicyHolder) else cls(policy)

    @property
    def base(self) -> Policy:
        """The owner's policy file as loaded: what the overrides are applied to."""
        return self._base

    @property
    def current(self) -> Policy:
        """The effective policy: the file plus the owner's command-made changes."""
        return self._current

    def apply(self, overrides: Mapping[str, Mapping[str, Any]]) -> list[Skipped]:
        """Rebuild the current policy from the base and ``overrides``; what did not fit is
        returned (and left out), never raised: the file wins over a stale override."""
        effective, skipped = apply_overrides(self._base, overrides)
        if effective.categories != self._base.categories:
            raise ValueError("a policy refresh may not change the categories")
        self._current = effective
        return skipped


class ReadsPolicy:
    """For parts that read the policy: ``self.policy`` is always the holder's current one.

    A subclass sets ``self._policy = PolicyHolder.of(policy)`` in its constructor, where it
    used to keep the policy itself.
    """

    _policy: PolicyHolder

    @property
    def policy(self) -> Policy:
        return self._policy.current
