"""The root of every error the library raises on purpose.

Callers (the CLI, the connectors) catch :class:`EpmemError` once and print its one-line
message; anything else is a bug and keeps its traceback. Each child keeps the builtin base it
had before (``ValueError`` for bad input, ``RuntimeError`` for a bad state), so code that
caught those still does.
"""

from __future__ import annotations


class EpmemError(Exception):
    """Something the user can act on: bad input, a locked or damaged data folder, a failed model."""
