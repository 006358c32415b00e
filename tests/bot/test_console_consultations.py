"""A consultation from question to answer on the console, as the README shows it (real
subprocesses on Pat Lee's data folder, made by `epmem init` and `epmem ingest` of a small
Telegram export): the owner's session says what waits, `/consults` shows the facts' words and
the typed answers with a short id, the answer prints no log line into the chat and leaves no
"undelivered" note, and the asker gets the follow-up when their next console session opens."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.bot.test_cli import epmem
from testkit.runtime import REPO

EXPORT = REPO / "tests" / "fixtures" / "first-hour"
QUESTION = "Is Pat changing jobs?"


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("pat") / "data"
    made = epmem(
        "init", "--owner", "Pat Lee", "--telegram", "111", "--contact", "ana=Ana Ruiz,1,life",
        "--contact", "ben=Ben Okafor,3,work", data=data,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    ingested = epmem("ingest", str(EXPORT), data=data)
    assert ingested.returncode == 0, ingested.stderr
    assert ingested.stdout.splitlines()[-1] == (
        "next: review what the delegate is unsure of with `epmem chat --owner` then /review; "
        "go live: set TELEGRAM_BOT_TOKEN, or SLACK_BOT_TOKEN with SLACK_SIGNING_SECRET or SLACK_APP_TOKEN, "
        "then epmem run"
    )
    return data


@pytest.fixture
def data(imported: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "data"
    shutil.copytree(imported, copy)
    return copy


def test_a_consultation_from_question_to_follow_up_on_the_console(data: Path) -> None:
    asked = epmem("chat", "--as", "ben", data=data, stdin=f"{QUESTION}\n")
    assert asked.returncode == 0 and "I'll let Pat Lee know you asked" in asked.stdout
    listed = epmem("chat", "--owner", data=data, stdin="/consults\n")
    lines = listed.stdout.splitlines()
    assert lines[0].startswith("1 consultation waits: /consults"), listed.stdout
    assert f"ben asked \u201c{QUESTION}\u201d" in listed.stdout
    assert "\u201cThey offered Pat the job!\u201d" in listed.stdout  # the fact's words, in the listing
    [short] = re.findall(r"answer: /consult ([0-9]+) tell \| like \| who \| private", listed.stdout)
    answered = epmem("chat", "--owner", data=data, stdin=f"/consult {short} tell\n/undelivered\n/consults\n")
    seen = answered.stdout + answered.stderr
    assert "ben gets the follow-up when they next open a console chat (epmem chat --as ben)." in answered.stdout
    assert "followup_undelivered" not in seen and "LookupError" not in seen and "warning" not in seen, seen
    assert "Nothing is waiting: every message was delivered." in answered.stdout
    assert "No consultations wait for you." in answered.stdout
    back = epmem("chat", "--as", "ben", data=data, stdin="thanks\n")
    assert back.stdout.splitlines()[0] == "[follow-up] Here's what I can share: They offered Pat the job!"
    assert back.stdout.splitlines()[1] == "You're welcome!"
    again = epmem("chat", "--as", "ben", data=data, stdin="thanks\n")
    assert "[follow-up]" not in again.stdout  # once


def test_the_consultation_note_is_not_kept_as_a_delivery_failure(data: Path) -> None:
    assert epmem("chat", "--as", "ben", data=data, stdin=f"{QUESTION}\n").returncode == 0
    kept = epmem("chat", "--owner", data=data, stdin="/undelivered\n")
    assert "Nothing is waiting: every message was delivered." in kept.stdout, kept.stdout
    assert "/resend" not in kept.stdout


def test_an_ambiguous_or_unknown_short_id_is_refused(data: Path) -> None:
    assert epmem("chat", "--as", "ben", data=data, stdin=f"{QUESTION}\n").returncode == 0
    tried = epmem("chat", "--owner", data=data, stdin="/consult 0000 tell\n/consult abc tell\n")
    assert "no consultation '0000' (see /consults)" in tried.stdout
    assert "no consultation 'abc' (see /consults)" in tried.stdout


def test_review_on_the_console_takes_short_fact_ids_and_says_no_tap(data: Path) -> None:
    shown = epmem("chat", "--owner", data=data, stdin="/review\n")
    assert shown.stdout.splitlines()[0].endswith("facts wait for review: /review"), shown.stdout
    [typed] = re.findall(
        r"Type /review (\S+) ok \| c:CATEGORY \| private \| who \| skip, or one of these:", shown.stdout
    )
    assert "tap" not in shown.stdout and re.fullmatch(r"[0-9a-f]{6}-f\d+", typed), shown.stdout
    assert f"type: /review {typed} private #0" in shown.stdout
    answered = epmem("chat", "--owner", data=data, stdin=f"/review {typed} private\n")
    assert "set by you" in answered.stdout and "error" not in answered.stdout + answered.stderr, answered.stdout


def test_epmem_run_starts_by_saying_what_waits_and_ends_with_what_next(data: Path) -> None:
    assert epmem("chat", "--as", "ben", data=data, stdin=f"{QUESTION}\n").returncode == 0
    ran = epmem("run", "--console", data=data, stdin="", env={"TELEGRAM_BOT_TOKEN": "", "SLACK_BOT_TOKEN": ""})
    assert ran.returncode == 0, ran.stderr
    assert "[to owner] 1 consultation waits: /consults; 2 facts wait for review: /review" in ran.stdout, ran.stdout
    last = ran.stderr.strip().splitlines()[-1]
    assert last.startswith("stopped; to go live: set TELEGRAM_BOT_TOKEN") and last.endswith(
        "then epmem run (`epmem doctor` checks the settings)"
    )
