"""The example owner, Sam Rivera: policy, demo facts and the policy's JSON Schema, as package data.

They are read through ``importlib.resources``, never through the source tree, so a wheel, a
pipx install and the Docker image find them where the package is installed (``epmem demo``
loads them, ``epmem policy example`` prints the policy). The files sit in this folder of the
checkout: edit them here.
"""

from __future__ import annotations

import atexit
from contextlib import ExitStack
from importlib.resources import as_file, files
from pathlib import Path

POLICY = "example.yaml"
FACTS = "example-facts.yaml"
SCHEMA = "policy.schema.json"

_extracted = ExitStack()
atexit.register(_extracted.close)


def example_file(name: str) -> Path:
    """A real file for ``name``: the package's own file when installed unpacked (pip, pipx,
    Docker, a checkout); a temporary copy, removed at exit, when the package is zipped."""
    resource = files(__name__) / name
    if isinstance(resource, Path):
        return resource
    return _extracted.enter_context(as_file(resource))


def example_text(name: str) -> str:
    return (files(__name__) / name).read_text(encoding="utf-8")
