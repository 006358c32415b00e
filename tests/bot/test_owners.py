"""Several owners in one data folder (bot/owners.py): whom it serves, where each owner's files
live, and whose credentials each owner's platforms use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.config import ConfigError, Settings
from bot.owners import OWNER_ENV, owner_homes, owner_settings
from bot.platforms import PlatformSettings
from connectors.registry import PLATFORMS
from testkit.cli import run_cli

OWNER_IDS = st.from_regex(r"[a-z0-9][a-z0-9_-]{0,20}", fullmatch=True)


def policy(folder: Path, name: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "policy.yaml").write_text(
        f"owner:\n  name: {name}\ncontacts: {{}}\ncategories:\n  misc:\n    level: 2\ndefault_category: misc\n"
    )


def files_of(s: Settings) -> list[Path]:
    return [s.data_dir, s.state_db, s.audit_db, s.qdrant_dir, s.data_dir / "policy.yaml"]


def test_a_plain_data_folder_is_one_owner_as_before(tmp_path: Path) -> None:
    policy(tmp_path, "Maya")
    root = Settings(data_dir=tmp_path)
    [home] = owner_homes(root)
    assert home.settings is root
    assert (home.owner_id, home.settings.data_dir, home.settings.owner_id) == ("default", tmp_path, "default")


def test_every_owner_under_owners_and_the_folders_own(tmp_path: Path) -> None:
    policy(tmp_path, "Maya")
    policy(tmp_path / "owners" / "ana", "Ana")
    policy(tmp_path / "owners" / "ben", "Ben")
    homes = owner_homes(Settings(data_dir=tmp_path))
    assert [h.owner_id for h in homes] == ["default", "ana", "ben"]
    assert [h.settings.data_dir for h in homes] == [tmp_path, tmp_path / "owners/ana", tmp_path / "owners/ben"]
    assert [h.settings.owner_id for h in homes] == ["default", "ana", "ben"]  # their tenant ids


def test_epmem_owner_chooses_one(tmp_path: Path) -> None:
    policy(tmp_path / "owners" / "ana", "Ana")
    policy(tmp_path / "owners" / "ben", "Ben")
    [home] = owner_homes(Settings(data_dir=tmp_path, owner="ben"))
    assert home.settings.data_dir == tmp_path / "owners" / "ben"
    assert home.settings.owner_id == "ben"


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda root: (root / "owners" / "Ana Ruiz").mkdir(parents=True), "owner id"),
        (lambda root: (root / "owners" / "ana").mkdir(parents=True), "has no active policy"),
        (lambda root: (root / "owners").mkdir(), "holds no owner"),
    ],
)
def test_an_owner_left_out_stops_the_start(tmp_path: Path, make: object, says: str) -> None:
    make(tmp_path)  # type: ignore[operator]
    with pytest.raises(ConfigError, match=says) as caught:
        owner_homes(Settings(data_dir=tmp_path))
    assert str(tmp_path) in str(caught.value)


def test_a_tenant_id_other_than_the_owner_id_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="EPMEM_OWNER_ID"):
        Settings(data_dir=tmp_path, owner="ana", owner_id="shared")


@given(OWNER_IDS, OWNER_IDS)
def test_no_two_owners_share_a_file(a: str, b: str) -> None:
    """Whatever their ids, two owners' databases, store and policy are different files, each
    under its own owner's folder and under no other owner's."""
    root = Settings(data_dir=Path("/srv/epmem"))
    first, second = owner_settings(root, a), owner_settings(root, b)
    assert first.owner_id == a and second.owner_id == b
    for mine in files_of(first):
        assert mine.is_relative_to(first.data_dir)
        assert a == b or not mine.is_relative_to(second.data_dir)
    if a != b:
        assert not set(files_of(first)) & set(files_of(second))


def token_file(folder: Path, token: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    env = folder / OWNER_ENV
    env.write_text(f"TELEGRAM_BOT_TOKEN={token}\nEPMEM_TELEGRAM_POLL_TIMEOUT=2\n")
    return env


def test_an_owner_s_platforms_come_from_their_own_file(tmp_path: Path) -> None:
    env = token_file(tmp_path, "111:ana-token")
    settings = PlatformSettings.of_owner(env)
    [telegram] = settings.configured()
    assert PLATFORMS.get("telegram") is telegram
    assert telegram.secrets(settings.of("telegram")) == ["111:ana-token"]


def test_a_credential_from_the_process_environment_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment wins over a file: an owner whose file lacks the token the process has
    would answer on everyone's bot."""
    env = tmp_path / OWNER_ENV
    env.write_text("EPMEM_TELEGRAM_POLL_TIMEOUT=2\n")
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "999:everyones")
    with pytest.raises(ConfigError, match="process environment") as caught:
        PlatformSettings.of_owner(env)
    assert str(env) in str(caught.value) and "everyones" not in str(caught.value)


def test_two_owners_on_one_bot_are_refused(tmp_path: Path) -> None:
    for owner in ("ana", "ben"):
        policy(tmp_path / "owners" / owner, owner.title())
        token_file(tmp_path / "owners" / owner, "111:same-token")
    with pytest.raises(ConfigError, match="same Telegram credentials") as caught:
        owner_homes(Settings(data_dir=tmp_path))
    assert "same-token" not in str(caught.value)


def test_the_cli_makes_and_talks_to_one_owner_of_several(tmp_path: Path) -> None:
    env = {"EPMEM_DATA_DIR": str(tmp_path), "EPMEM_RERANKER": "off"}
    for owner, name in (("ana", "Ana Ruiz"), ("ben", "Ben Okafor")):
        made = run_cli(["--owner-id", owner, "init", "--owner", name, "--contact", "sam=Sam Lee,2,life"], env)
        assert made.returncode == 0, made.stderr
        assert (tmp_path / "owners" / owner / "policy.yaml").is_file()
    assert not (tmp_path / "policy.yaml").exists()
    chat = run_cli(["chat", "--owner-id", "ben", "--as", "sam"], env, stdin="hello\n")
    assert chat.returncode == 0, chat.stderr
    assert "Ben Okafor" in chat.stdout and "Ana" not in chat.stdout
    assert (tmp_path / "owners" / "ben" / "audit.sqlite").is_file()
    assert not (tmp_path / "owners" / "ana" / "audit.sqlite").exists()
    bad = run_cli(["--owner-id", "Ben Okafor", "chat", "--as", "sam"], env)
    assert bad.returncode == 1 and "EPMEM_OWNER" in bad.stderr and "Traceback" not in bad.stderr


def test_a_bot_in_the_environment_is_shared_by_every_owner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Telegram has a front (one poller for a shared bot): with several owners, the environment's
    bot is everyone's, and no owner runs a connector of their own for it."""
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "333:shared")
    for owner in ("ana", "ben"):
        policy(tmp_path / "owners" / owner, owner.title())
    homes = owner_homes(Settings(data_dir=tmp_path))
    assert [h.shared for h in homes] == [("telegram",), ("telegram",)]
    assert [h.platforms().configured() for h in homes] == [[], []]


def test_an_app_in_the_environment_is_nobody_s_with_several_owners(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Slack has no front: a Slack app in the environment would be every owner's own, each
    answering the same events. Refused, before anything starts."""
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-everyone")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "secret")
    for owner in ("ana", "ben"):
        policy(tmp_path / "owners" / owner, owner.title())
    with pytest.raises(ConfigError, match="Slack's credentials come from the process environment") as caught:
        owner_homes(Settings(data_dir=tmp_path))
    assert "xoxb-everyone" not in str(caught.value)


def test_health_and_doctor_speak_for_every_owner(tmp_path: Path) -> None:
    import time

    from bot import health

    for owner in ("ana", "ben"):
        policy(tmp_path / "owners" / owner, owner.title())
    report = {"ok": True, "epoch": time.time(), "time": "now", "platforms": {"telegram": "connected"}}
    health.write(tmp_path / "owners" / "ana" / health.FILE, {**report, "stores": {"vector": "ok"}})
    env = {"EPMEM_DATA_DIR": str(tmp_path)}
    one_missing = run_cli(["health"], env)
    assert one_missing.returncode == 1
    assert "owner ana: telegram: connected" in one_missing.stdout
    assert "owner ben: no health report" in one_missing.stdout
    health.write(tmp_path / "owners" / "ben" / health.FILE, {**report, "stores": {"vector": "ok"}})
    both = run_cli(["health"], env)
    assert both.returncode == 0, both.stdout
    assert set(json.loads(run_cli(["health", "--json"], env).stdout)) == {"ana", "ben"}
    doctor = run_cli(["doctor"], env)
    assert "ok: 2 owners in" in doctor.stdout
    assert "ok: owner ana: policy" in doctor.stdout and "ok: owner ben: policy" in doctor.stdout
