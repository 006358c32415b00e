"""``epmem policy check``, ``epmem policy schema`` and ``epmem policy example``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from epmem.policy import load_policy, policy_json_schema

from bot.cli.common import out

app = typer.Typer(no_args_is_help=True, help="Check and describe policy files.")


@app.command("check")
def policy_check(file: Path) -> None:
    """Report every problem in a policy file (with line numbers); exit 1 if any."""
    policy = load_policy(file)
    out.print(
        f"{file}: ok ({len(policy.contacts)} contacts, {len(policy.groups)} groups, "
        f"{len(policy.categories)} categories, {len(policy.exceptions)} exceptions)",
        markup=False,
    )


@app.command("schema")
def policy_schema() -> None:
    """Print the policy's JSON Schema."""
    sys.stdout.write(json.dumps(policy_json_schema(), indent=2) + "\n")


@app.command("example")
def policy_example() -> None:
    """Print the example owner's policy, commented: a start for your own (epmem policy example > policy.yaml)."""
    from bot.examples import POLICY, example_text

    sys.stdout.write(example_text(POLICY))
