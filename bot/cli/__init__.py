"""``epmem``: a thin synchronous CLI over the async library, one module per group of commands.

``common`` holds what every command shares; ``first_run`` (setup, demo, init), ``chat``, ``memory``, ``imports``,
``policy``, ``audit`` and ``ops`` (health, doctor) hold the commands. Other installed packages add command groups through the ``epmem.cli`` entry
point group (a name and a ``typer.Typer``): that is how ``epmem bench`` arrives from
``benchmarks/``, which sits above the bot and which the bot never imports.
"""

from __future__ import annotations

from importlib.metadata import entry_points

import typer

from bot.cli import audit, chat, first_run, imports, memory, ops, policy
from bot.cli.common import HELP_MARKUP, OWNER_OPTION_HELP, EpmemGroup, choose_owner, err

PLUGINS = "epmem.cli"

app = typer.Typer(
    cls=EpmemGroup,
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=HELP_MARKUP,
    help="EP-Mem Delegate: a privacy-aware delegate.",
)


@app.callback()
def _root(owner_id: str = typer.Option(None, "--owner-id", help=OWNER_OPTION_HELP)) -> None:
    """EP-Mem Delegate: a privacy-aware delegate."""
    choose_owner(owner_id)


first_run.register(app)
chat.register(app)
memory.register(app)
imports.register(app)
ops.register(app)
app.add_typer(policy.app, name="policy")
app.add_typer(audit.app, name="audit")


def _add_plugins(root: typer.Typer) -> None:
    """Command groups other packages declare under the ``epmem.cli`` entry point group."""
    for point in sorted(entry_points(group=PLUGINS), key=lambda p: p.name):
        try:
            group = point.load()
        except Exception as exc:  # a broken plugin must not take the bot's own commands down
            err.print(
                f"warning: epmem {point.name} is unavailable ({type(exc).__name__}: {exc})",
                markup=False,
                soft_wrap=True,
            )
            continue
        root.add_typer(group, name=point.name)


_add_plugins(app)


def main() -> None:
    app()
