"""Which platforms ``epmem run`` starts, from the environment, and who the owner is on each."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import cast

import pytest
from typer.testing import CliRunner

from bot.cli import app
from bot.platforms import ConnectorContext, PlatformError, PlatformSettings
from bot.serve import Service
from connectors.base import Inbound, Outbound, PlatformState
from connectors.registry import PLATFORMS
from connectors.slack.platform import SLACK, SlackSettings
from connectors.slack.platform import config as slack_config
from connectors.telegram.platform import TELEGRAM, TelegramSettings
from connectors.telegram.platform import config as telegram_config
from testkit.handler import echo
from testkit.house import OWNER_TG, house_policy, house_runtime
from testkit.platforms import loopback_fake


def settings(monkeypatch: pytest.MonkeyPatch, **env: str) -> PlatformSettings:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return PlatformSettings()


def context(p: PlatformSettings, platform: str, owner: str | None = "policy") -> ConnectorContext:
    """What ``epmem run`` gives a connector; the configs under test read no state."""
    if owner == "policy":
        owner = PLATFORMS.owner_identity(platform, house_policy().owner.identities)

    async def handler(inbound: Inbound) -> Outbound:
        return echo(inbound)

    return p.context(handler, cast(PlatformState, None), owner, 4000)


def tg(p: PlatformSettings) -> TelegramSettings:
    return cast(TelegramSettings, p.of(TELEGRAM.name))


def sl(p: PlatformSettings) -> SlackSettings:
    return cast(SlackSettings, p.of(SLACK.name))


def test_nothing_configured_means_console(monkeypatch: pytest.MonkeyPatch) -> None:
    p = settings(monkeypatch)
    assert p.configured() == []


def test_telegram_token_and_urls(monkeypatch: pytest.MonkeyPatch) -> None:
    p = settings(
        monkeypatch,
        TELEGRAM_BOT_TOKEN="123:abc",
        EPMEM_TELEGRAM_API_URL="http://127.0.0.1:9/bot",
        EPMEM_TELEGRAM_WEBHOOK_URL="https://bot.example.org/tg/hook",
    )
    assert p.configured() == [TELEGRAM]
    assert "123:abc" not in repr(p) and "123:abc" not in repr(p.of("telegram"))
    config = telegram_config(tg(p), context(p, "telegram"))
    assert config.base_url == "http://127.0.0.1:9/bot" and config.owner_user_id == OWNER_TG
    assert config.webhook_url == "https://bot.example.org/tg/hook"
    assert config.secret_token and len(config.secret_token) >= 32  # made up when not given
    assert "123:abc" not in repr(config) and config.secret_token not in repr(config)


@pytest.mark.parametrize(
    "env",
    [
        {"SLACK_BOT_TOKEN": "xoxb-1"},
        {"SLACK_SIGNING_SECRET": "s"},
        {"SLACK_APP_TOKEN": "xapp-1"},
    ],
)
def test_half_configured_slack_is_an_error(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    with pytest.raises(PlatformError):
        settings(monkeypatch, **env).configured()


def test_slack_http_or_socket_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    p = settings(monkeypatch, SLACK_BOT_TOKEN="xoxb-1", SLACK_SIGNING_SECRET="sig", EPMEM_SLACK_PORT="3100")
    assert p.configured() == [SLACK]
    config = slack_config(sl(p), context(p, "slack"))
    assert config.port == 3100 and config.app_token is None and config.owner_identity == "slack:T1/UOWNER"
    assert config.user_token is None and config.pacing.channel.per_s == 1.0  # Slack's documented pace
    socket = settings(monkeypatch, SLACK_APP_TOKEN="xapp-1")
    assert slack_config(sl(socket), context(socket, "slack")).app_token == "xapp-1"


def test_slack_delegate_mode_needs_an_owner_on_slack(monkeypatch: pytest.MonkeyPatch) -> None:
    p = settings(
        monkeypatch,
        SLACK_BOT_TOKEN="xoxb-1",
        SLACK_SIGNING_SECRET="sig",
        SLACK_USER_TOKEN="xoxp-owner",
        EPMEM_SLACK_DELEGATE_DELAY_S="5",
        EPMEM_SEND_PACING="0",
    )
    config = slack_config(sl(p), context(p, "slack"))
    assert config.user_token == "xoxp-owner" and "xoxp-owner" not in repr(config)
    assert config.delegate_delay_s == 5 and config.pacing.channel.per_s == 0
    with pytest.raises(PlatformError, match="SLACK_USER_TOKEN"):
        slack_config(sl(p), context(p, "slack", owner=None))


def test_run_refuses_half_configured_slack_with_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-secret-value")
    monkeypatch.setenv("EPMEM_DATA_DIR", str(tmp_path))
    result = CliRunner().invoke(app, ["run"])
    assert result.exit_code == 1
    assert "neither SLACK_SIGNING_SECRET" in result.output and "xoxb-secret-value" not in result.output


async def test_console_fallback_runs_owner_commands_until_input_ends(tmp_path: Path) -> None:
    runtime = await house_runtime(tmp_path / "data")
    out = io.StringIO()
    try:
        service = Service(runtime, PlatformSettings(), console_stdin=io.StringIO("/approval 3\n/pending\n"))
        assert service.platforms == ["console"]
        assert service.console is not None
        service.console.stdout = out
        await service.start()
        await service.wait(asyncio.Event())  # returns when the console's input ends
        await service.stop()
    finally:
        await runtime.close()
    assert "Approval mode on" in out.getvalue() and "No replies are waiting" in out.getvalue()


def test_every_registered_platform_names_a_loopback_fake_that_loads() -> None:
    assert [p.name for p in PLATFORMS] == ["telegram", "slack"]  # the table's order is start order
    for platform in PLATFORMS:
        fake = loopback_fake(platform.name)
        assert isinstance(fake, type) and fake.__module__.startswith("testkit."), platform.name
    with pytest.raises(KeyError):
        loopback_fake("matrix")
