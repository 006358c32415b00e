"""``epmem policy check``, ``use``, ``show``, ``schema`` and ``example``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from epmem.policy import load_policy, policy_json_schema

from bot.cli.common import HELP_MARKUP, from_environment, out
from bot.config import Settings

app = typer.Typer(no_args_is_help=True, rich_markup_mode=HELP_MARKUP, help="Check, choose and describe policy files.")


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


@app.command("use")
def policy_use(
    file: Path,
    force: bool = typer.Option(False, "--force", help="Make it active even if the data folder is another owner's."),
) -> None:
    """Check a policy file and make it the data folder's active policy (a copy: edit that one)."""
    from bot.owner_policy import use_policy

    s = from_environment(Settings)
    policy = use_policy(s, file, force)
    out.print(
        f"Active policy of {s.data_dir}: {s.data_dir / 'policy.yaml'}, copied from {file} (owner "
        f"{policy.owner.name}, {len(policy.contacts)} contact{'s' * (len(policy.contacts) != 1)}); "
        f"next: epmem ingest EXPORT, or epmem chat --owner",
        markup=False,
    )


@app.command("show")
def policy_show() -> None:
    """Say which policy is active for the data folder, and where it is."""
    s = from_environment(Settings)
    path = s.policy_path()
    policy = load_policy(path)
    how = "EPMEM_POLICY" if s.policy is not None else "the data folder's active policy"
    n = len(policy.contacts)
    out.print(
        f"{path} ({how}): owner {policy.owner.name}, {n} contact{'s' * (n != 1)}, {len(policy.categories)} categories",
        markup=False,
    )
