"""The database seam: SQLite (the embedded default) or PostgreSQL, chosen by a path or a URL.

See :mod:`epmem.db.base` for what differs between the two and where it is said.
"""

from epmem.db.base import (
    IDENTITY,
    POSTGRES,
    SQLITE,
    Database,
    DatabaseError,
    Dialect,
    Migration,
    MigrationSet,
    Row,
    is_postgres_url,
    numbered,
    ported,
    split_schema,
    with_schema,
)
from epmem.db.lite import SQLiteDatabase, as_database
from epmem.db.migrate import connect_to, driver_errors, migrate, open_database, redacted

__all__ = [
    "IDENTITY",
    "POSTGRES",
    "SQLITE",
    "Database",
    "DatabaseError",
    "Dialect",
    "Migration",
    "MigrationSet",
    "Row",
    "SQLiteDatabase",
    "as_database",
    "connect_to",
    "driver_errors",
    "is_postgres_url",
    "migrate",
    "numbered",
    "open_database",
    "ported",
    "redacted",
    "split_schema",
    "with_schema",
]
