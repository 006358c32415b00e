"""Issue 24 through the agent (real SQLite, real Qdrant Edge, the real embedder): a question in
Chinese is answered in Chinese, with one Chinese full stop per fact and no English frame; its
deflection is byte for byte the same whether a secret exists or not; the delegate's notes to a
contact (a sticker, a message too long) are in the contact's language (the message's, else the
policy's ``contacts.ID.language``)."""

from __future__ import annotations

from pathlib import Path

from bot.config import Settings
from bot.runtime import Runtime
from connectors.base import Inbound
from epmem.language import frame_words
from epmem.memory import Fact
from epmem.policy.model import Policy
from testkit.house import shared_embedder

POLICY = {
    "owner": {"name": "黄志强"},
    "contacts": {
        "azhen": {
            "name": "阿珍",
            "relationship": "老婆",
            "level": 1,
            "domain": "life",
            "identities": ["console:azhen"],
            "language": "zh",
        },
        "chenbo": {
            "name": "陈伯",
            "relationship": "街坊",
            "level": 3,
            "domain": "life",
            "identities": ["console:chenbo"],
        },
    },
    "categories": {
        "business_plans": {"level": 1, "domain": "work", "keywords": ["结业", "新店"]},
        "daily_life": {"level": 4, "keywords": ["散步"]},
    },
    "default_category": "daily_life",
}
WALK = Fact(
    id="f1", text="强哥每天早上去荔湾湖公园散步一个钟", event_id="e1", category="daily_life", level=4, state="owner-set"
)
#: the secret the question is about: whitelisted to azhen only.
MOVING = Fact(
    id="f2",
    text="强记老店六月底结业，准备搬去天河重新开新店。",
    event_id="e2",
    category="business_plans",
    level=1,
    domain="work",
    whitelist=["azhen"],
    state="owner-set",
)
QUESTION = "听说强记六月底要结业？新店开在哪里？"


async def runtime(tmp: Path, facts: list[Fact]) -> Runtime:
    rt = await Runtime.open(Settings(data_dir=tmp), policy=Policy.model_validate(POLICY), embedder=shared_embedder())
    await rt.memory.replace_all(facts)
    return rt


def ask(who: str, text: str, non_text: str | None = None) -> Inbound:
    return Inbound(
        platform="console",
        chat_id=f"c-{who}",
        chat_kind="direct",
        sender=f"console:{who}",
        text=text,
        audience=(f"console:{who}",),
        non_text=non_text,
    )  # type: ignore[arg-type]


async def test_a_chinese_deflection_reads_the_same_whether_the_secret_exists(tmp_path: Path) -> None:
    with_secret = await runtime(tmp_path / "a", [WALK, MOVING])
    without = await runtime(tmp_path / "b", [WALK])
    try:
        told = (await with_secret.agent.handle(ask("azhen", QUESTION))).text or ""
        assert told.startswith("据我所知，强记老店六月底结业") and frame_words(told) == [], told
        replies = [
            (await rt.agent.handle(ask(who, QUESTION))).text
            for rt in (with_secret, without)
            for who in ("chenbo", "stranger")
        ]
        assert set(replies) == {"不好意思，这个我没法回答。我会转告黄志强你问过。"}, replies
        walk = (await without.agent.handle(ask("chenbo", "强哥每天早上去哪里散步？"))).text
        assert walk == "据我所知，强哥每天早上去荔湾湖公园散步一个钟。", walk  # one full stop, added
    finally:
        await with_secret.close()
        await without.close()


async def test_notes_to_a_contact_are_in_their_language(tmp_path: Path) -> None:
    rt = await runtime(tmp_path, [WALK])
    try:
        sticker = await rt.agent.handle(ask("azhen", "", non_text="sticker"))
        assert sticker.text == "抱歉，我只能看文字消息。"  # no words: the policy's language for azhen
        assert (
            await rt.agent.handle(ask("chenbo", "", non_text="sticker"))
        ).text == "I can only read text messages, sorry."
        assert (
            await rt.agent.handle(ask("chenbo", "强" * 5000))
        ).text == "这条消息太长了，我看不过来。能说得简短一点吗？"
        # the message's own language wins over the contact's (the English models do not match an
        # English question with a Chinese fact: the deflection, in English)
        english = (await rt.agent.handle(ask("azhen", "Does he have any plans for his shop?"))).text
        assert english == "Sorry, I can't help with that. I'll let 黄志强 know you asked.", english
    finally:
        await rt.close()
