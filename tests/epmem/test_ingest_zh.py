"""Chinese chats through the real rules extractor (epmem/ingest/zh.py and its hooks): sentences
and clauses, the speaker's 我 as their name, people by their Chinese names and forms of address,
secrecy / narrowing / widening / cover cues in natural phrasings, Chinese category keywords,
relative dates against the session time, mixed Chinese-English chat; and the retrieval parts
that read Chinese (CJK bigrams in the sparse vectors, the bilingual embedder's halves).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from epmem.embedding.bilingual import BilingualEmbedder
from epmem.embedding.sparse import Bm25Encoder, cjk_terms
from epmem.ingest.annotate import CategoryClassifier, ContactNames, classify
from epmem.ingest.extract import Draft
from epmem.ingest.extract_rules import RulesExtractor
from epmem.ingest.statements import asks, chat_sentences, worth
from epmem.memory.sessions import Session
from epmem.policy.model import Policy, parse_policy
from epmem.textnorm import normalise, split_sentences
from epmem.timeparse import resolve_dates_zh
from testkit.sessions import session

CST = timezone(timedelta(hours=8))


@pytest.fixture(scope="module")
def policy() -> Policy:
    return parse_policy(
        {
            "owner": {"name": "王子涵"},
            "contacts": {
                "xiaoyu": {"name": "林小雨", "relationship": "女朋友", "level": 1, "domain": "life"},
                "laowang": {"name": "王建国", "relationship": "同事", "level": 3, "domain": "work"},
                "daoshi": {
                    "name": "李卫东",
                    "relationship": "博士导师",
                    "level": 2,
                    "domain": "work",
                    "aliases": ["李老师"],
                },
                "mama": {"name": "妈妈", "relationship": "母亲", "level": 2, "domain": "life"},
                "baba": {"name": "爸爸", "relationship": "父亲", "level": 2, "domain": "life"},
                "zhou": {"name": "周晓", "relationship": "同门师妹", "level": 3, "domain": "work"},
            },
            "groups": {"family": ["mama", "baba"]},
            "categories": {
                "career_plans": {"level": 2, "domain": "life", "keywords": ["转硕", "找工作", "offer", "面试"]},
                "health": {"level": 1, "domain": "life", "keywords": ["抑郁", "失眠", "医院"]},
                "daily_life": {"level": 4, "keywords": ["吉他", "羽毛球"]},
            },
            "default_category": "daily_life",
        },
        "test",
    )


@pytest.fixture(scope="module")
def extractor(policy: Policy) -> RulesExtractor:
    return RulesExtractor(policy, CategoryClassifier(policy))


def truths(drafts: list[Draft]) -> list[Draft]:
    return [d for d in drafts if d.version == "truth"]


def one(extractor: RulesExtractor, text: str, other: str = "xiaoyu", speaker: str = "owner") -> Draft:
    drafts = truths(extractor.drafts(session([(speaker, text), (other, "嗯嗯")], participants=["owner", other])))
    assert len(drafts) == 1, [d.text for d in drafts]
    return drafts[0]


# --------------------------------------------------------------------------- sentences and clauses


def test_sentences_end_at_chinese_punctuation_without_a_space() -> None:
    text = normalise("先别，他们会担心死的。要是有人问，就说我最近失眠！真的吗？好的；明天见…再说吧\n第二行")
    assert split_sentences(text) == [
        "先别,他们会担心死的。",
        "要是有人问,就说我最近失眠!",
        "真的吗?",
        "好的;",
        "明天见...",
        "再说吧",
        "第二行",
    ]


def test_a_cue_clause_is_cut_from_its_statement_at_the_comma() -> None:
    pieces = chat_sentences(normalise("我拿到offer了，先别说出去，下个月入职"), lambda x: "说出去" in x)
    assert pieces == ["我拿到offer了", "先别说出去", "下个月入职"]


@pytest.mark.parametrize(
    ("text", "is_worth", "is_question"),
    [
        ("我在考虑申请转硕", True, False),
        ("你最近咋样", False, True),
        ("子涵今天来实验室吗", False, True),
        ("哈哈哈", False, False),
        ("谢谢", False, False),
        ("好的", False, False),
        ("医生说是中度抑郁", True, False),
        ("HR说offer下周发", True, False),
        ("黄生早晨!", False, False),
        ("记得派喜糖", False, False),
    ],
)
def test_what_a_chinese_statement_is(text: str, is_worth: bool, is_question: bool) -> None:
    assert worth(text, set()) is is_worth
    assert asks(text) is is_question


# --------------------------------------------------------------------------- the speaker's 我


def test_the_owners_first_person_is_the_owners_name(extractor: RulesExtractor) -> None:
    fact = one(extractor, "好，我在考虑申请转硕，我们组里还没人知道")
    assert fact.text.startswith("王子涵在考虑申请转硕") and "我" not in fact.text
    assert fact.text.endswith("。") and not fact.text.endswith("。.")


def test_someone_elses_first_person_is_their_name_and_you_is_the_owner(extractor: RulesExtractor) -> None:
    fact = one(extractor, "我下周要去医院复查，你别担心", speaker="xiaoyu", other="xiaoyu")
    assert "林小雨下周" in fact.text and "王子涵别担心" in fact.text


def test_a_name_called_out_opens_no_statement(extractor: RulesExtractor) -> None:
    fact = one(extractor, "李老师，最近在宿舍赶论文，效率高一点", other="daoshi")
    assert fact.text.startswith("最近在宿舍赶论文")


# --------------------------------------------------------------------------- people


def test_chinese_names_forms_of_address_and_kin_words(policy: Policy) -> None:
    names = ContactNames(policy)
    assert names.find("别告诉老王") == ["laowang"]
    assert names.find("王哥那边先别说") == ["laowang"]
    assert names.find("跟小雨说了") == ["xiaoyu"]
    assert names.find("千万别让李老师知道") == ["daoshi"]
    assert set(names.find("我爸妈也不知道")) == {"mama", "baba"}
    assert names.find("别跟laowang说") == ["laowang"]  # an English name inside Chinese
    assert names.find("我妈知道") == ["mama"]
    assert names.find("今天下雨") == []


# --------------------------------------------------------------------------- cues


@pytest.mark.parametrize(
    "text",
    [
        "这事你知我知，我在考虑申请转硕",
        "我在考虑申请转硕，保密哈",
        "我在考虑申请转硕，先别说出去",
        "我在考虑申请转硕，别跟任何人说",
        "我在考虑申请转硕，还没跟公司说",
        "我在考虑申请转硕，不想让别人知道",
        "我在考虑申请转硕，等六月再公开",
        "我在考虑申请转硕🤫",
        "我在考虑申请转硕，别在群里说",
        "我喺度考虑转硕，唔好同人讲",
    ],
)
def test_secrecy_cues_close_the_fact(extractor: RulesExtractor, text: str) -> None:
    fact = one(extractor, text)
    assert "转硕" in fact.text and fact.level == 0, fact
    assert set(fact.whitelist) <= {"xiaoyu"}
    assert not any(w in fact.text for w in ("保密", "说出去", "知道", "公开", "你知我知"))


def test_someone_else_not_wanting_others_to_know_is_a_secret(extractor: RulesExtractor) -> None:
    fact = one(extractor, "周晓在谈恋爱，她不想让别人知道", speaker="xiaoyu", other="xiaoyu")
    assert "谈恋爱" in fact.text and fact.level == 0 and "cue:secret:不想让别人知道" in fact.evidence


@pytest.mark.parametrize(
    ("text", "who"),
    [
        ("我在考虑申请转硕，别告诉老王", ["laowang"]),
        ("我在考虑申请转硕，千万别让李老师知道哈", ["daoshi"]),
        ("我在考虑申请转硕，我爸妈也不知道", ["mama", "baba"]),
        ("我在考虑申请转硕，还没跟李老师说", ["daoshi"]),
        ("我在考虑申请转硕，尤其是周晓", ["zhou"]),
    ],
)
def test_narrowing_cues_blacklist_the_people_named(extractor: RulesExtractor, text: str, who: list[str]) -> None:
    fact = one(extractor, text)
    assert "转硕" in fact.text and set(who) <= set(fact.blacklist), fact


def test_the_owners_widening_words_open_and_nobody_elses(extractor: RulesExtractor) -> None:
    fact = one(extractor, "我在考虑申请转硕，老王可以知道")
    assert "cue:also:laowang" in fact.evidence
    theirs = one(extractor, "周晓在考虑申请转硕，老王可以知道", speaker="xiaoyu", other="xiaoyu")
    assert not any(e.startswith("cue:also") for e in theirs.evidence)
    negated = one(extractor, "我在考虑申请转硕，不能让老王知道")
    assert "laowang" in negated.blacklist and not any(e.startswith("cue:also") for e in negated.evidence)


def test_you_can_tell_everyone_opens_to_the_category(extractor: RulesExtractor) -> None:
    fact = one(extractor, "我下个月开始学吉他，可以告诉大家")
    assert "cue:also:everyone" in fact.evidence


def test_a_cover_instruction_is_a_cover_holding_only_the_story(extractor: RulesExtractor) -> None:
    drafts = extractor.drafts(
        session(
            [("owner", "医生说我是中度抑郁。要是有人问，就说我最近失眠"), ("xiaoyu", "好")],
            participants=["owner", "xiaoyu"],
        )
    )
    [truth] = truths(drafts)
    [cover] = [d for d in drafts if d.version == "cover"]
    assert "抑郁" in truth.text and cover.text == "王子涵最近失眠。"
    assert drafts[cover.covers or 0] is truth


def test_a_negated_telling_is_no_cover(extractor: RulesExtractor) -> None:
    drafts = extractor.drafts(session([("owner", "我在考虑申请转硕，别跟李老师说")], participants=["owner", "xiaoyu"]))
    assert [d.version for d in drafts] == ["truth"] and "daoshi" in drafts[0].blacklist


# --------------------------------------------------------------------------- categories and dates


def test_chinese_keywords_match_inside_a_sentence(policy: Policy) -> None:
    assert classify("王子涵在考虑申请转硕", policy).category == "career_plans"
    assert classify("HR说offer下周发", policy).category == "career_plans"  # mixed Chinese and English
    assert classify("最近在学吉他", policy).category == "daily_life"


def test_relative_dates_resolve_against_the_session_time() -> None:
    wednesday = datetime(2026, 3, 4, 10, tzinfo=CST)
    assert resolve_dates_zh("下周三开会", wednesday) == "下周三(2026年3月11日)开会"
    assert resolve_dates_zh("六月底结业", wednesday) == "六月底(2026年6月底)结业"
    assert resolve_dates_zh("二月底结业", wednesday) == "二月底(2027年2月底)结业"  # what is ahead
    assert resolve_dates_zh("明天去医院", wednesday) == "明天(2026年3月5日)去医院"
    assert resolve_dates_zh("5月15号deadline", wednesday) == "5月15号(2026年5月15日)deadline"
    assert resolve_dates_zh("五一来北京", wednesday) == "五一来北京"


def test_a_facts_dates_come_from_its_session(extractor: RulesExtractor) -> None:
    s = session([("owner", "我下周三去面试，先别说出去")], participants=["owner", "xiaoyu"])
    s = replace(s, turns=[replace(t, time=datetime(2026, 3, 4, 10, tzinfo=CST)) for t in s.turns])
    assert isinstance(s, Session)
    [fact] = truths(extractor.drafts(s))
    assert fact.text == "王子涵下周三(2026年3月11日)去面试。" and fact.level == 0


# --------------------------------------------------------------------------- retrieval


def test_cjk_text_is_indexed_by_character_bigrams() -> None:
    assert cjk_terms("申请转硕 offer") == ["申请", "请转", "转硕"]
    bm25 = Bm25Encoder()
    doc, query = bm25.document("王子涵在考虑申请转硕"), bm25.query("转硕")
    assert set(query.indices) <= set(doc.indices)
    english = bm25.document("Lin got the offer")
    assert english.indices == list(bm25._model.embed_document("Lin got the offer").indices)  # unchanged


class _Fixed:
    """A stand-in model with a recognisable output (the bilingual routing is what is tested)."""

    def __init__(self, name: str, dim: int, value: float) -> None:
        self.name, self.dim, self.value = name, dim, value
        self.seen: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.seen += texts
        out = np.full((len(texts), self.dim), self.value, dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_the_bilingual_embedder_routes_by_script_into_separate_halves() -> None:
    en, zh = _Fixed("en", 4, 1.0), _Fixed("zh", 3, 1.0)
    emb = BilingualEmbedder(en, zh)
    v = emb.embed(["hello there", "转硕的事", "HR说offer下周发"])
    assert en.seen == ["hello there"] and zh.seen == ["转硕的事", "HR说offer下周发"]
    assert emb.dim == 4 + 3 + 1 and np.allclose(np.linalg.norm(v, axis=1), 1.0)
    assert float(v[0] @ v[1]) == 0.0  # English against Chinese: no made-up closeness
    assert np.allclose(v[0, :4], en.embed(["x"])[0])  # English is scored exactly as MiniLM scores it
    assert float(v[1] @ v[2]) == pytest.approx(1.0)
