"""Chinese (Simplified): how a message is told to be Chinese, the kind of a Chinese question,
and which facts answer it.

Detection is by script: a message with Chinese characters is Chinese when they outnumber its
Latin words ("你的offer签了吗" is Chinese, "Did you see 子涵's post?" is English), and it has no
more kana or hangul than Chinese characters.

The relevance step's English parts cannot read Chinese: the question-kind patterns look for
"how's", "when", "is ..."; the cross-encoder (ms-marco MiniLM) and the late-interaction model
were trained on English, and on Chinese text their scores say nothing (every fact of a Chinese
storyline scored alike, so every allowed fact was recited: precision 0.25 on the shared zh set).
For a question in Chinese the relevance step therefore runs with :func:`chinese_kind`, the
settings of relevance-zh.yaml and, in the cross-encoder's place, :class:`SharedWords`: which of the
question's informative words (Chinese character bigrams, Latin words) a fact shares. A fact
sharing none does not answer the question (its score is below the veto); a fact sharing some
answers it the better the more it shares; a question with no informative words at all ("最近咋样?")
vetoes nothing. It reads only what the relevance step gives it (the facts the audience may know
and a cover's truth, as the cross-encoder does), so a deflection still reads the same whether a
secret exists or not.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

from epmem.language.english import LATIN_WORD, OTHER_CJK, addressed_to, question_parts
from epmem.language.phrases import load_phrases
from epmem.language.settings import load_settings
from epmem.language.spec import LanguageSpec, QuestionKind

#: CJK unified ideographs (with extension A and the compatibility block).
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def han_count(text: str) -> int:
    return len(_HAN.findall(text))


def is_chinese(text: str) -> bool:
    """Chinese characters outnumber the Latin words (and no more kana or hangul than them)."""
    han = han_count(text)
    if not han or len(OTHER_CJK.findall(text)) > han:
        return False
    return han >= len(LATIN_WORD.findall(text))


_KINDS: tuple[tuple[QuestionKind, re.Pattern[str]], ...] = (
    (
        "open",
        re.compile(
            r"最近(?:怎么样|咋样|如何|还好|过得|点[啊呀样]|忙(?:什么|啥|些什么)|在忙|在干|干(?:嘛|啥|什么))"
            r"|近况|(?:有|有没有)(?:什么|啥)(?:新鲜事|新消息|新闻|动静)|忙(?:什么|啥)呢"
        ),
    ),
    ("state", re.compile(r"(?:怎么样|咋样|如何|还好吗|好吗|还行吗|顺利吗|好点了?吗|好些了?吗|怎么了)")),
    ("when", re.compile(r"什么时候|啥时候|几点|哪天|哪一天|几号|几月|多久|何时|哪年")),
    ("where", re.compile(r"哪里|哪儿|在哪|去哪|什么地方|啥地方|哪个城市|哪个国家")),
    ("who", re.compile(r"谁|哪位|跟谁|和谁")),
    (
        "yesno",
        re.compile(r"[吗嘛][？?！!。~～]*\s*$|是不是|有没有|会不会|能不能|要不要|是否|对不对|[了过]没[？?]*\s*$"),
    ),
)

#: characters that make a bigram a function word (了吗, 他在, 是不): never informative.
_STOP_CHARS = frozenset("的了吗呢吧啊呀么他她它你我们是在有和就都也还又很这那个些不没哈嘛啦哦嗯呗咋啥谁哪儿得着怎")
#: informative-looking bigrams that every question and fact may hold.
_STOP_BIGRAMS = frozenset(
    {
        "最近",
        "知道",
        "听说",
        "现在",
        "时候",
        "一下",
        "一直",
        "真的",
        "感觉",
        "今天",
        "明天",
        "昨天",
        "好久",
        "怎样",
        "如何",
        "为什",
        "什么",
        "一个",
        "可以",
        "应该",
        "打算",
        "已经",
        "还是",
        "就是",
        "但是",
        "因为",
        "所以",
        "如果",
        "觉得",
        "告诉",
        "问问",
        "事情",
        "情况",
        "一些",
        "一点",
        "怎么",
        "这样",
        "那样",
        "近况",
        "听讲",
        "是否",
        "到底",
        "真是",
        "准备",
        "安排",
        "出来",
    }
)
_HAN_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_LATIN = re.compile(r"[A-Za-z][A-Za-z0-9+#.-]*[A-Za-z0-9+#]|[A-Za-z]{2,}")
_LATIN_STOP = frozenset({"ok", "okay", "hi", "hey", "hh", "lol"})


def chinese_kind(question: str) -> QuestionKind:
    """A Chinese question's kind, as english_kind names the English ones."""
    for kind, pattern in _KINDS:
        if pattern.search(question):
            return kind
    return "what"


def terms(text: str, ignore: Iterable[str] = ()) -> set[str]:
    """The informative words of ``text``: Chinese character bigrams without a function
    character, and Latin words (lower-cased); the names in ``ignore`` cut out first (a bigram
    across a name's edge, "涵最" of "子涵最近", says nothing either)."""
    for name in sorted(ignore, key=len, reverse=True):
        if name:
            text = text.replace(name, " ")
    for word in _STOP_BIGRAMS:  # cut out, so that "最近怎么" leaves no "近怎" either
        text = text.replace(word, " ")
    out = {b for b in _bigrams(text) if not (set(b) & _STOP_CHARS)}
    out.update(w.casefold() for w in _LATIN.findall(text) if w.casefold() not in _LATIN_STOP)
    return out


#: a date's bigram (六月, 八号, 周三) weighs half: "六月" alone does not make a fact answer.
_DATE = re.compile(r"[一二三四五六七八九十两0-9][月号日天年周]|[月周][一二三四五六日天末底初]|[上下这][周月]")


def _weight(term: str) -> float:
    return 0.5 if _DATE.fullmatch(term) else 1.0


def _bigrams(text: str) -> set[str]:
    return {run[i : i + 2] for run in _HAN_RUN.findall(text) for i in range(len(run) - 1)}


def name_forms(name: str) -> list[str]:
    """How a text may name someone: the name, its parts, and a Chinese name without its
    surname (王子涵 -> 子涵; a one-character given name is too short to cut out safely)."""
    forms = [name, *name.split()]
    han = "".join(_HAN_RUN.findall(name))
    if han == name.strip() and 2 <= len(han) <= 4:
        surname, given = han[0], han[-1]
        if len(han) >= 3:
            forms.append(han[1:])
        # forms of address: 老黄, 小黄, 黄哥, 阿强, 强哥, 强姐
        forms += [
            f"老{surname}",
            f"小{surname}",
            f"{surname}哥",
            f"{surname}姐",
            f"{surname}总",
            f"阿{given}",
            f"{given}哥",
            f"{given}姐",
        ]
    return [f for f in dict.fromkeys(forms) if f]


class SharedWords:
    """A stand-in for the cross-encoder on Chinese text: a logit per fact from the informative
    words it shares with the question, each word weighing 1 / the number of the events read
    that hold it (a shop's name in every fact tells little; a cover and its truth, one event
    told two ways, count once: ``events`` names each text's event, else each text is its own).
    ``none`` when the shared weight is below ``least`` (below the relevance step's veto: it does
    not answer), else ``one`` plus ``step`` per further unit of weight; ``neutral`` for every
    fact when the question has no informative words (nothing to veto by)."""

    name = "shared-words"

    def __init__(
        self,
        ignore: Iterable[str] = (),
        none: float = -6.0,
        one: float = 2.0,
        step: float = 1.5,
        neutral: float = -1.0,
        least: float = 0.75,
    ) -> None:
        self.ignore = tuple(ignore)
        self.none, self.one, self.step, self.neutral, self.least = none, one, step, neutral, least

    def score(self, question: str, texts: Sequence[str], events: Sequence[str] | None = None) -> np.ndarray:
        asked = terms(question, self.ignore)
        if not asked:
            return np.full(len(texts), self.neutral, dtype=np.float32)
        held = [asked & terms(t, self.ignore) for t in texts]
        by_event: dict[str, set[str]] = {}
        for i, h in enumerate(held):
            by_event.setdefault(events[i] if events is not None else str(i), set()).update(h)
        df = Counter(w for h in by_event.values() for w in h)
        weight = [sum(_weight(w) / df[w] for w in h) for h in held]
        return np.array(
            [self.none if w < self.least else self.one + self.step * (w - 1) for w in weight], dtype=np.float32
        )


#: what the delegate says in Chinese (epmem/language/phrases-zh.yaml). ``{owner}`` is the owner's name.
PHRASES: dict[str, str] = load_phrases("zh")


_REFERS_BACK = re.compile(
    r"(?:我们|咱们|上次|之前|那天)(?:说|聊|谈|讨论)(?:过|到|起)?的(?:那件事|那个|事情|事儿|计划)?"
)


def refers_back(question: str) -> bool:
    """Whether ``question`` points back to an earlier chat with the asker ("我们上次聊的那件事")."""
    return _REFERS_BACK.search(question) is not None


def shared_words(owner: str) -> SharedWords:
    """The cross-encoder's stand-in for one reply: the owner's names say nothing."""
    return SharedWords(ignore=name_forms(owner))


#: Latin words inside a Chinese question are read as English reads them ("you" named as the
#: owner); a Chinese question is one part (relevance-zh.yaml's max_parts).
CHINESE = LanguageSpec(
    code="zh",
    name="Chinese",
    claims=is_chinese,
    kind=chinese_kind,
    addressed_to=addressed_to,
    parts=question_parts,
    relevance=load_settings("zh"),
    phrases=PHRASES,
    stand_in=shared_words,
    priority=10,
    refers_back=refers_back,
)
