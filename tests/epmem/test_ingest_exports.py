"""Real-shaped exports in, sessions out: Telegram Desktop and Slack, through the same path the
CLI uses (read_export, then the real Edge store). Nothing here is mocked."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from epmem.memory.conversations import Conversations
from epmem.embedding.minilm import default_embedder
from epmem.ingest import IngestError, detect_format, read_export
from epmem.ingest.apply import write_sessions
from epmem.policy.model import Policy, load_policy
from epmem.memory.sessions import Session
from epmem.store.edge import EdgeStore

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ingest"


@pytest.fixture(scope="module")
def policy() -> Policy:
    return load_policy(FIXTURES / "policy.yaml")


def _by_counterpart(sessions: list[Session]) -> dict[str, Session]:
    return {s.participants[1]: s for s in sessions}


def test_telegram_full_export(policy: Policy) -> None:
    sessions = read_export(FIXTURES / "telegram", policy)
    direct = [s for s in sessions if s.chat_kind == "direct"]
    groups = [s for s in sessions if s.chat_kind == "group"]
    assert len(direct) == 1 and direct[0].participants == ["owner", "alex"]
    texts = [t.text for t in direct[0].turns]
    # edited message: final text, marked; sticker and file kept as bracketed turns; service dropped
    assert texts == [
        "Did the clinic call you back about the knee scan?",
        "Yes, the MRI is booked for Thursday at nine.",
        "[sticker 👍]",
        "[file: referral_letter.pdf] Here's the referral letter.",
    ]
    assert direct[0].turns[1].edited and direct[0].turns[1].reply_to == "101"
    # the group is split into two-party sub-sessions, group and members kept
    split = _by_counterpart(groups)
    assert set(split) == {"alex", "priya", "unknown:telegram:4000004", "unknown:telegram:5000005"}
    assert all(s.origin_id == groups[0].origin_id and s.chat_title == "Climbing crew" for s in groups)
    assert set(groups[0].members) == {"owner", "alex", "priya", "unknown:telegram:4000004", "unknown:telegram:5000005"}
    # reply link: the owner's answer to Priya goes to Priya's sub-session
    assert [t.speaker for t in split["priya"].turns] == ["priya", "owner"]
    # who the export shows read the owner's answer (heard it from you): nobody besides Priya;
    # Kim wrote only before it, Alex and the deleted account only after it, and nobody replied
    assert split["priya"].turns[1].seen_by == []
    # mention: the owner's "@kimpark ..." goes to Kim (unknown person, kept, not dropped)
    assert "send me a photo" in split["unknown:telegram:4000004"].turns[-1].text
    # a written first name ("Nice route Alex") goes to Alex, not to whoever spoke last
    assert split["alex"].turns[-1].text.startswith("Nice route Alex")
    # a deleted account is an unknown person too
    assert split["unknown:telegram:5000005"].turns[0].text == "anyone selling a chalk bag?"
    assert all(s.summary for s in sessions)


def test_slack_export_folder_and_zip_agree(policy: Policy, tmp_path: Path) -> None:
    folder = read_export(FIXTURES / "slack", policy)
    archive = tmp_path / "Workspace Slack export.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for p in (FIXTURES / "slack").rglob("*.json"):
            z.write(p, f"export/{p.relative_to(FIXTURES / 'slack').as_posix()}")
    assert detect_format(archive) == "slack"
    zipped = read_export(archive, policy)
    assert [(s.id, [t.text for t in s.turns]) for s in folder] == [(s.id, [t.text for t in s.turns]) for s in zipped]


def test_slack_export_content(policy: Policy) -> None:
    sessions = read_export(FIXTURES / "slack", policy)
    all_text = " ".join(t.text for s in sessions for t in s.turns)
    # joins, bot posts and the tombstone of a deleted message are not conversation
    assert "has joined" not in all_text and "Deploy of" not in all_text and "was deleted" not in all_text
    dm = next(s for s in sessions if s.chat_kind == "direct")
    assert dm.participants == ["owner", "tom"]
    general = [s for s in sessions if s.chat_kind == "group"]
    priya = next(s for s in general if "priya" in s.participants)  # mapped by alias "priya.n"
    assert [t.speaker for t in priya.turns] == ["priya", "owner"]
    assert priya.turns[1].edited and priya.turns[1].reply_to == priya.turns[0].msg_id  # thread reply
    assert "@Sam Rivera" in priya.turns[0].text  # <@U...> made readable
    kim = next(s for s in general if "unknown:slack:T0EPMEM01/U0KIM0004" in s.participants)
    assert kim.turns[-1].text.startswith("[file: roadmap-q2.pdf]")
    assert "roadmap deck" in kim.turns[0].text  # <url|label> made readable


def test_a_slack_channel_names_who_was_in_it(policy: Policy, tmp_path: Path) -> None:
    """A channel's members, as the export lists them, are its roster (who could read a remark
    to everyone): less the owner, and less anyone whose join notice comes later in the
    conversation. A direct chat has none, and so has an export that lists no members."""
    folder = tmp_path / "slack"
    shutil.copytree(FIXTURES / "slack", folder)
    sessions = read_export(folder, policy)
    general = [s for s in sessions if s.chat_kind == "group"]
    kim = "unknown:slack:T0EPMEM01/U0KIM0004"
    assert general and all(s.roster == sorted(["priya", "tom", kim]) for s in general)
    assert all(s.roster == [] for s in sessions if s.chat_kind == "direct")
    first = min((folder / "general").glob("*.json"))
    day = json.loads(first.read_text())
    join = day.pop(0)
    join["ts"] = "1772528600.000450"  # Kim joins after Priya's release note, before her own question
    day.insert(3, join)
    first.write_text(json.dumps(day))
    later = {s.start: s.roster for s in read_export(folder, policy) if s.chat_kind == "group"}
    assert sorted(later.items())[0][1] == ["priya", "tom"]
    assert sorted(later.items())[-1][1] == sorted(["priya", "tom", kim])  # the next day she was there
    channels = json.loads((folder / "channels.json").read_text())
    (folder / "channels.json").write_text(
        json.dumps([{k: v for k, v in c.items() if k != "members"} for c in channels])
    )
    assert all(s.roster == [] for s in read_export(folder, policy))


@pytest.mark.parametrize(
    ("folder", "where"),
    [
        ("telegram_malformed", "chats.list[1].messages[2]"),
        ("slack_malformed", "general/2026-03-04.json: line 6"),
    ],
)
async def test_malformed_export_names_the_place_and_writes_nothing(
    policy: Policy, tmp_path: Path, folder: str, where: str
) -> None:
    store = EdgeStore(tmp_path / "qdrant", "owner")
    try:
        memory = await Conversations(store, default_embedder()).open()
        good = read_export(FIXTURES / folder.removesuffix("_malformed"), policy)
        await write_sessions(memory, good)
        before = await memory.count()
        with pytest.raises(IngestError) as caught:
            await write_sessions(memory, read_export(FIXTURES / folder, policy))
        assert where in str(caught.value) and folder in str(caught.value)
        assert await memory.count() == before
    finally:
        await store.close()


async def test_reimport_adds_nothing_and_survives_restart(policy: Policy, tmp_path: Path) -> None:
    sessions = read_export(FIXTURES / "telegram", policy) + read_export(FIXTURES / "slack", policy)
    store = EdgeStore(tmp_path / "qdrant", "owner")
    try:
        memory = await Conversations(store, default_embedder()).open()
        first = await write_sessions(memory, sessions)
        counts = await memory.count()
        again = await write_sessions(
            memory, read_export(FIXTURES / "telegram", policy) + read_export(FIXTURES / "slack", policy)
        )
        assert first.new_sessions == len(sessions) and again.new_sessions == 0
        assert await memory.count() == counts == (len(sessions), sum(len(s.turns) for s in sessions))
    finally:
        await store.close()
    reopened = EdgeStore(tmp_path / "qdrant", "owner")
    try:
        memory = await Conversations(reopened, default_embedder()).open()
        assert await memory.count() == counts
    finally:
        await reopened.close()


def test_full_export_names_its_owner(tmp_path: Path) -> None:
    export = tmp_path / "result.json"
    shutil.copy(FIXTURES / "telegram" / "result.json", export)
    text = export.read_text().replace('"user_id": 1000001', '"user_id": 999').replace("user1000001", "user999")
    text = text.replace('"from": "Sam Rivera"', '"from": "S. R."')
    export.write_text(text)
    stranger_policy = Policy.model_validate(
        {
            "owner": {"name": "Nobody Here"},
            "contacts": {},
            "categories": {"daily_life": {"level": 4}},
            "default_category": "daily_life",
        }
    )
    sessions = read_export(export, stranger_policy)  # personal_information names the owner
    assert any(t.speaker == "owner" for s in sessions for t in s.turns)


def test_telegram_single_chat_export(tmp_path: Path) -> None:
    """One chat exported on its own: no personal_information, the peer's id is the chat id."""
    import json

    full = json.loads((FIXTURES / "telegram" / "result.json").read_text())
    (tmp_path / "result.json").write_text(json.dumps(full["chats"]["list"][0]))
    anonymous = Policy.model_validate(
        {
            "owner": {"name": "Someone Else"},
            "contacts": {},
            "categories": {"daily_life": {"level": 4}},
            "default_category": "daily_life",
        }
    )
    [session] = read_export(tmp_path, anonymous, "telegram")
    assert [t.speaker for t in session.turns] == [
        "unknown:telegram:2000002",
        "owner",
        "unknown:telegram:2000002",
        "owner",
    ]
