"""Per-person installs: the real Bolt OAuth flow over HTTP against the loopback Slack.

A person's browser opens ``/slack/install`` (Bolt sets the state cookie), Slack's consent page
(the fake's) sends it back with a code, Bolt trades the code at the fake's ``oauth.v2.access``
and saves the installation in the host's state (a real state database); signed events are
then authorized from it, and ``tokens_revoked`` / ``app_uninstalled`` take it away again and
tell the host whose data to erase. Nothing of Bolt or the connector is mocked.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
import yaml
from slack_sdk.oauth.state_store.stateless import StatelessOAuthStateStore

from connectors.base import Inbound, Outbound, PlatformState
from connectors.registry import ConnectorContext, PlatformError
from connectors.slack import SlackConfig, SlackConnector
from connectors.slack.config import SlackOAuth
from connectors.slack.oauth import BOT_SCOPES, REDIRECT_PATH, USER_SCOPES
from connectors.slack.platform import SlackSettings, configured, describe
from connectors.slack.platform import config as slack_config
from epmem.sqlite import scrub
from testkit.clock import FakeTimer
from testkit.fake_slack import (
    TEAM,
    FakeSlackApi,
    InstallBrowser,
    SlackSender,
    app_uninstalled,
    event_envelope,
    im_message,
    tokens_revoked,
    wait_for,
)
from testkit.handler import RecordingHandler
from testkit.state import OpenState, connector_state

SECRET = "test-signing-secret"
OWNER = "UOWNER"
DOCKER = Path(__file__).resolve().parents[2] / "docker"


@dataclass
class Rig:
    api: FakeSlackApi
    handler: RecordingHandler
    connector: SlackConnector
    st: OpenState
    came: list[str] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    events: int = 0

    @property
    def sender(self) -> SlackSender:
        return SlackSender(SECRET, lambda: self.connector.port)

    def browser(self) -> InstallBrowser:
        return InstallBrowser(lambda: self.connector.port)

    async def install(self, user: str) -> None:
        self.api.signed_in = user
        status, page = await self.browser().add_to_slack()
        assert status == 200, page

    async def event(self, event: dict[str, Any]) -> int:
        self.events += 1
        status, _ = await self.sender.event(event_envelope(event, event_id=f"Ev-{self.events}"))
        return status

    async def dm(self, user: str, text: str) -> None:
        """A DM to the bot, answered (its echo posted) before this returns."""
        assert await self.event(im_message(user, text, channel=f"D{user}")) == 200
        await wait_for(lambda: any(p.get("text") == f"echo: {text}" for p in self.api.posts(f"D{user}")), message=text)

    async def stored(self) -> list[tuple[str, str]]:
        """Every route the connector keeps, with its JSON text (tokens included)."""
        async with self.st.db.execute("SELECT key, value FROM platform_routes WHERE platform = 'slack'") as cur:
            return [(str(k), str(v)) for k, v in await cur.fetchall()]


def oauth_config(api: FakeSlackApi, **overrides: Any) -> SlackConfig:
    settings: dict[str, Any] = {
        "signing_secret": SECRET,
        "api_url": api.api_url,
        "host": "127.0.0.1",
        "port": 0,
        "owner_identity": f"slack:{TEAM}/{OWNER}",
        "timer": FakeTimer().timer,
        "oauth": SlackOAuth(api.client_id, api.client_secret, authorization_url=api.authorization_url),
    }
    settings.update(overrides)
    return SlackConfig(None, **settings)


def connector_for(r: Rig) -> SlackConnector:
    async def came(who: str) -> None:
        r.came.append(who)

    async def gone(who: str) -> None:
        r.gone.append(who)

    return SlackConnector(oauth_config(r.api), r.handler, state=r.st.state, on_install=came, on_uninstall=gone)


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    api = FakeSlackApi()
    await api.start()
    async with connector_state(tmp_path) as st:
        current = Rig(api, RecordingHandler(), connector=None, st=st)  # type: ignore[arg-type]
        current.connector = connector_for(current)
        await current.connector.start()
        api.redirect_url = f"http://127.0.0.1:{current.connector.port}/slack/oauth_redirect"
        try:
            yield current
        finally:
            await current.connector.stop()
            await api.stop()


# ------------------------------------------------------------------ install, use


async def test_install_then_use(rig: Rig) -> None:
    # before anyone installed: nothing to authorize with, nothing reaches the agent
    await rig.event(im_message("U1", "too early", channel="DU1"))
    assert rig.handler.inbounds == [] and rig.api.posts() == []

    await rig.install("U1")
    (visit,) = rig.api.authorize_visits
    assert visit["user_scope"].split(",") == list(USER_SCOPES) and visit["scope"].split(",") == list(BOT_SCOPES)
    assert rig.came == [f"slack:{TEAM}/U1"]
    token = rig.api.user_token_of("U1")
    assert token is not None
    assert rig.connector.installations is not None
    found = await rig.connector.installations.async_find_installation(enterprise_id=None, team_id=TEAM, user_id="U1")
    assert found is not None and found.user_token == token and found.bot_token == rig.api.oauth_bot_token

    rig.api.calls.clear()
    await rig.dm("U1", "hello")
    assert [i.sender for i in rig.handler.inbounds] == [f"slack:{TEAM}/U1"]
    # Bolt authorized the event from U1's installation: the bot token and U1's own user token
    assert {c.token for c in rig.api.calls_to("auth.test")} == {rig.api.oauth_bot_token, token}
    assert rig.api.calls_to("chat.postMessage")[-1].token == rig.api.oauth_bot_token


async def test_a_forged_state_is_refused(rig: Rig) -> None:
    browser = rig.browser()
    await browser.install_page()
    code = rig.api.grant("U1")
    browser.state = "forged.state.value"  # the cookie agrees with the query, the signature does not
    status, _ = await browser.back_to_app(f"/slack/oauth_redirect?code={code}&state=forged.state.value")
    assert status == 401
    assert code in rig.api.codes  # never traded
    assert rig.api.calls_to("oauth.v2.access") == [] and await rig.stored() == [] and rig.came == []


async def test_a_state_from_another_browser_is_refused(rig: Rig) -> None:
    mine, theirs = rig.browser(), rig.browser()
    await mine.install_page()
    await theirs.install_page()
    assert mine.state and theirs.state and mine.state != theirs.state
    code = rig.api.grant("U1")
    status, _ = await mine.back_to_app(f"/slack/oauth_redirect?code={code}&state={theirs.state}")
    assert status == 400  # Bolt: invalid_browser (the state is not this browser's cookie)
    status, _ = await theirs.back_to_app(f"/slack/oauth_redirect?code={code}&state={theirs.state}", cookie=False)
    assert status == 400
    assert rig.api.calls_to("oauth.v2.access") == [] and await rig.stored() == []


async def test_a_stale_state_is_refused(rig: Rig) -> None:
    oauth = oauth_config(rig.api).oauth
    assert oauth is not None
    # signed with the app's own key, expired ten seconds ago
    stale = StatelessOAuthStateStore(expiration_seconds=-10, signing_secret=oauth.state_secret()).issue()
    browser = rig.browser()
    browser.state = stale
    status, _ = await browser.back_to_app(f"/slack/oauth_redirect?code={rig.api.grant('U1')}&state={stale}")
    assert status == 401
    assert rig.api.calls_to("oauth.v2.access") == [] and await rig.stored() == []


async def test_a_code_slack_does_not_know_stores_nothing(rig: Rig) -> None:
    browser = rig.browser()
    await browser.install_page()
    status, _ = await browser.back_to_app(f"/slack/oauth_redirect?code=made-up&state={browser.state}")
    assert status == 401  # Bolt: invalid_code
    assert await rig.stored() == [] and rig.came == []


async def test_another_workspace_cannot_install(rig: Rig) -> None:
    """The deployment serves the policy owner's workspace: nobody elsewhere swaps its bot."""
    await rig.install("U1")
    browser = rig.browser()
    await browser.install_page()
    status, _ = await browser.back_to_app(
        f"/slack/oauth_redirect?code={rig.api.grant('UX', 'T9')}&state={browser.state}"
    )
    assert status == 500  # Bolt: storage_error
    assert not any("T9" in k for k, _ in await rig.stored()) and rig.came == [f"slack:{TEAM}/U1"]
    assert rig.connector.client.token == rig.api.oauth_bot_token


async def test_installations_outlive_a_restart(rig: Rig) -> None:
    await rig.install("U1")
    await rig.connector.stop()
    rig.connector = connector_for(rig)
    await rig.connector.start()
    await rig.dm("U1", "after restart")
    assert rig.api.calls_to("chat.postMessage")[-1].token == rig.api.oauth_bot_token


# ------------------------------------------------------------------ uninstall


async def test_tokens_revoked_takes_one_person_away(rig: Rig) -> None:
    await rig.install("U1")
    await rig.install("U2")
    token1, token2 = rig.api.user_token_of("U1"), rig.api.user_token_of("U2")
    assert token1 and token2 and any(token1 in v for _, v in await rig.stored())

    rig.api.revoke(token1)
    assert await rig.event(tokens_revoked(["U1"])) == 200
    await wait_for(lambda: rig.gone == [f"slack:{TEAM}/U1"], message="on_uninstall")
    await rig.connector.drain()
    stored = await rig.stored()
    assert not any(token1 in v for _, v in stored) and not any("/user/U1" in k for k, _ in stored)
    assert any(token2 in v for _, v in stored)

    # the other person is untouched: still authorized with their own token
    rig.api.calls.clear()
    await rig.dm("U2", "still here")
    assert token2 in {c.token for c in rig.api.calls_to("auth.test")}
    # U1 is a contact like anyone else now: answered by the bot, never with their old token
    await rig.dm("U1", "and me?")
    assert token1 not in {c.token for c in rig.api.calls}
    assert rig.gone == [f"slack:{TEAM}/U1"]


async def test_no_byte_of_a_revoked_token_outlives_the_hosts_scrub(rig: Rig, tmp_path: Path) -> None:
    """The installation's rows are deleted before ``on_uninstall`` runs; their old page images
    live on in the WAL until the host scrubs the state database, as its erasure does."""
    await rig.install("U1")
    await rig.install("U2")
    token1, token2 = rig.api.user_token_of("U1"), rig.api.user_token_of("U2")
    assert token1 and token2
    await rig.event(tokens_revoked(["U1"]))
    await wait_for(lambda: rig.gone == [f"slack:{TEAM}/U1"])
    await rig.connector.drain()
    assert await scrub(rig.st.db)
    files = b"".join(f.read_bytes() for f in tmp_path.iterdir() if f.name.startswith("state.sqlite"))
    assert token1.encode() not in files and token2.encode() in files


async def test_no_token_or_secret_reaches_a_log_line(
    rig: Rig, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    await rig.install("U1")
    await rig.dm("U1", "hello")
    token = rig.api.user_token_of("U1")
    await rig.event(tokens_revoked(["U1"]))
    await wait_for(lambda: rig.gone == [f"slack:{TEAM}/U1"])
    await rig.connector.drain()
    # the connector's own lines and the Slack libraries' (whose loggers the connector guards);
    # the state database's driver logs its SQL at DEBUG: the host's log handler redacts that
    libraries = ("connectors", "slack_bolt", "slack_sdk", "aiohttp")
    lines = [r.getMessage() for r in caplog.records if r.name.startswith(libraries)]
    logged = "\n".join(lines) + capsys.readouterr().out
    assert "slack.installation_saved" in logged and "slack.uninstalled" in logged
    for secret in (token, rig.api.oauth_bot_token, rig.api.client_secret, SECRET):
        assert secret and secret not in logged, secret


async def test_a_revoked_event_twice_erases_once(rig: Rig) -> None:
    await rig.install("U1")
    body = event_envelope(tokens_revoked(["U1"]), event_id="Ev-revoked")
    assert (await rig.sender.event(body))[0] == 200
    assert (await rig.sender.event(body, retry_num=1))[0] == 200
    await wait_for(lambda: rig.gone == [f"slack:{TEAM}/U1"])
    await rig.connector.drain()
    assert rig.gone == [f"slack:{TEAM}/U1"]


async def test_app_uninstalled_takes_everyone_away(rig: Rig) -> None:
    await rig.install("U1")
    await rig.install("U2")
    rig.api.revoke(rig.api.oauth_bot_token)
    assert await rig.event(app_uninstalled()) == 200
    await wait_for(lambda: sorted(rig.gone) == [f"slack:{TEAM}/U1", f"slack:{TEAM}/U2"], message="on_uninstall")
    await rig.connector.drain()
    assert await rig.stored() == []
    assert rig.connector.client.token is None
    await rig.event(im_message("U2", "anyone?", channel="DU2"))
    assert rig.handler.texts() == []


async def test_one_failed_erasure_stops_nobody_elses(rig: Rig) -> None:
    await rig.install("U1")
    await rig.install("U2")

    async def gone(who: str) -> None:
        if who.endswith("/U1"):
            raise RuntimeError("the host failed")
        rig.gone.append(who)

    rig.connector._on_uninstall = gone
    await rig.event(app_uninstalled())
    await wait_for(lambda: rig.gone == [f"slack:{TEAM}/U2"])


async def test_the_owner_installing_turns_on_delegate_mode(rig: Rig) -> None:
    assert rig.connector.delivery.user is None
    await rig.install(OWNER)
    owner_token = rig.api.user_token_of(OWNER)
    assert rig.connector.delivery.user is not None and rig.connector.delivery.user.token == owner_token
    await rig.event(tokens_revoked([OWNER]))
    await wait_for(lambda: rig.gone == [f"slack:{TEAM}/{OWNER}"])
    assert rig.connector.delivery.user is None


async def test_no_host_hook_keeps_the_tokens_gone_anyway(tmp_path: Path) -> None:
    api = FakeSlackApi()
    await api.start()
    async with connector_state(tmp_path) as st:
        handler = RecordingHandler()
        connector = SlackConnector(oauth_config(api), handler, state=st.state)
        await connector.start()
        api.redirect_url = f"http://127.0.0.1:{connector.port}/slack/oauth_redirect"
        try:
            api.signed_in = "U1"
            assert (await InstallBrowser(lambda: connector.port).add_to_slack())[0] == 200
            sender = SlackSender(SECRET, lambda: connector.port)
            await sender.event(event_envelope(tokens_revoked(["U1"]), event_id="Ev-r"))
            assert connector.installations is not None
            installations = connector.installations

            for _ in range(500):  # Bolt acknowledged first; the listener deletes after
                if await installations.users(None, TEAM) == []:
                    break
                await asyncio.sleep(0.01)
            assert await installations.users(None, TEAM) == []
        finally:
            await connector.stop()
            await api.stop()


# ------------------------------------------------------------------ settings


def slack_settings(monkeypatch: pytest.MonkeyPatch, **env: str) -> SlackSettings:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return SlackSettings()


def test_per_person_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    s = slack_settings(
        monkeypatch,
        SLACK_CLIENT_ID="1111.2222",
        SLACK_CLIENT_SECRET="client-secret-value",
        SLACK_SIGNING_SECRET="sig",
        SLACK_REDIRECT_URI="https://bot.example.org/slack/oauth_redirect",
    )
    assert configured(s) and "per-person" in describe(s)

    async def handler(inbound: Inbound) -> Outbound:
        return Outbound(None)

    ctx = ConnectorContext(handler, cast(PlatformState, None), f"slack:{TEAM}/{OWNER}", 4000)  # reads no state
    config = slack_config(s, ctx)
    assert config.bot_token is None and config.oauth is not None
    assert config.oauth.client_id == "1111.2222"
    assert config.oauth.redirect_uri == "https://bot.example.org/slack/oauth_redirect"
    assert "client-secret-value" not in repr(config) and "client-secret-value" not in config.oauth.state_secret()


@pytest.mark.parametrize(
    "env",
    [
        {"SLACK_CLIENT_ID": "1", "SLACK_SIGNING_SECRET": "s"},
        {"SLACK_CLIENT_SECRET": "x", "SLACK_SIGNING_SECRET": "s"},
        {"SLACK_CLIENT_ID": "1", "SLACK_CLIENT_SECRET": "x"},
        {"SLACK_CLIENT_ID": "1", "SLACK_CLIENT_SECRET": "x", "SLACK_SIGNING_SECRET": "s", "SLACK_BOT_TOKEN": "xoxb"},
        {"SLACK_CLIENT_ID": "1", "SLACK_CLIENT_SECRET": "x", "SLACK_SIGNING_SECRET": "s", "SLACK_USER_TOKEN": "xoxp"},
        {"SLACK_CLIENT_ID": "1", "SLACK_CLIENT_SECRET": "x", "SLACK_SIGNING_SECRET": "s", "SLACK_APP_TOKEN": "xapp"},
    ],
)
def test_per_person_settings_half_set_or_mixed(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    with pytest.raises(PlatformError):
        configured(slack_settings(monkeypatch, **env))


def manifest(name: str) -> dict[str, Any]:
    data = yaml.safe_load((DOCKER / name).read_text())
    assert isinstance(data, dict)
    return data


def test_the_scopes_asked_for_are_the_manifests() -> None:
    for name in ("slack-app-manifest.yaml", "slack-app-manifest.oauth.yaml"):
        scopes = manifest(name)["oauth_config"]["scopes"]
        assert set(USER_SCOPES) == set(scopes["user"]) and set(BOT_SCOPES) == set(scopes["bot"])


def test_the_per_person_manifest_adds_only_the_redirect_and_the_uninstall_events() -> None:
    http, oauth = manifest("slack-app-manifest.yaml"), manifest("slack-app-manifest.oauth.yaml")
    (redirect,) = oauth["oauth_config"].pop("redirect_urls")
    assert redirect.startswith("https://") and redirect.endswith(REDIRECT_PATH)
    events = oauth["settings"]["event_subscriptions"]["bot_events"]
    assert {"app_uninstalled", "tokens_revoked"} <= set(events)
    oauth["settings"]["event_subscriptions"]["bot_events"] = [
        e for e in events if e not in ("app_uninstalled", "tokens_revoked")
    ]
    assert oauth == http


def test_tokens_stay_out_of_repr() -> None:
    oauth = SlackOAuth("1", "client-secret-value")
    assert "client-secret-value" not in repr(oauth)
    assert json.dumps(oauth.state_secret())
