"""What the owner changed by command, kept beside the policy file rather than in it.

The policy YAML is the owner's own document, comments and all; commands never rewrite it.
Exceptions added with /allow and /deny live here, in SQLite, and are merged with the file's
exceptions whenever a rulebook is built. Revoking deletes the row; the audit keeps the history.
Contact changes made by command (level, domain, linked identities) are kept the same way, one
row per contact, and applied on top of the file's contacts (see :mod:`epmem.policy.overrides`).

The overlay does not open its database: whoever owns the file (bot/state.py) opens it with
:func:`epmem.db.open_database` and ``MIGRATIONS`` among its sets, and hands the connection in.
"""

from __future__ import annotations

import json
from typing import Any

import aiosqlite

from epmem.policy.calculus import HeardIt
from epmem.policy.model import PolicyException
from epmem.db import IDENTITY, Database, Migration, MigrationSet, as_database, ported

_OVERLAY_V1 = """
        CREATE TABLE exceptions (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            body TEXT NOT NULL,
            created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
        );
        CREATE TABLE flags (name TEXT PRIMARY KEY, value TEXT NOT NULL)
        """

MIGRATIONS = MigrationSet(
    "overlay",
    (
        Migration(1, "owner exceptions and flags", _OVERLAY_V1, postgres=ported(_OVERLAY_V1, IDENTITY)),
        Migration(
            2,
            "contact overrides",
            """
        CREATE TABLE contact_overrides (
            contact TEXT PRIMARY KEY,
            body TEXT NOT NULL,
            updated_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
        )
        """,
        ),
    ),
    legacy_table="overlay_migrations",
)


#: the owner's switch for heard it from you (:class:`epmem.policy.calculus.HeardIt`).
HEARD_FLAG = "heard_it"


class Overlay:
    def __init__(self, db: Database | aiosqlite.Connection) -> None:
        self.db = as_database(db)

    async def add_exception(self, exc: PolicyException) -> int:
        row = await self.db.fetchone("INSERT INTO exceptions(body) VALUES (?) RETURNING id", (exc.model_dump_json(),))
        return int(row[0]) if row else 0

    async def exceptions(self) -> list[tuple[int, PolicyException]]:
        rows = await self.db.fetchall("SELECT id, body FROM exceptions ORDER BY id")
        return [(int(row[0]), PolicyException.model_validate_json(row[1])) for row in rows]

    async def revoke(self, exception_id: int) -> PolicyException | None:
        # one statement: of several workers expiring it at once, one gets the row
        row = await self.db.fetchone("DELETE FROM exceptions WHERE id = ? RETURNING body", (exception_id,))
        if row is None:
            return None
        return PolicyException.model_validate_json(row[0])

    async def get_flag(self, name: str, default: object = None) -> object:
        row = await self.db.fetchone("SELECT value FROM flags WHERE name = ?", (name,))
        return json.loads(row[0]) if row else default

    async def set_flag(self, name: str, value: object) -> None:
        await self.db.execute(
            "INSERT INTO flags(name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
            (name, json.dumps(value)),
        )

    async def heard_it(self, enabled: bool = True) -> HeardIt:
        """Heard it from you as the owner set it (``/heard``): ``enabled`` is the deployment's
        setting (``EPMEM_HEARD_IT``), which the owner's own switch overrides."""
        raw = await self.get_flag(HEARD_FLAG, {})
        body = raw if isinstance(raw, dict) else {}
        return HeardIt(
            enabled=bool(body.get("enabled", enabled)),
            off_facts=frozenset(str(x) for x in body.get("off_facts", [])),
            off_contacts=frozenset(str(x) for x in body.get("off_contacts", [])),
        )

    async def set_heard_it(self, heard: HeardIt) -> None:
        await self.set_flag(
            HEARD_FLAG,
            {
                "enabled": heard.enabled,
                "off_facts": sorted(heard.off_facts),
                "off_contacts": sorted(heard.off_contacts),
            },
        )

    async def contact_overrides(self) -> dict[str, dict[str, Any]]:
        """contact id -> the changes made by command (see :func:`epmem.policy.overrides.apply_overrides`)."""
        rows = await self.db.fetchall("SELECT contact, body FROM contact_overrides ORDER BY contact")
        return {row[0]: json.loads(row[1]) for row in rows}

    async def set_contact_override(self, contact: str, body: dict[str, Any]) -> None:
        """Replace one contact's overrides; an empty body removes the row."""
        if not body:
            await self.db.execute("DELETE FROM contact_overrides WHERE contact = ?", (contact,))
            return
        await self.db.execute(
            "INSERT INTO contact_overrides(contact, body) VALUES (?, ?) ON CONFLICT(contact) DO UPDATE SET "
            "body = excluded.body, updated_at = CURRENT_TIMESTAMP",
            (contact, json.dumps(body, sort_keys=True)),
        )
