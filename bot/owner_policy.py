"""Whose delegate a data folder is: its active policy (``DATA/policy.yaml``), and how one
becomes active (``epmem init``, ``epmem policy use``, ``epmem demo``, ``epmem load``).

The active policy is a file in the data folder, so it persists: a later run without
``EPMEM_POLICY`` uses it. ``EPMEM_POLICY`` still wins for the run that sets it, and a data folder
that has no active policy yet takes it as its own (a copy), so the next run without the variable
is the same owner's, not the example's. A data folder with neither refuses in one line, saying
how to make one: nothing falls back to the example owner's policy without a word.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from string import Template

import yaml

from connectors.registry import PLATFORMS
from epmem.identity import LOCAL
from epmem.policy import OWNER_ID, Policy, load_policy

from bot.config import ACTIVE_POLICY_NAME, ConfigError, Settings
from bot.examples import example_text

TEMPLATE = "policy-template.yaml"
#: what makes a data folder someone's: its memory, its audit log, its state.
DATA_FILES = ("audit.sqlite", "state.sqlite", "qdrant")
_CONTACT_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
_DOMAINS = ("work", "life")


class OwnerError(ConfigError):
    """A data folder or policy that does not fit the command (one line, with the fix)."""


def fresh_hint(data_dir: Path) -> str:
    return 'run `epmem init --owner "YOUR NAME"` (your own delegate) or `epmem demo` (the example owner)'


def active_file(settings: Settings) -> Path:
    return settings.data_dir / ACTIVE_POLICY_NAME


def has_data(data_dir: Path) -> bool:
    """Whether the folder holds anyone's memory, audit log or state."""
    return any((data_dir / name).exists() for name in DATA_FILES)


def require_data_folder(settings: Settings) -> None:
    """Commands that read the owner's data (a chat, the service) refuse a folder that is not there
    rather than make an empty one and deflect everything. A worker on a shared database is the
    exception: its folder holds only its replica of the memory (made on first start), the
    owner's data is on the server."""
    if settings.shared_state and settings.policy is not None:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    if not settings.data_dir.is_dir():
        raise OwnerError(f"no data folder at {settings.data_dir}: {fresh_hint(settings.data_dir)}")


def resolve_policy(settings: Settings) -> Path:
    """The policy file a command uses: ``EPMEM_POLICY`` (which a data folder without an active
    policy takes as its own), else the data folder's active policy; else a one-line refusal."""
    if settings.policy is not None and not active_file(settings).exists():
        load_policy(settings.policy)  # a broken file is not made anyone's policy
        write_active(settings, settings.policy.read_text(encoding="utf-8"), _header(settings.policy, "EPMEM_POLICY"))
    return settings.policy_path()


def active_owner(settings: Settings) -> str | None:
    """The owner's name in the data folder's active policy (None: no active policy, or one
    that does not load: whoever fixes it decides)."""
    active = active_file(settings)
    if not active.exists():
        return None
    try:
        return load_policy(active).owner.name
    except Exception:
        return None


def _header(source: Path | str, how: str) -> str:
    return f"# the active policy of this data folder, from {source} ({how}); edit it here\n"


def write_active(settings: Settings, text: str, header: str) -> Path:
    """Make ``text`` the data folder's active policy (atomically)."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    target = active_file(settings)
    partial = target.with_suffix(".tmp")
    partial.write_text(text if text.startswith(header) else header + text, encoding="utf-8")
    partial.replace(target)
    return target


def refuse_another_owner(settings: Settings, owner: str, force: bool, command: str) -> None:
    """A data folder that is another owner's is not taken over without ``--force``."""
    current = active_owner(settings)
    if current is not None and current != owner and not force:
        raise OwnerError(
            f"{settings.data_dir} belongs to {current}, not {owner}: use another data folder "
            f"(EPMEM_DATA_DIR), or `{command} --force` to replace {current}'s policy"
        )


def use_policy(settings: Settings, file: Path, force: bool = False) -> Policy:
    """``epmem policy use FILE``: check FILE, then make it the data folder's active policy."""
    policy = load_policy(file)
    if settings.policy is not None:
        raise OwnerError(
            f"EPMEM_POLICY is set ({settings.policy}) and wins over the data folder's policy: unset it first"
        )
    refuse_another_owner(settings, policy.owner.name, force, f"epmem policy use {file}")
    write_active(settings, file.read_text(encoding="utf-8"), _header(file, "epmem policy use"))
    return policy


# --------------------------------------------------------------------------- epmem init


@dataclass(frozen=True, slots=True)
class NewContact:
    id: str
    name: str
    level: int
    domain: str | None = None


def parse_contact(spec: str) -> NewContact:
    """``ID=NAME,LEVEL[,DOMAIN]`` (``ana=Ana Ruiz,1,life``), one line naming what is wrong."""
    head, sep, rest = spec.partition("=")
    parts = [p.strip() for p in rest.split(",")] if sep else []
    usage = f'--contact {spec!r}: write ID=NAME,LEVEL[,DOMAIN], e.g. --contact "ana=Ana Ruiz,1,life"'
    if not sep or len(parts) not in (2, 3) or not parts[0]:
        raise OwnerError(usage)
    cid = head.strip().lower()
    if not _CONTACT_ID.match(cid):
        raise OwnerError(f"--contact {spec!r}: the id {head.strip()!r} must be lowercase letters, digits, - or _")
    if parts[1] not in ("1", "2", "3", "4"):
        raise OwnerError(f"--contact {spec!r}: the level must be 1 (closest) to 4 (anyone), not {parts[1]!r}")
    domain = parts[2].lower() if len(parts) == 3 and parts[2] else None
    if domain is not None and domain not in _DOMAINS:
        raise OwnerError(f"--contact {spec!r}: the domain must be work or life, not {parts[2]!r}")
    return NewContact(cid, parts[0], int(parts[1]), domain)


def owner_identities(accounts: Mapping[str, str | None]) -> list[str]:
    """``console:owner`` and the owner's account on each platform given (``{"NAME": "ID"}``,
    written ``NAME:ID``; a value already written so is taken as it is)."""
    identities = [LOCAL.identity(OWNER_ID)]
    for name, account in accounts.items():
        if not account:
            continue
        identity = f"{name}:{account.strip().removeprefix(name + ':')}"
        platform = PLATFORMS.get(name)
        if platform is not None and not platform.identity.matches(identity):
            example = platform.identity.example.partition(":")[2]
            raise OwnerError(f"--{name} {account!r}: your {platform.title} account looks like {example}")
        identities.append(identity)
    return identities


def render_policy(owner: str, identities: Sequence[str], contacts: Sequence[NewContact], path: Path) -> str:
    """The commented template, filled in; every value quoted as YAML."""
    lines = []
    for c in contacts:
        body: dict[str, object] = {"name": c.name, "level": c.level}
        if c.domain:
            body["domain"] = c.domain
        lines.append(
            f"  {c.id}: "
            + yaml.safe_dump(body, default_flow_style=True, width=1000, sort_keys=False, allow_unicode=True).strip()
        )
    return Template(example_text(TEMPLATE)).substitute(
        owner=json.dumps(owner, ensure_ascii=False),
        owner_comment=owner.replace("\n", " "),
        path_comment=str(path),
        identities=json.dumps(list(identities)),
        accounts=" or ".join(p.identity.example for p in PLATFORMS) or "platform:id",
        contacts="\n".join(lines) if lines else "  {}",
    )


def init_policy(
    settings: Settings, owner: str, identities: Sequence[str], contacts: Sequence[NewContact], force: bool
) -> tuple[Path, Policy]:
    """``epmem init``: the owner's own commented policy, checked, made the data folder's active one.
    Refuses a folder that already has a policy (another owner's, or this owner's own edits)
    unless ``force``; refuses ``EPMEM_POLICY``, which would win over it."""
    owner = owner.strip()
    if not owner:
        raise OwnerError('the owner\'s name is empty: epmem init --owner "YOUR NAME"')
    if settings.policy is not None:
        raise OwnerError(f"EPMEM_POLICY is set ({settings.policy}) and would win over the new policy: unset it first")
    ids = [c.id for c in contacts]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise OwnerError(f"--contact: the id {twice[0]!r} is given twice")
    target = active_file(settings)
    refuse_another_owner(settings, owner, force, "epmem init")
    if target.exists() and not force:
        raise OwnerError(f"{target} is already {owner}'s policy: edit it, or `epmem init --force` to write it anew")
    if not target.exists() and has_data(settings.data_dir) and not force:
        raise OwnerError(
            f"{settings.data_dir} holds someone's data but no active policy: make their policy active "
            f"(epmem policy use FILE), use another data folder, or `epmem init --force`"
        )
    text = render_policy(owner, identities, contacts, target)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".new")
    partial.write_text(text, encoding="utf-8")
    try:
        policy = load_policy(partial)  # checked as written, with its line numbers
    except BaseException:
        partial.unlink()
        raise
    partial.replace(target)
    return target, policy
