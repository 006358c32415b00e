"""Chinese chat, as the rules backend reads it: statements, cues, covers, the owner's "我".

The English readers (statements.py, cues.py, cuesplit.py, extract_rules.py) cut words at
spaces; Chinese has none, so a Chinese sentence is one "word" to them and none of their
patterns or counts apply. Text holding Chinese characters is read here instead, with the same
meanings: a cue says who may know (secrecy: 你知我知, 保密哈, 先别说出去; narrowing: 别告诉老王,
还没跟公司说, 李老师还不知道; widening, from the owner only: 老王可以知道, 可以告诉大家), a cover
instruction tells others a story (要是有人问，就说我最近失眠), and the speaker's 我 / 我们 become
their name. Mainland and Hong Kong (Cantonese) chat forms are both read (唔好同人讲, 就话…).
The text is NFKC-normalised before it gets here (epmem/textnorm.py), so full-width punctuation
arrives as ASCII (，-> ",", ！-> "!"), except 。 and 、.

The patterns are written from how people talk, not fitted to any scenario file. Mixed chats
("offer", "HR", "deadline" inside Chinese sentences) are read here too: any Chinese character
routes the sentence to these readers, and the English words in it stay as they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime

from epmem.embedding.bilingual import CJK, has_cjk
from epmem.textnorm import chinese_name_forms, sentence
from epmem.timeparse import resolve_dates_zh

__all__ = ["has_cjk"]  # the test for text these readers are for, where the English ones take it

#: contact names -> ids (ContactNames.find).
FindNames = Callable[[str], list[str]]

_HAN = re.compile(f"[{CJK}]")
#: particles and fillers that carry no content of their own (a clause of only these is nothing).
_PARTICLES = set("的了吗呢吧啊呀哈嘛么哦喔噢嗯哇啦咯喇咩嘅咗喺佢哋吖囉呵唉诶欸哎嘿")

#: a statement may open with these ("好，", "嗯嗯。", "对了", "跟你说个事"): not part of it.
LEAD_ZH = re.compile(
    r"^(?:(?:对了|那个|其实|说真的|话说|老实说|(?:跟|和|同)你(?:说|讲|坦白)(?:个事|件事|声|个秘密|一下)?|告诉你(?:个事|件事)?|"
    r"有(?:个|件)事(?:想)?(?:跟|和|同)你(?:说|讲|坦白)(?:一下)?|同你讲(?:声|个秘密|个事)?)[\s,.!~:。]*"
    r"|(?:好的?|好呀|好啊|好吧|嗯+|哦+|噢+|哈+|呵+|对+|是的|还行|还好|ok|OK|okay|卧槽|天哪|我去|哇+|诶|欸|唉|哎|啊这|"
    r"放心|收到|谢谢|多谢|唔该)(?:[\s,.!~。]+|$))+"
)
#: politeness and reactions: no fact unless much more is said.
CHITCHAT_ZH = re.compile(
    r"^(?:谢谢|多谢|感谢|收到|好的|好滴|好嘞|没问题|放心|加油|辛苦了|抱抱|哈哈|嘿嘿|呵呵|恭喜|厉害|牛|可以啊|客气啥|"
    r"不客气|没事|没关系|晚安|早安|早晨|拜拜|再见|OK|ok|行|嗯嗯|对|是啊|真的吗|太好了|那就好|好呀|好啊|好吧)"
)
#: a question: a question mark, a question particle at the end, or a question word.
_ASKS_ZH = re.compile(
    r"[?]\W*$|[吗么呢嘛咩]\W*$|(?:吗|呢)[,?]|什么|啥|怎么|咋|为什么|为啥|多少|几点|几时|哪里|哪儿|"
    r"哪个|谁|是不是|有没有|能不能|会不会|要不要|可不可以|好不好|对不对|没有\W*$|睡了没|乜|点解|边个|几多"
)
#: a greeting, whoever it names ("黄生早晨!", "陈伯早晨"), and an instruction to the listener
#: ("记得派喜糖", "帮我订个位"): no fact.
_GREETING_ZH = re.compile(r"(?:早晨|早上好|早安|晚安|你好|您好|新年快乐|生日快乐)\W*$")
_INSTRUCTION_ZH = re.compile(r"^(?:记得|记住|请|麻烦|帮我|帮忙|快点|赶紧|拜托|千万记得)")


def asks_zh(text: str) -> bool:
    """A Chinese question, with or without its question mark."""
    return bool(_ASKS_ZH.search(text.strip()))


def content_chars(text: str) -> int:
    """Chinese characters that are not particles, plus Latin words and numbers."""
    han = [c for c in _HAN.findall(text) if c not in _PARTICLES]
    return len(han) + 2 * len(re.findall(r"[A-Za-z]{2,}|\d+", text))


def filler_zh(text: str) -> str:
    """Why a Chinese sentence is no statement ("question", "reaction", "too-short"), or ""."""
    body = LEAD_ZH.sub("", text.strip()).strip(" ,.!~。")
    if not body or asks_zh(body):
        return "question"
    if CHITCHAT_ZH.match(body) and content_chars(body) < 6 or _GREETING_ZH.search(body) and content_chars(body) < 8:
        return "reaction"
    if _INSTRUCTION_ZH.match(body) and not re.search(r"我|咱|我们", body[2:]):
        return "instruction"
    if content_chars(body) < 4:
        return "too-short"
    return ""


def worth_zh(text: str) -> bool:
    return filler_zh(text) == ""


# --------------------------------------------------------------------------- cues

_ANYONE = r"(?:任何人|别人|其他人|外人|谁|人|大家|第三个人|第三人|旁人|其他同事|外面|公司|组里|单位|家里)"
_TELL = r"(?:说|讲|提|透露|告诉|讲出去|说出去|传出去|讲俾人知|话俾人知)"
#: secrecy: level 0, the people present may know.
SECRECY_ZH = re.compile(
    r"你知我知|天知地知|保密|秘密|别(?:往外|对外)?(?:说|讲|传|声张)出去|不要(?:说|讲|传)出去|别外传|不要外传|别声张|"
    rf"(?:别|不要|不能|千万别|先别|暂时别|还不能|别再)(?:跟|和|对|同|向)?{_ANYONE}{{1,2}}{_TELL}|"
    rf"(?:别|不要|不能|千万别|先别)(?:让|叫|给){_ANYONE}{{1,2}}(?:知道|发现|晓得)|"
    rf"(?:不想|不愿意|不希望|不打算|还不想|暂时不想)(?:让|叫|给)?{_ANYONE}{{1,2}}(?:知道|发现|晓得)|"
    rf"(?:还没|还没有|没|未|仲未)(?:跟|和|对|同|向|告诉){_ANYONE}{{1,2}}{_TELL}?|"
    r"(?:还没|还没有|没|仲未)(?:跟|和|对|同|向|告诉)(?:他|她|他们|她们|佢|佢哋)(?:说|讲|提)|"
    r"谁(?:都|也)(?:别|不要|不能)(?:说|讲|告诉)|这事(?:先)?别跟任何人说|只(?:跟|和|同)你(?:说|讲)|只告诉(?:了)?你|"
    r"(?:还没|尚未|暂时不|先不)(?:公布|公开|官宣|宣布|对外)|(?:等|到)[^,。!?;]{1,12}(?:再|才)(?:公开|公布|官宣|宣布|说|讲)|"
    r"嘴严|守口如瓶|私下|偷偷|悄悄|低调点|对外保密|唔好(?:同|话俾|讲俾|俾)(?:人|其他人|任何人)|唔好(?:讲|传)出去|千祈唔好|"
    r"你自己知道就(?:好|行)|只有你知道|就你知道|别人都不知道|没人知道|其他人都不知道|"
    r"(?:别|不要|唔好)(?:在|喺)(?:群里|群入面|群度|朋友圈)(?:说|讲|发|提)"
)
#: narrowing, the people named after: 别告诉老王, 先别跟李老师说, 还没跟公司说, 瞒着我妈.
_BLACK_AFTER_ZH = re.compile(
    r"(?:别|不要|不能|千万别|先别|暂时别|千万不要|唔好|千祈唔好)(?:告诉|跟|和|对|同|向|让|叫|给|话俾|讲俾|俾|同埋)"
    r"|(?:还没|还没有|没|没有|未|仲未|都未)(?:跟|和|对|同|向|告诉)|瞒着|瞒住|尤其是|特别是|尤其|特别|连|包括"
)
#: narrowing, the people named before: 李老师还不知道, 我爸妈也不知道, 阿妈仲唔知.
_BLACK_BEFORE_ZH = re.compile(r"(?:还|也|都|仲|并)?(?:不知道|唔知|唔知道|毫不知情|蒙在鼓里|不晓得)")
#: widening (owner only): 老王可以知道, 可以告诉小林, 告诉小林也没关系.
_WHITE_ZH = re.compile(
    r"(?P<who>[^,。!?;]{1,12}?)(?:可以知道|知道也没关系|知道也无所谓|知道没事|知道也行)"
    r"|(?<![不别])(?:可以|能|也可以)(?:告诉|跟|和|同)(?P<who2>[^,。!?;]{1,12}?)(?:说|讲|$|[,。!?;])"
    r"|只有(?:你)?(?:和|跟|同)?(?P<who3>[^,。!?;]{1,12}?)(?:知道|晓得)"
)
#: the owner opening to anyone: 可以告诉大家, 不是秘密, 随便说.
_PUBLIC_ZH = re.compile(
    r"(?<![不别])(?:可以|能)(?:告诉|跟|和)(?:大家|别人|任何人|所有人)|不是(?:什么)?秘密|不用保密|随便说|"
    r"(?<![不别])可以(?:说|讲)出去|大家都可以知道|已经公开了|(?:已经)?官宣了"
)
#: a clause boundary for the windows a cue reads names in.
_CLAUSE = re.compile(r"[,。!?;:、]|但是|不过|因为|所以")


def _after(text: str) -> str:
    return _CLAUSE.split(text, maxsplit=1)[0][:16]


def _before(text: str) -> str:
    parts = _CLAUSE.split(text)
    return parts[-1][-16:] if parts else ""


def read_cues_zh(segment: str, *, owner: bool, find: FindNames) -> tuple[list[str], list[str], list[str], bool, bool]:
    """(blacklist, whitelist, secrecy words, public, names present) of one Chinese clause."""
    black: list[str] = []
    white: list[str] = []
    said: list[str] = []
    for m in _BLACK_AFTER_ZH.finditer(segment):
        black += [c for c in find(_after(segment[m.end() :])) if c not in black]
    for m in _BLACK_BEFORE_ZH.finditer(segment):
        black += [c for c in find(_before(segment[: m.start()])) if c not in black]
    said += [m.group(0) for m in SECRECY_ZH.finditer(segment)]
    public = present = False
    if owner:
        public = not said and not black and _PUBLIC_ZH.search(segment) is not None
        if not public:
            for m in _WHITE_ZH.finditer(segment):
                who = m.group("who") or m.group("who2") or m.group("who3") or ""
                if re.search(r"[不别]$|不能|别让|^[不别]", who):
                    continue
                white += [c for c in find(who) if c not in white and c not in black]
                if m.group("who3") is not None:
                    said.append(m.group(0))
                    present = present or "你" in m.group(0)
    return black, white, said, public, present


def cue_only_zh(clause: str, cue_text: list[str], without_names: str) -> bool:
    """A Chinese clause that is nothing but its cue once the cue's words, names and particles
    are taken out ("千万别让李老师知道哈", "保密哈!", "这事你知我知")."""
    rest = without_names
    for w in sorted(cue_text, key=len, reverse=True):
        rest = rest.replace(w, "")
    rest = re.sub(_ANYONE, "", rest)
    rest = re.sub(
        r"别|不要|千万|先|暂时|帮|住|喇|可以|能|也行|没关系|告诉|跟|和|对|同|让|知道|发现|晓得|说|讲|也|都|还|没|不|这事|这件事|事|件|个|我|你|他|她|们|"
        r"哈|啊|呀|哦|吧|啦|了|的|一下|出去|任何人|别人|谁|就|好|嘛|喔|唔|俾|话|人|尤其是|特别是|连|包括|"
        r"绝对|一定|千祈|记得|拜托|求你",
        "",
        rest,
    )
    return content_chars(rest) < 2


# --------------------------------------------------------------------------- covers

#: "要是有人问，就说我最近失眠", "对外就说……", "有人问起就话我返乡下" (Cantonese 话 = say).
COVER_ZH = (
    re.compile(
        r"(?:要是|如果|若是|若|万一|假如|如有|有人|谁|别人|他们|她|他|佢|人哋)[^,。!?;]{0,10}?问(?:起|到|你)?[^,。!?;]{0,6}?"
        r"[,:]?\s*(?:你)?(?:就)?(?:说|讲|话|讲话|回)(?:是)?\s*(?P<clause>.+)"
    ),
    re.compile(
        r"(?:对外|对组里|对公司|对家里|对他们|对她|对他|对其他人|跟其他人|跟他们|同其他人)(?:就|先|统一)?(?:说|讲|话|宣称|宣布)"
        r"(?:是)?\s*(?P<clause>.+)"
    ),
    re.compile(r"(?:就|你就|你们就)(?:说|讲|话)(?:是)?(?P<clause>我.+)"),
)
#: a telling that is negated is a cue, never a cover ("别说我…").
_NEGATED_ZH = re.compile(r"(?:别|不要|不能|唔好|千万别|先别)[^,。!?;]{0,6}?(?:说|讲|话)")


def cover_zh(text: str) -> str | None:
    """The story a Chinese cover instruction tells, or None."""
    for pattern in COVER_ZH:
        m = pattern.search(text)
        if m is None:
            continue
        if _NEGATED_ZH.search(text[max(0, m.start() - 4) : m.start("clause")]):
            continue
        clause = m.group("clause").strip(" ,:。")
        if worth_zh(clause):
            return clause
    return None


# --------------------------------------------------------------------------- third person


def third_person_zh(text: str, speaker: str, you: str | None = None) -> str:
    """The speaker's 我 / 我们 as their name ("我们五一来北京" -> "妈妈他们五一来北京"); 你 as the
    listener's name when known. 你知我知-style cues are gone by now (they are cue words)."""
    text = re.sub(r"我们|咱们|我哋|我地", f"{speaker}他们", text)
    text = re.sub(r"我", speaker, text)
    if you and " and " not in you:
        text = re.sub(r"你们|你哋", f"{you}他们", text)
        text = re.sub(r"你|您", you, text)
    return text


class ChineseFacts:
    """Chinese statements as facts and cover instructions as stories, for the rules extractor
    (epmem/ingest/extract_rules.py). ``now``: the time of the session being read, against which
    relative dates are resolved (set per session)."""

    def __init__(self, owner_name: str, strip_names: Callable[[str], str]) -> None:
        self._owner_forms = sorted({owner_name, *chinese_name_forms(owner_name)}, key=len, reverse=True)
        self._strip_names = strip_names
        self.now: datetime | None = None

    def _names_out(self, text: str) -> str:
        for form in self._owner_forms:
            text = text.replace(form, "")
        return self._strip_names(text)

    def rewrite(self, text: str, speaker: str, you: str | None) -> str:
        """A Chinese statement as a fact: the opening words that are no part of it dropped (好,
        跟你说个事, a name called out: "李老师,最近在宿舍赶论文"), the speaker's 我 as their
        name, relative dates resolved against :attr:`now` (epmem/timeparse.py)."""
        clauses = text.strip().split(",")
        while len(clauses) > 1:
            head = LEAD_ZH.sub("", clauses[0]).strip(" !.~")
            if head and content_chars(self._names_out(head)) >= 2:
                break
            clauses.pop(0)
        text = LEAD_ZH.sub("", ",".join(clauses).strip()).strip()
        text = third_person_zh(text, speaker, you)
        if self.now is not None:
            text = resolve_dates_zh(text, self.now)
        return sentence(text)

    @staticmethod
    def cover(text: str) -> tuple[str, list[str]] | None:
        """(the story, its listeners) of a Chinese cover instruction (:func:`cover_zh`); who it
        is told to is not read from Chinese yet (fail closed: nobody is whitelisted on it)."""
        story = cover_zh(text)
        return (story, []) if story is not None else None
