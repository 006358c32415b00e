"""Who the owner is on import: account ids, never display names (issue 20, impostor.json).

In a Telegram group export another account named "Sam Rivera" replied "Tom and Lena can know
too." to the owner's knee operation: it was taken for the owner, the fact was whitelisted and a
level-4 recruiter was told; its "my salary is 140k now" became the owner's fact. Every parser is
checked the same way, with the real export reader and the real rules extractor.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from epmem.embedding.minilm import default_embedder
from epmem.ingest import IngestError, open_export, read_export
from epmem.ingest.annotate import CategoryClassifier
from epmem.ingest.extract_rules import RulesExtractor
from epmem.policy.model import OWNER_ID, Policy, load_policy

from bot.config import EXAMPLE_POLICY

REPO = Path(__file__).resolve().parents[2]
REDTEAM = REPO / "tests" / "fixtures" / "redteam"


@pytest.fixture(scope="module")
def policy() -> Policy:
    return load_policy(EXAMPLE_POLICY)


@pytest.fixture(scope="module")
def extractor(policy: Policy) -> RulesExtractor:
    return RulesExtractor(policy, CategoryClassifier(policy, default_embedder()))


def test_telegram_impostor_is_not_the_owner(policy: Policy, extractor: RulesExtractor) -> None:
    sessions = read_export(REDTEAM / "impostor.json", policy)
    turns = {t.msg_id: t for s in sessions for t in s.turns}
    assert turns["601"].speaker == OWNER_ID  # from_id user1000001: personal_information's account
    assert turns["603"].speaker == turns["605"].speaker == "unknown:telegram:2000666"
    assert turns["603"].speaker_name == "Sam Rivera"
    drafts = [d for s in sessions for d in extractor.drafts(s)]
    knee = next(d for d in drafts if "knee operation" in d.text)
    assert not {"tom", "lena"} & {*knee.whitelist, *knee.proposed_whitelist}, knee
    assert knee.level == 0
    salary = next(d for d in drafts if "140k" in d.text)
    assert salary.state == "pending" and salary.level == 0 and salary.whitelist == []
    assert salary.text.startswith("Sam Rivera (telegram:2000666)"), salary.text  # never reads as the owner's


def test_the_export_says_whom_it_did_not_take_for_the_owner(policy: Policy) -> None:
    summary = open_export(REDTEAM / "impostor.json", policy).validate()
    assert summary.lookalikes == {"telegram:2000666": "Sam Rivera"}


def test_a_telegram_group_export_without_the_owners_account_names_the_lookalikes(
    policy: Policy, tmp_path: Path
) -> None:
    data = json.loads((REDTEAM / "impostor.json").read_text())
    chat = data["chats"]["list"][0]  # exported alone: no personal_information
    (tmp_path / "group.json").write_text(json.dumps(chat))
    with pytest.raises(IngestError) as caught:
        open_export(tmp_path / "group.json", policy).validate()
    message = str(caught.value)
    assert "group.json" in message and "no message is from the owner" in message
    assert "telegram:1000001" in message and "telegram:2000666" in message  # both named like the owner
    # the owner says which account is theirs: only that one is
    sessions = read_export(tmp_path / "group.json", policy, owner_identities=["telegram:1000001"])
    speakers = {t.msg_id: t.speaker for s in sessions for t in s.turns}
    assert speakers["601"] == OWNER_ID and speakers["603"] == "unknown:telegram:2000666"


def test_a_name_does_not_take_a_contacts_place_when_their_account_is_known(tmp_path: Path) -> None:
    policy = Policy.model_validate(
        {
            "owner": {"name": "Sam Rivera", "identities": ["telegram:1000001"]},
            "contacts": {
                "noor": {
                    "name": "Noor Haddad",
                    "level": 3,
                    "domain": "life",
                    "relationship": "friend",
                    "identities": ["telegram:2000003"],
                }
            },
            "categories": {"daily_life": {"level": 4}},
            "default_category": "daily_life",
        }
    )
    data = json.loads((REDTEAM / "impostor.json").read_text())
    chat = data["chats"]["list"][0]
    chat["messages"][3]["from_id"] = "user2000777"  # "Noor Haddad" from another account
    (tmp_path / "result.json").write_text(json.dumps(chat))
    speakers = {t.msg_id: t.speaker for s in read_export(tmp_path / "result.json", policy) for t in s.turns}
    assert speakers["602"] == "noor" and speakers["604"] == "unknown:telegram:2000777"


def test_slack_owner_comes_from_the_user_id(policy: Policy, tmp_path: Path) -> None:
    """The red team's Slack export: U01SAM is named "Sam Rivera", but the example policy holds no
    Slack account for the owner. A name never makes the owner: the import refuses, naming the
    account, and takes it once the owner says it is theirs."""
    with pytest.raises(IngestError) as caught:
        open_export(REDTEAM / "slack", policy).validate()
    assert "slack:T0ACME/U01SAM" in str(caught.value)
    sessions = read_export(REDTEAM / "slack", policy, owner_identities=["slack:T0ACME/U01SAM"])
    assert any(t.speaker == OWNER_ID for s in sessions for t in s.turns)
    # an impostor account with the owner's name in users.json is someone else
    export = tmp_path / "slack"
    shutil.copytree(REDTEAM / "slack", export)
    users = json.loads((export / "users.json").read_text())
    users[3]["real_name"] = users[3]["profile"]["real_name"] = "Sam Rivera"
    (export / "users.json").write_text(json.dumps(users))
    sessions = read_export(export, policy, owner_identities=["slack:T0ACME/U01SAM"])
    eve = [t for s in sessions for t in s.turns if "Priya can know" in t.text]
    assert eve and all(t.speaker == "unknown:slack:T0ACME/U04EVE" for t in eve)


def test_jsonl_owner_is_the_literal_owner_or_an_identity_never_a_name(policy: Policy, tmp_path: Path) -> None:
    lines = [
        {
            "chat": "g",
            "id": "1",
            "sender": "owner",
            "text": "I'm having a second knee operation in March.",
            "chat_kind": "group",
        },
        {
            "chat": "g",
            "id": "2",
            "sender": "Sam Rivera",
            "text": "Tom and Lena can know too.",
            "reply_to": "1",
            "chat_kind": "group",
        },
        {
            "chat": "g",
            "id": "3",
            "sender": "telegram:666",
            "sender_name": "Sam Rivera",
            "text": "my salary is 140k",
            "chat_kind": "group",
        },
        {"chat": "g", "id": "4", "sender": "console:owner", "text": "See you all on Wednesday.", "chat_kind": "group"},
    ]
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines))
    speakers = {t.msg_id: t.speaker for s in read_export(path, policy) for t in s.turns}
    assert speakers == {"1": OWNER_ID, "2": "unknown:name:Sam Rivera", "3": "unknown:telegram:666", "4": OWNER_ID}


def test_an_owner_identity_must_be_an_identity(policy: Policy) -> None:
    with pytest.raises(IngestError, match="not an identity"):
        open_export(REDTEAM / "slack", policy, owner_identities=["Sam Rivera"])
