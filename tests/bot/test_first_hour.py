"""From the demo to your own delegate, as a new user types it (real subprocesses, real data
folders): `epmem init` makes your own owner and policy, `epmem policy use` switches, the active
policy persists, and a command with no data folder or no policy refuses in one line."""

from __future__ import annotations

import os
import pty
import select
import shutil
import subprocess
from pathlib import Path

from bot.config import EXAMPLE_POLICY
from tests.bot.test_cli import EPMEM, epmem, error_lines
from testkit.runtime import REPO

PAT = ("init", "--owner", "Pat Lee", "--telegram", "111", "--contact", "ana=Ana Ruiz,1,life")


def test_init_writes_a_commented_policy_makes_it_active_and_says_what_next(tmp_path: Path) -> None:
    data = tmp_path / "data"
    made = epmem(*PAT, data=data)
    assert made.returncode == 0, made.stderr
    assert made.stdout.splitlines() == [
        f"Wrote {data / 'policy.yaml'} for Pat Lee (1 contact); next: edit it, or import a chat export "
        "with: epmem ingest EXPORT"
    ]
    text = (data / "policy.yaml").read_text()
    assert text.startswith("# Your delegate's policy, written by `epmem init` for Pat Lee.")
    assert '"telegram:111"' in text and "ana: {name: Ana Ruiz, level: 1, domain: life}" in text
    assert epmem("policy", "check", str(data / "policy.yaml"), data=data).returncode == 0
    shown = epmem("policy", "show", data=data)
    assert shown.stdout.startswith(
        f"{data / 'policy.yaml'} (the data folder's active policy): owner Pat Lee, 1 contact"
    )
    # the new owner's contact is known to the delegate at once
    chat = epmem("chat", "--as", "ana", data=data, stdin="hi\n")
    assert chat.returncode == 0, chat.stderr


def test_init_refuses_another_owners_folder_unless_forced_and_asks_for_a_name(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert epmem("demo", data=data).returncode == 0
    refused = epmem(*PAT, data=data)
    [line] = error_lines(refused)
    assert refused.returncode == 1 and f"{data} belongs to Sam Rivera, not Pat Lee" in line and "--force" in line
    assert "Sam Rivera" in (data / "policy.yaml").read_text()
    assert epmem(*PAT, "--force", data=data).returncode == 0
    assert "Pat Lee" in (data / "policy.yaml").read_text()
    again = epmem(*PAT, data=data)
    assert "is already Pat Lee's policy: edit it" in error_lines(again)[0]
    unnamed = epmem("init", data=tmp_path / "other")
    assert unnamed.returncode == 2 and 'epmem init --owner "YOUR NAME"' in error_lines(unnamed)[0]
    bad = epmem("init", "--owner", "Pat", "--contact", "ana=Ana,7", data=tmp_path / "other")
    [line] = error_lines(bad)
    assert "the level must be 1 (closest) to 4 (anyone), not '7'" in line
    account = epmem("init", "--owner", "Pat", "--telegram", "@pat", data=tmp_path / "other")
    assert error_lines(account) == ["error: --telegram '@pat': your Telegram account looks like 123456789"]
    assert not (tmp_path / "other").exists()


def test_an_explicit_policy_stays_the_data_folders_policy(tmp_path: Path) -> None:
    """EPMEM_POLICY=mine.yaml for one run, then a run without it: still Pat's delegate (it used
    to be the example owner's, quietly, on the same data folder)."""
    made = epmem(*PAT, data=tmp_path / "scratch")
    assert made.returncode == 0
    mine = tmp_path / "mine.yaml"
    shutil.copy(tmp_path / "scratch" / "policy.yaml", mine)
    data = tmp_path / "data"
    first = epmem("chat", "--as", "ana", data=data, stdin="hi\n", env={"EPMEM_POLICY": str(mine)})
    assert first.returncode == 1 and "no data folder at" in error_lines(first)[0]  # chat makes no folder
    data.mkdir()
    first = epmem("chat", "--as", "ana", data=data, stdin="hi\n", env={"EPMEM_POLICY": str(mine)})
    assert first.returncode == 0, first.stderr
    later = epmem("chat", "--as", "ana", data=data, stdin="hi\n")
    assert later.returncode == 0 and "Pat Lee" in later.stdout, later.stdout + later.stderr
    assert "owner Pat Lee" in epmem("policy", "show", data=data).stdout
    demo = epmem("demo", data=data)
    assert demo.returncode == 1 and f"{data} belongs to Pat Lee" in error_lines(demo)[0]


def test_policy_use_switches_in_one_line_and_refuses_another_owner(tmp_path: Path) -> None:
    data = tmp_path / "data"
    used = epmem("policy", "use", str(EXAMPLE_POLICY), data=data)
    assert used.returncode == 0, used.stderr
    [line] = used.stdout.splitlines()
    assert line.startswith(f"Active policy of {data}: {data / 'policy.yaml'}, copied from {EXAMPLE_POLICY}")
    assert "owner Sam Rivera, 9 contacts" in line and "next: " in line
    mine = tmp_path / "mine.yaml"
    epmem(*PAT, data=tmp_path / "scratch")
    shutil.copy(tmp_path / "scratch" / "policy.yaml", mine)
    refused = epmem("policy", "use", str(mine), data=data)
    assert refused.returncode == 1 and f"{data} belongs to Sam Rivera, not Pat Lee" in error_lines(refused)[0]
    assert epmem("policy", "use", str(mine), "--force", data=data).returncode == 0
    assert "owner Pat Lee" in epmem("policy", "show", data=data).stdout
    broken = tmp_path / "broken.yaml"
    broken.write_text("owner: {name: Kai}\n")
    assert epmem("policy", "use", str(broken), "--force", data=data).returncode == 1
    assert "owner Pat Lee" in epmem("policy", "show", data=data).stdout


def test_no_data_folder_or_no_policy_is_one_line_with_the_fix(tmp_path: Path) -> None:
    missing = tmp_path / "nonexistent" / "deep" / "data"
    chat = epmem("chat", "--as", "jamie", data=missing, stdin="Is Sam around?\n")
    [line] = error_lines(chat)
    assert chat.returncode == 1 and chat.stdout == ""
    assert line == (
        f'error: no data folder at {missing}: run `epmem init --owner "YOUR NAME"` (your own delegate) or '
        "`epmem demo` (the example owner)"
    )
    assert not (tmp_path / "nonexistent").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    for args in (("ingest", str(tmp_path)), ("preview", "jamie", "hi"), ("chat", "--owner")):
        result = epmem(*args, data=empty)
        [line] = error_lines(result)
        assert result.returncode == 1 and f"no active policy in {empty}: run `epmem init" in line, args


def test_an_empty_memory_is_said_once_to_the_console_not_to_the_contact(tmp_path: Path) -> None:
    data = tmp_path / "data"
    epmem(*PAT, data=data)
    chat = epmem("chat", "--as", "ana", data=data, stdin="Is Pat around?\nWhere is Pat?\n")
    assert chat.returncode == 0
    assert chat.stderr.count("memory is empty") == 1 and "epmem ingest EXPORT" in chat.stderr
    assert "memory is empty" not in chat.stdout and len(chat.stdout.splitlines()) == 2


def test_init_on_a_terminal_asks_for_the_name_accounts_and_contacts(tmp_path: Path) -> None:
    """A real pseudo-terminal: typer's prompts, a contact typed wrong and asked again."""
    master, slave = pty.openpty()
    env = {**os.environ, "EPMEM_DATA_DIR": str(tmp_path / "data"), "EPMEM_LOG_LEVEL": "WARNING"}
    proc = subprocess.Popen([*EPMEM, "init"], stdin=slave, stdout=slave, stderr=slave, env=env, cwd=REPO)
    os.close(slave)
    os.write(master, b"Pat Lee\n111\n\nana=Ana Ruiz,9\nana=Ana Ruiz,1,life\n\n")
    seen = b""
    while select.select([master], [], [], 60)[0]:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert proc.wait(timeout=60) == 0, seen
    text = seen.decode()
    assert "Your name: " in text and "(Enter to skip)" in text and "the level must be 1 (closest) to 4" in text
    assert f"Wrote {tmp_path / 'data' / 'policy.yaml'} for Pat Lee (1 contact)" in text
    policy = (tmp_path / "data" / "policy.yaml").read_text()
    assert '"telegram:111"' in policy and "ana: {name: Ana Ruiz, level: 1, domain: life}" in policy
