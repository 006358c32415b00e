"""The owner's disclosure policy: who the contacts are, how deep each kind of information is.

The policy is the one document a user edits by hand, so it is loaded with two passes: pydantic
checks the shape of every field, then :func:`semantic_problems` checks what only the whole
document can tell (a group naming an unknown contact, a whitelist on a never-share category,
one identity claimed twice). Both passes always run and report *every* problem with the YAML
line it sits on, because a user fixing a policy should not have to run the checker once per typo.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from epmem.errors import EpmemError
from epmem.identity import LOCAL, SCHEMES
from epmem.language import Shipped

Domain = Literal["work", "life"]
InfoLevel = Annotated[int, Field(ge=0, le=4, description="0 = nobody by default, 4 = public")]
TrustLevel = Annotated[int, Field(ge=1, le=4, description="1 = closest, 4 = public/stranger")]

#: ids with a fixed meaning in every policy and scenario.
OWNER_ID = "owner"
STRANGER_ID = "stranger"
RESERVED_IDS = frozenset({OWNER_ID, STRANGER_ID})

_ID = re.compile(r"^[A-Za-z0-9_.-]+$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_identities(values: list[str]) -> list[str]:
    """Each identity against its platform's registered scheme (epmem/identity.py)."""
    for value in values:
        problem = SCHEMES.problem(value)
        if problem is not None:
            raise ValueError(problem)
    return values


class Owner(_Strict):
    name: str = "Owner"
    identities: list[str] = Field(default_factory=lambda: [LOCAL.identity(OWNER_ID)])
    persona: str = ""
    #: the language of what the delegate tells the owner (consultations), and of replies to a
    #: message with no letters to tell its language by (epmem/language/); English if unset.
    language: Shipped | None = None

    _identities = field_validator("identities")(_check_identities)


class Contact(_Strict):
    name: str
    aliases: list[str] = Field(default_factory=list)
    relationship: str = ""
    level: TrustLevel
    domain: Domain | None = None
    identities: list[str] = Field(default_factory=list)
    #: the language to answer this contact in when a message does not tell (a sticker, "?").
    language: Shipped | None = None

    _identities = field_validator("identities")(_check_identities)


class Category(_Strict):
    level: InfoLevel
    domain: Domain | None = None
    keywords: list[str] = Field(default_factory=list)
    never_share: bool = False
    description: str = ""

    def profile(self, name: str) -> str:
        """What the category is about, as text to embed: one text for the annotator's
        classifier and for recall's category relevance, so the two never drift apart."""
        return f"{name.replace('_', ' ')}: {self.description} {', '.join(self.keywords)}".strip()


class PolicyException(_Strict):
    """One owner-made exception: allow or deny some people one fact, event or category."""

    effect: Literal["allow", "deny"]
    who: list[str] = Field(min_length=1, description="contact or group ids")
    fact: str | None = None
    event: str | None = None
    category: str | None = None
    until: datetime | None = None
    note: str = ""

    def target(self) -> tuple[str, str]:
        for kind in ("fact", "event", "category"):
            value = getattr(self, kind)
            if value is not None:
                return kind, value
        raise ValueError("exception names no fact, event or category")


class Policy(_Strict):
    owner: Owner = Field(default_factory=Owner)
    contacts: dict[str, Contact] = Field(default_factory=dict)
    groups: dict[str, list[str]] = Field(default_factory=dict)
    categories: dict[str, Category] = Field(min_length=1)
    default_category: str
    exceptions: list[PolicyException] = Field(default_factory=list)


# --------------------------------------------------------------------------- problems


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a policy, located as precisely as the YAML allows."""

    path: tuple[str | int, ...]
    message: str
    line: int | None = None

    def render(self, source: str) -> str:
        where = f"{source}:{self.line}" if self.line else source
        field = ".".join(str(p) for p in self.path) or "(document)"
        return f"{where}: {field}: {self.message}"


class PolicyError(EpmemError, ValueError):
    """A policy that cannot be used; ``problems`` lists everything found, not just the first."""

    def __init__(self, source: str, problems: list[Problem]) -> None:
        self.source = source
        self.problems = problems
        super().__init__("; ".join(p.render(source) for p in problems))


def _mapping(value: object) -> dict[Any, Any]:
    return value if isinstance(value, dict) else {}


def _items(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def semantic_problems(policy: Policy | Mapping[str, Any]) -> list[Problem]:
    """Cross-reference checks that no single field can make.

    Also given a document that failed the schema (its parsed YAML), so that one run of
    ``epmem policy check`` reports every problem: parts with the wrong shape are skipped here,
    the schema pass has reported them.
    """
    data = policy.model_dump(mode="json") if isinstance(policy, Policy) else policy
    contacts, groups, categories = (_mapping(data.get(k)) for k in ("contacts", "groups", "categories"))
    problems: list[Problem] = []

    for cid in contacts:
        if cid in RESERVED_IDS or not _ID.match(str(cid)):
            problems.append(Problem(("contacts", cid), f"contact id {cid!r} is reserved or invalid"))
    for gid, members in groups.items():
        if gid in contacts or gid in RESERVED_IDS:
            problems.append(Problem(("groups", gid), f"group id {gid!r} clashes with a contact or reserved id"))
        for i, member in enumerate(_items(members)):
            if member not in contacts:
                problems.append(Problem(("groups", gid, i), f"unknown contact {member!r} in group {gid!r}"))
    default = data.get("default_category")
    if isinstance(default, str) and default not in categories:
        problems.append(Problem(("default_category",), f"default_category {default!r} is not a category"))
    for name, cat in categories.items():
        cat = _mapping(cat)
        if cat.get("never_share") is True and isinstance(cat.get("level"), int) and cat["level"] != 0:
            problems.append(Problem(("categories", name, "level"), "a never_share category must be level 0"))
    problems += _identity_problems(data, contacts)
    for i, exc in enumerate(_items(data.get("exceptions"))):
        problems += _exception_problems(i, _mapping(exc), contacts, groups, categories)
    return problems


def _identity_problems(data: Mapping[str, Any], contacts: dict[Any, Any]) -> list[Problem]:
    """One identity, one person: the owner's and each contact's identities never overlap."""
    owner = data.get("owner", {})
    owner_ids = _mapping(owner).get("identities", [LOCAL.identity(OWNER_ID)]) if isinstance(owner, dict) else []
    owned = [("owner", _items(owner_ids))] + [
        (cid, _items(_mapping(c).get("identities"))) for cid, c in contacts.items()
    ]
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for who, identities in owned:
        for i, identity in enumerate(identities):
            path: tuple[str | int, ...] = (
                ("owner", "identities", i) if who == "owner" else ("contacts", who, "identities", i)
            )
            if identity in seen:
                problems.append(Problem(path, f"identity {identity!r} is also claimed by {seen[identity]!r}"))
            seen[identity] = who
    return problems


def _exception_problems(
    i: int, exc: dict[str, Any], contacts: dict[Any, Any], groups: dict[Any, Any], categories: dict[Any, Any]
) -> list[Problem]:
    problems: list[Problem] = []
    targets = [k for k in ("fact", "event", "category") if exc.get(k) is not None]
    if len(targets) != 1:
        problems.append(Problem(("exceptions", i), "name exactly one of fact, event or category"))
    for j, who in enumerate(_items(exc.get("who"))):
        if who not in contacts and who not in groups:
            problems.append(Problem(("exceptions", i, "who", j), f"unknown contact or group {who!r}"))
    category = exc.get("category")
    if isinstance(category, str):
        if category not in categories:
            problems.append(Problem(("exceptions", i, "category"), f"unknown category {category!r}"))
        elif _mapping(categories[category]).get("never_share") is True and exc.get("effect") == "allow":
            problems.append(
                Problem(("exceptions", i), f"category {category!r} is never_share: it cannot be whitelisted")
            )
    return problems


# --------------------------------------------------------------------------- YAML with lines


def yaml_lines(text: str) -> dict[tuple[str | int, ...], int]:
    """Map each key path in a YAML document to its 1-based line, so errors can point at it."""
    lines: dict[tuple[str | int, ...], int] = {}
    root = yaml.compose(text, Loader=yaml.SafeLoader)

    def walk(node: yaml.Node, path: tuple[str | int, ...]) -> None:
        lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                child = path + (key.value,)
                lines[child] = key.start_mark.line + 1
                walk(value, child)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                walk(item, path + (i,))

    if root is not None:
        walk(root, ())
    return lines


def line_for(lines: dict[tuple[str | int, ...], int], path: tuple[str | int, ...]) -> int | None:
    for end in range(len(path), -1, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return None


def schema_problems(error: ValidationError, prefix: tuple[str | int, ...]) -> Iterator[Problem]:
    for err in error.errors():
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        yield Problem(prefix + loc, err["msg"])


def parse_policy(
    data: Any, source: str, lines: dict[tuple[str | int, ...], int] | None = None, prefix: tuple[str | int, ...] = ()
) -> Policy:
    """Validate already-parsed YAML data; ``prefix`` locates it inside a larger document."""
    lines = lines or {}
    if not isinstance(data, dict):
        raise PolicyError(source, [Problem(prefix, "a policy must be a mapping", line_for(lines, prefix))])
    problems: list[Problem] = []
    policy: Policy | None = None
    try:
        policy = Policy.model_validate(data)
    except ValidationError as exc:
        problems += [Problem(p.path, p.message, line_for(lines, p.path)) for p in schema_problems(exc, prefix)]
    # the cross-references are checked even when the schema failed: every problem in one pass
    problems += [
        Problem(prefix + p.path, p.message, line_for(lines, prefix + p.path))
        for p in semantic_problems(policy if policy is not None else data)
    ]
    if problems or policy is None:
        raise PolicyError(source, problems)
    return policy


def read_yaml(path: Path) -> tuple[Any, dict[tuple[str | int, ...], int]]:
    """Read a YAML file, turning every failure into a PolicyError that names file and line."""
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PolicyError(source, [Problem((), f"cannot read file: {exc.strerror or exc}")]) from None
    except UnicodeDecodeError as exc:
        raise PolicyError(source, [Problem((), f"not UTF-8 text: {exc.reason}")]) from None
    try:
        data = yaml.safe_load(text)
        lines = yaml_lines(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise PolicyError(source, [Problem((), f"bad YAML: {problem}", line)]) from None
    return data, lines


def load_policy(path: Path) -> Policy:
    data, lines = read_yaml(path)
    return parse_policy(data, str(path), lines)


def policy_json_schema() -> dict[str, Any]:
    return Policy.model_json_schema()


def iter_identities(policy: Policy) -> Iterable[tuple[str, str]]:
    """(identity, contact id or 'owner') for every identity the policy declares."""
    for identity in policy.owner.identities:
        yield identity, OWNER_ID
    for cid, contact in policy.contacts.items():
        for identity in contact.identities:
            yield identity, cid


def category_profiles(categories: Mapping[str, Category]) -> dict[str, str]:
    """Each category's profile text (see :meth:`Category.profile`)."""
    return {name: c.profile(name) for name, c in categories.items()}
