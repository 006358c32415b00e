"""A table of the state database as its columns' names: what the stores that keep one row per
thing (held replies, bot/approvals.py; consultations, bot/consultations/store.py) share.

A row is read by column NAME (the cursor's description), never by position, so adding or
dropping a column (a migration) cannot shift what every other field reads; a row is written
from a mapping of names, so an insert names each value beside its column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from epmem.db import Database

#: one row, by column name.
Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Table:
    name: str
    #: the columns every read selects (the row's dataclass is built from them by name).
    columns: tuple[str, ...]

    @property
    def selected(self) -> str:
        return ", ".join(self.columns)

    def select(self, where: str = "1 = 1", tail: str = "", extra: str = "") -> str:
        """``SELECT`` the columns (and ``extra``, e.g. ``rowid AS number``) ``WHERE where``."""
        more = f", {extra}" if extra else ""
        return f"SELECT {self.selected}{more} FROM {self.name} WHERE {where} {tail}".rstrip()

    async def rows(self, db: Database, sql: str, args: Sequence[Any] = ()) -> list[Row]:
        """Every row ``sql`` selects, each as a mapping of its column names."""
        return await db.fetchnamed(sql, tuple(args))

    async def one(self, db: Database, sql: str, args: Sequence[Any] = ()) -> Row | None:
        found = await self.rows(db, sql, args)
        return found[0] if found else None

    async def insert(self, db: Database, values: Mapping[str, Any]) -> None:
        """One row: each value named by its column (a column not named takes its default)."""
        unknown = set(values) - set(self.columns)
        if unknown:
            raise ValueError(f"table {self.name}: no column {', '.join(sorted(unknown))}")
        names = list(values)
        await db.execute(
            f"INSERT INTO {self.name}({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
            tuple(values[n] for n in names),
        )
