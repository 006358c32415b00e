"""Contact changes made by owner command, applied on top of the owner's policy file.

The policy YAML is the owner's own document and is never rewritten. A ``/level``, ``/domain``
or ``/link`` changes a row in the overlay instead, and the effective policy is rebuilt from the
file plus these rows whenever it is needed (at start and after every change). An override that
no longer fits the file (its contact was deleted, or an identity it links is now claimed in the
file by someone else) is skipped and reported, never allowed to break start-up: the file wins.

One override body per contact, every key optional:

``level``     1-4, replaces the contact's trust level
``domain``    ``work``, ``life`` or None (present = set, even to None)
``add``       identities linked by command
``remove``    identities unlinked by command (file identities included)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from epmem.policy.model import Policy, semantic_problems

OVERRIDE_KEYS = frozenset({"level", "domain", "add", "remove"})


@dataclass(frozen=True, slots=True)
class Skipped:
    """An override left out of the effective policy, and why."""

    contact: str
    reason: str


def _contact_data(base: dict[str, Any], body: Mapping[str, Any]) -> dict[str, Any]:
    data = dict(base)
    if "level" in body:
        data["level"] = body["level"]
    if "domain" in body:
        data["domain"] = body["domain"]
    removed = set(body.get("remove", ()))
    identities = [i for i in data.get("identities", []) if i not in removed]
    identities += [i for i in body.get("add", ()) if i not in identities and i not in removed]
    data["identities"] = identities
    return data


def _validated(data: dict[str, Any]) -> tuple[Policy | None, str]:
    try:
        policy = Policy.model_validate(data)
    except ValidationError as exc:
        return None, "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
    problems = semantic_problems(policy)
    if problems:
        return None, "; ".join(f"{'.'.join(map(str, p.path))}: {p.message}" for p in problems)
    return policy, ""


def apply_overrides(policy: Policy, overrides: Mapping[str, Mapping[str, Any]]) -> tuple[Policy, list[Skipped]]:
    """The effective policy: ``policy`` with each contact's overrides applied.

    Overrides are applied one contact at a time (in contact order) and each is kept only if the
    policy stays valid with it, so one stale row cannot take the others down with it.
    """
    data = policy.model_dump(mode="json")
    current = policy
    skipped: list[Skipped] = []
    for cid in sorted(overrides):
        body = overrides[cid]
        if cid not in data["contacts"]:
            skipped.append(Skipped(cid, "no such contact in the policy file"))
            continue
        unknown = set(body) - OVERRIDE_KEYS
        if unknown:
            skipped.append(Skipped(cid, f"unknown override keys {sorted(unknown)}"))
            continue
        trial = {**data, "contacts": {**data["contacts"], cid: _contact_data(data["contacts"][cid], body)}}
        checked, reason = _validated(trial)
        if checked is None:
            skipped.append(Skipped(cid, reason))
            continue
        data, current = trial, checked
    return current, skipped
