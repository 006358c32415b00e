"""Issue 24: the language of a message, the rules composer's frame and the deflection in it,
the sanity rule for a model answering Chinese in another language, and how a Chinese question
is weighed (epmem/language/chinese.py). The models are not involved: scripts and words only."""

from __future__ import annotations

import math

import pytest

from epmem.language import CHINESE, choose, detect, frame_words, join_sentences, sentence
from epmem.language.chinese import SharedWords, chinese_kind, name_forms, terms
from epmem.memory.facts import Fact
from epmem.memory.recall import Recalled, RecalledEvent
from epmem.reply.projection import FactDecision, Projection
from epmem.reply.relevance import Relevance, question_kind
from epmem.reply.respond import ReplyContext, RulesResponder, deflection
from epmem.reply.sanity import check_reply


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("子涵最近怎么老不来实验室？", "zh"),
        ("你的offer签了吗", "zh"),  # mixed: the Chinese outnumbers the English
        ("NeurIPS的deadline是几号？", "zh"),
        ("Did you see 子涵's post about the lab?", "en"),
        ("How's Sam doing?", "en"),
        ("?", None),
        ("👍", None),
        ("", None),
        ("こんにちは、元気ですか", None),  # Japanese kana: not Chinese, not English
    ],
)
def test_the_language_of_a_message(text: str, lang: str | None) -> None:
    assert detect(text) == lang


def test_a_message_with_no_words_falls_back_to_the_contact_then_the_owner() -> None:
    assert choose("👍", "zh", "en") == "zh"
    assert choose("👍", None, "zh") == "zh"
    assert choose("👍", None, None) == "en"
    assert choose("How are you?", "zh", "zh") == "en"  # the message's own language wins


def test_chinese_sentences_end_once_and_run_together() -> None:
    assert sentence("子涵最近失眠，睡得不太好。", "zh") == "子涵最近失眠，睡得不太好。"
    assert sentence("子涵最近失眠", "zh") == "子涵最近失眠。"
    assert sentence("Sam is away", "zh") == "Sam is away."
    assert join_sentences(["甲。", "乙。", "Sam is away.", "丙。"]) == "甲。乙。Sam is away. 丙。"


async def test_the_rules_composer_speaks_the_question_s_language() -> None:
    facts = ("子涵最近在宿舍赶论文，所以很少来实验室。", "子涵最近失眠，睡得不太好")
    zh = await RulesResponder().reply(
        ReplyContext("王子涵", "", "李卫东", "导师", "子涵最近怎么了？", facts, language="zh")
    )
    assert zh == "据我所知，子涵最近在宿舍赶论文，所以很少来实验室。子涵最近失眠，睡得不太好。"
    assert "。." not in zh and frame_words(zh) == []
    en = await RulesResponder().reply(ReplyContext("Sam", "", "Tom", "", "News?", ("Sam is away",)))
    assert en == "Here's what I can share: Sam is away."
    empty = await RulesResponder().reply(ReplyContext("王子涵", "", "x", "", "?", (), language="zh"))
    assert empty == deflection("王子涵", "zh") == "不好意思，这个我没法回答。我会转告王子涵你问过。"
    assert frame_words(deflection("Sam")) != []


def test_a_model_answering_a_chinese_question_in_english_is_not_a_reply() -> None:
    q = "子涵最近怎么老不来实验室？"
    assert check_reply("Zihan has been writing his paper in the dorm lately.", question=q) == "language"
    assert check_reply("子涵最近在宿舍赶论文，所以很少来实验室。", question=q) is None
    assert check_reply("他NeurIPS的deadline是5月15号。", question=q) is None  # English words in Chinese
    assert (
        check_reply("子涵最近在宿舍赶论文，所以很少来实验室。", question="Why is Zihan never in the lab?") == "language"
    )
    assert check_reply("Zihan is writing in the dorm, 宿舍.", question="Why is Zihan never in the lab?") is None


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("哥们最近咋样？好久没约了", "open"),
        ("强哥最近点啊？", "open"),
        ("阿俊高考准备得怎么样？", "state"),
        ("发布会定在哪天？", "when"),
        ("他去哪里出差了？", "where"),
        ("谁负责这个项目？", "who"),
        ("子涵是不是想退学？", "yesno"),
        ("年终奖发了吗", "yesno"),
        ("后厨上个月为什么停了两天", "what"),
    ],
)
def test_the_kind_of_a_chinese_question(question: str, kind: str) -> None:
    assert chinese_kind(question) == kind == question_kind(question)


def test_names_and_function_words_are_not_shared_words() -> None:
    ignore = name_forms("王子涵")
    assert "子涵" in ignore and "老王" in ignore
    assert terms("子涵最近怎么老不来实验室？", ignore) == {"来实", "实验", "验室"}
    # a question with no informative words vetoes nothing
    assert list(SharedWords(ignore).score("子涵最近咋样？", ["甲乙丙", "丁戊己"])) == [-1.0, -1.0]


def _storyline(*rows: tuple[str, str, str, str | None]) -> tuple[list[RecalledEvent], Projection]:
    """(fact id, event id, text, the truth it covers) for facts the audience may all know,
    recalled alike (an English-only embedder scores Chinese facts alike)."""
    facts = [
        Fact(
            id=f,
            text=t,
            event_id=e,
            category="daily_life",
            level=3,
            state="owner-set",
            version="cover" if c else "truth",
            covers=c,
        )
        for f, e, t, c in rows
    ]
    events = [
        RecalledEvent(e, 1.0, tuple(Recalled(f, 1.0) for f in facts if f.event_id == e))
        for e in dict.fromkeys(f.event_id for f in facts)
    ]
    return events, Projection(tuple(FactDecision(f, 1.0, True, (), used=True) for f in facts))


def test_a_chinese_question_gets_the_facts_that_share_its_words() -> None:
    events, proj = _storyline(
        ("f1", "e1", "子涵最近在学吉他，每周六下午上课。", None),
        ("f2", "e2", "子涵最近在宿舍赶论文，所以很少来实验室。", None),
        ("f3", "e3", "子涵最近失眠，睡得不太好。", None),
    )
    choice = Relevance().choose("子涵最近怎么老不来实验室？组会也请假", events, proj, "王子涵")
    assert choice.chosen == ("f2",), choice
    assert "does not answer" in choice.left_out["f1"] and "f3" in choice.left_out


def test_a_truth_is_judged_with_its_cover_s_words_in_chinese() -> None:
    """The asker may know the truth; the question is in the words of the story told to others."""
    events, proj = _storyline(
        ("f1", "e1", "子涵在考虑申请转硕，六月后去公司做算法。", None), ("f9", "e9", "子涵最近在学吉他。", None)
    )
    cover = Fact(
        id="f2",
        text="子涵最近在宿舍赶论文，所以很少来实验室。",
        event_id="e1",
        category="daily_life",
        level=3,
        state="owner-set",
        version="cover",
        covers="f1",
    )
    events[0] = RecalledEvent("e1", 1.0, (*events[0].facts, Recalled(cover, 1.0)))
    choice = Relevance().choose("子涵怎么老不来实验室？", events, proj, "王子涵")
    assert choice.chosen == ("f1",), choice


def test_a_word_held_by_a_cover_and_its_truth_counts_once() -> None:
    """A word weighs 1 / the number of texts holding it; a cover and its truth are one event
    told two ways, so a word both hold is not weighed down for being in both (the cover's
    "重庆" is the one word the question shares with anything the asker may know)."""
    events, proj = _storyline(
        ("f2", "e1", "罗婷在跟重庆一家调料厂谈代工合作，还没定。", "f1"), ("f9", "e9", "罗婷腰椎间盘突出。", None)
    )
    truth = Fact(
        id="f1",
        text="罗婷在和重庆渝香集团谈，准备把厂里百分之四十九的股份卖给他们。",
        event_id="e1",
        category="business_deals",
        level=1,
        state="owner-set",
    )
    events[0] = RecalledEvent("e1", 1.0, (*events[0].facts, Recalled(truth, 1.0)))
    choice = Relevance().choose("二妹，你最近老往重庆跑，到底在忙啥子生意哦？", events, proj, "罗婷")
    assert choice.chosen == ("f2",), choice
    assert "does not answer" in choice.left_out["f9"]
    # the words are counted per event: the same two texts as two events halve "重庆"
    apart = SharedWords().score("老往重庆跑", ["在跟重庆谈合作", "在和重庆谈股份"])
    together = SharedWords().score("老往重庆跑", ["在跟重庆谈合作", "在和重庆谈股份"], events=["e1", "e1"])
    assert list(apart) == [-6.0, -6.0] and list(together) == [2.0, 2.0]


def test_an_event_sharing_a_word_less_than_the_best_is_left_out() -> None:
    """Chinese ``logit_margin``: the lab's server password answers "was the lab server's
    password changed?"; the lab meeting shares only "实验室" and is not said beside it."""
    events, proj = _storyline(
        ("f1", "e1", "实验室服务器的密码上周改了。", None), ("f2", "e2", "子涵周五去实验室开组会。", None)
    )
    question = "实验室的服务器密码改了吗"
    assert Relevance().choose(question, events, proj, "王子涵").chosen == ("f1",)
    wide = Relevance(languages={"zh": CHINESE.relevance.replace(logit_margin=math.inf)})
    assert set(wide.choose(question, events, proj, "王子涵").chosen) == {"f1", "f2"}
