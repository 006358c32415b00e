"""One registry of owner commands: /help, the README table and the Slack manifests follow from it.

The renderings are checked against the declarations, not against a copy typed by hand, so a
command added in one place shows up everywhere or a test says where it is missing.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from bot.commands import CommandContext, CommandRegistry, CommandSet, owner_commands
from bot.runtime import Runtime
from connectors.base import Inbound
from testkit.house import house_runtime
from testkit.runtime import REPO, ask

REGISTRY = owner_commands()


def test_every_command_is_declared_once_with_a_usage_line() -> None:
    words = [w for c in REGISTRY.commands for w in (c.name, *c.aliases)]
    assert len(words) == len(set(words))
    assert {"allow", "forget", "annotations", "category", "confirm", "reannotate", "help"} <= set(words)
    for c in REGISTRY.commands:
        assert c.summary and c.synopsis.startswith(f"/{c.name}")


def test_help_lists_every_command_and_alias() -> None:
    text = REGISTRY.help()
    for c in REGISTRY.commands:
        assert c.synopsis in text, c.name
        for alias in c.aliases:
            assert f"/{alias}" in text


def test_readme_table_is_the_registry() -> None:
    readme = (REPO / "README.md").read_text()
    table = REGISTRY.markdown()
    assert table in readme, "README's owner-command table drifted; paste this in its place:\n" + table


@pytest.mark.parametrize("name", ["slack-app-manifest.yaml", "slack-app-manifest.socket.yaml"])
def test_slack_usage_hint_is_the_registry(name: str) -> None:
    manifest = yaml.safe_load((REPO / "docker" / name).read_text())
    [command] = manifest["features"]["slash_commands"]
    assert command["usage_hint"] == REGISTRY.slack_usage_hint()
    for example in command["usage_hint"].split(" | "):
        assert REGISTRY.find(example.split()[0]) is not None


def test_a_word_declared_twice_is_refused() -> None:
    first, second = CommandSet(), CommandSet()

    async def verb(*_: object) -> str:
        return ""

    first.command("pause", summary="one")(verb)
    second.command("hold", summary="two", aliases=("pause",))(verb)
    with pytest.raises(ValueError, match="/pause is declared twice"):
        CommandRegistry(first, second)


@pytest.fixture
async def house(tmp_path: Path) -> AsyncIterator[Runtime]:
    runtime = await house_runtime(tmp_path / "data")
    try:
        yield runtime
    finally:
        await runtime.close()


async def test_help_and_unknown_commands_answer_with_the_registry(house: Runtime) -> None:
    assert (await house.agent.handle(ask("owner", "/help"))).text == REGISTRY.help()
    assert (await house.agent.handle(ask("owner", "/start"))).text == REGISTRY.help()
    unknown = (await house.agent.handle(ask("owner", "/frobnicate now"))).text or ""
    assert unknown.startswith("Unknown command /frobnicate.") and REGISTRY.help() in unknown


async def test_an_alias_runs_its_command(house: Runtime) -> None:
    assert (await house.agent.handle(ask("owner", "/who_knows f1"))).text == "Nobody has been told f1 by me."


async def test_the_scheduler_runs_only_what_declares_it(house: Runtime) -> None:
    resolved = house.owner.directory.resolve("console:owner")
    inbound = Inbound("scheduler", "task", "direct", "scheduler:task-1", "/forget f1")
    ctx = CommandContext(inbound, resolved, caller="scheduler")
    assert await house.commands.run("/forget f1", house.owner, ctx) == "/forget: cannot be run by the scheduler"
    assert await house.memory.get("f1") is not None
    level = await house.commands.run("/level raj 2", house.owner, ctx)
    assert level == "raj is now level 2 (was 4)."


@pytest.mark.parametrize(
    ("line", "command", "hint"),
    [
        ("/domain ana sideways", "domain", ""),
        ("/level ana", "level", "N is 1-4 for a contact, 0-4 for a fact"),
        ("/whoknows", "who-knows", ""),
        ("/unschedule soon", "unschedule", "N as /scheduled shows it"),
    ],
)
async def test_a_mistyped_command_is_answered_with_its_declared_usage(
    house: Runtime, line: str, command: str, hint: str
) -> None:
    found = REGISTRY.find(command)
    assert found is not None
    typed = line.split()[0]
    want = f"usage: {typed} {found.usage}" + (f" ({hint})" if hint else "")
    assert (await house.agent.handle(ask("owner", line))).text == want


def test_no_command_types_its_own_usage() -> None:
    """Usage lines are rendered from the declaration (UsageError); a hand-typed copy drifts."""
    typed = [
        f"{path.relative_to(REPO)}:{n}"
        for path in sorted((REPO / "bot").rglob("*.py"))
        for n, text in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"""["']usage: /[a-z]""", text)
    ]
    assert not typed, "raise UsageError(hint) instead of typing the usage:\n" + "\n".join(typed)


def test_the_menu_names_every_command_as_a_platform_menu_accepts_it() -> None:
    """Telegram's menu takes a-z, 0-9 and _ only: /who-knows is offered by its alias who_knows."""
    import re

    from bot.commands import owner_commands

    menu = owner_commands().menu()
    words = [word for word, _ in menu]
    assert all(re.fullmatch(r"[a-z0-9_]{1,32}", w) for w in words) and len(set(words)) == len(words)
    assert "who_knows" in words and "who-knows" not in words and "help" in words
    assert all(3 <= len(summary) <= 256 for _, summary in menu) and len(menu) <= 100
