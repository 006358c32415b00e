"""Small, deterministic text tools shared by the rules backend and the post-generation check.

Nothing here knows about privacy: sentence splitting, word tokens and n-grams, and rewriting
the owner's first-person sentences in the third person. They are kept apart from the rules
extractor so the post-check (epmem/reply/guard.py) tokenizes replies exactly as facts are tokenized.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence

from epmem.embedding.bilingual import CJK, has_cjk
from epmem.english_words import STOPWORDS as STOPWORDS  # the function words, where they always were

_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)]*\s+(?=[\"'“‘(]?[A-Za-z0-9À-ÿ])")
#: abbreviations that end with a period but do not end a sentence.
_ABBREV = re.compile(r"\b(?:Mr|Mrs|Ms|Dr|Prof|St|Sr|Jr|vs|etc|e\.g|i\.e|approx|No)\.$", re.IGNORECASE)


# --------------------------------------------------------------------------- normalising

#: characters that show nothing but split a word for a regex ("Don\u200bt"): removed. U+200D
#: (zero-width joiner) goes too: it only glues emoji into one picture, and a cue read
#: through it must not be missed.
_INVISIBLE = re.compile("[\u00ad\u200b-\u200f\u2060-\u2064\ufeff\u180e]")
#: Cyrillic and Greek letters drawn like Latin ones. They are mapped only inside a word that
#: also holds Latin letters ("D\u043en't", "T\u03bfm"): a whole Cyrillic or Greek word is
#: someone writing their language and stays as written.
CONFUSABLES = {
    **dict(
        zip(
            "\u0430\u0435\u043e\u0440\u0441\u0445\u0443\u0456\u0458\u0455\u0501\u04bb\u0410\u0412\u0415"
            "\u041a\u041c\u041d\u041e\u0420\u0421\u0422\u0425\u0406\u0408\u0405",
            "aeopcxyijsdhABEKMHOPCTXIJS",
        )
    ),
    **dict(
        zip(
            "\u03bf\u03b1\u03c1\u03c4\u03bd\u03b9\u03ba\u0391\u0392\u0395\u0396\u0397\u0399\u039a"
            "\u039c\u039d\u039f\u03a1\u03a4\u03a5\u03a7",
            "oaptvikABEZHIKMNOPTYX",
        )
    ),
}
_CONFUSABLE_CLASS = "".join(sorted(CONFUSABLES))
_MIXED_WORD = re.compile(rf"[\w'’]*[{_CONFUSABLE_CLASS}][\w'’]*")
_LATIN = re.compile(r"[A-Za-z]")
#: emoji that say "keep it quiet": read as a secrecy cue (epmem/ingest/cues.py).
SECRECY_EMOJI = "\U0001f92b\U0001f910\U0001f64a\u3299"  # shushing face, zipper mouth, speak-no-evil, "secret"


def clean(text: str) -> str:
    """The text as a person reads it: Unicode NFKC (full-width letters, ligatures and
    compatibility forms become plain ones) and no invisible characters. Stored fact texts are
    cleaned, so what the owner sees, what is searched and what the cues read are the same words."""
    return _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))


def unconfuse(text: str) -> str:
    """Look-alike Cyrillic/Greek letters mapped to Latin inside words that also hold Latin
    letters: "D\u043en't t\u0435ll \u0430nyone" hides a cue from every English pattern, and nobody
    writes one word in two alphabets by accident."""

    def fix(m: re.Match[str]) -> str:
        word = m.group(0)
        if not _LATIN.search(word):
            return word
        return "".join(CONFUSABLES.get(ch, ch) for ch in word)

    return _MIXED_WORD.sub(fix, text)


def normalise(text: str) -> str:
    """:func:`clean` and :func:`unconfuse`: what the extractor reads (statements, cues, and the
    fact texts it writes). Secrecy emoji are kept: they are cues."""
    return unconfuse(clean(text))


def words(text: str) -> list[str]:
    """Case-folded word tokens; unicode-aware ("Tomás" stays one word)."""
    return _WORD.findall(text.casefold())


def ngrams(tokens: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def content_words(tokens: Iterable[str]) -> list[str]:
    return [t for t in tokens if t not in STOPWORDS]


#: Chinese sentence ends: 。 ! ? ; and "..." (NFKC turned ！？； into ASCII and … into "..."),
#: no space after them needed.
_SENTENCE_END_CJK = re.compile(r"(?<=[。!?;])[\"'”’)」』]*|(?<=\.\.\.)|(?<=…)")
_HAN = re.compile(f"[{CJK}]")


def split_sentences_cjk(line: str) -> list[str]:
    """One line of Chinese (or mixed) chat cut after 。 ! ? ; and "...": Chinese puts no space
    after a sentence. A piece without Chinese that ends the line ("好的!👍") stays with the
    sentence before it."""
    out: list[str] = []
    start = 0
    for m in _SENTENCE_END_CJK.finditer(line):
        piece = line[start : m.end()].strip()
        if piece and _HAN.search(piece):
            out.append(piece)
            start = m.end()
    tail = line[start:].strip()
    if tail:
        if out and not _HAN.search(tail) and len(tail) <= 3:
            out[-1] += tail
        else:
            out.append(tail)
    return [p for p in out if p.strip(" .。")]


def split_sentences(text: str) -> list[str]:
    """Sentences of one chat message. Line breaks end sentences too (chat messages use them)."""
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if has_cjk(line):
            out += split_sentences_cjk(line)
            continue
        start = 0
        for m in _SENTENCE_END.finditer(line):
            piece = line[start : m.start()].strip()
            if _ABBREV.search(piece):
                continue
            if piece:
                out.append(piece)
            start = m.end()
        tail = line[start:].strip()
        if tail:
            out.append(tail)
    return out


# --------------------------------------------------------------------------- Chinese names

#: compound surnames (the rest are one character).
_SURNAMES_2 = ("欧阳", "司马", "诸葛", "上官", "东方", "慕容", "令狐", "皇甫", "尉迟", "长孙", "司徒", "夏侯")
#: how people address someone by surname: 老王, 小林, 王姐, 王总, 王老师.
_BY_SURNAME = ("老{s}", "小{s}", "{s}姐", "{s}哥", "{s}总", "{s}老师", "{s}叔", "{s}姨", "{s}工", "{s}生", "{s}太")


def chinese_name_forms(name: str) -> list[str]:
    """The forms of address a Chinese name is called by in chat: the given name (子涵 for
    王子涵), 阿 + its last character (阿强 for 陈志强, Cantonese), and the surname forms of
    :data:`_BY_SURNAME`. An ambiguous form (two contacts surnamed 王) names nobody (see
    :class:`ContactNames`)."""
    if not re.fullmatch(f"[{CJK}]{{2,4}}", name):
        return []
    surname = name[:2] if name.startswith(_SURNAMES_2) else name[0]
    given = name[len(surname) :]
    forms = [f.format(s=surname) for f in _BY_SURNAME]
    if len(given) >= 2:
        forms += [given, "阿" + given[-1]]
    return forms


# --------------------------------------------------------------------------- third person

#: past-tense and modal forms that take no "-s" after the subject.
_NO_S = frozenset(
    """am was were had did will would can could should shall may might must put set cut let hit
    read said told got made went took met gave found felt left paid bought brought thought sent
    spent kept knew saw came ran won lost sold held heard meant built began became chose drove ate
    fell forgot grew hung hid led lent rode rang rose sang sat slept spoke stood stole swam swore
    taught threw understood woke wore wrote quit never also just still already really only broke
    drank drew flew froze shook shot shut sank slid stuck struck swept swung tore bit bent bled
    caught crept dealt dug fed fled fought forgave hurt knelt laid leapt lit sought shone shrank
    split spread sprang stank strode thrust wept withdrew wound cost bet burst cast fit rid""".split()
)
_IRREGULAR = {
    "have": "has",
    "do": "does",
    "go": "goes",
    "am": "is",
    "'m": "is",
    "are": "is",
    "don't": "doesn't",
    "don’t": "doesn’t",
    "dont": "doesnt",
    "haven't": "hasn't",
    "haven’t": "hasn’t",
    "havent": "hasnt",
    "aren't": "isn't",
    "aren’t": "isn’t",
    "arent": "isnt",
}
#: words that may sit between "I" and its verb ("I really want", "I ever have to").
_ADVERBS = frozenset(
    """ever never always often sometimes usually really still also just only already even finally
    actually probably definitely honestly seriously literally basically totally mostly rarely hardly
    barely nearly almost soon then now too kinda sorta genuinely truly simply personally secretly
    desperately badly""".split()
)
#: words after "I" that are not a verb at all ("Tom and I", "I too").
_NOT_VERB = frozenset("and or but nor too so then the a an to of in on at for with as than if".split())


def _third_singular(verb: str) -> str:
    low = verb.lower()
    if low in _NOT_VERB or low in _ADVERBS:
        return verb
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if low in _NO_S or (low.endswith("ed") and not low.endswith("eed")) or not low.isalpha():
        return verb
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if low.endswith("y") and len(low) > 1 and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


#: "Max and I", "my wife and I", "she and I": a plural subject keeps its verb ("Max and I broke up").
_AND_BEFORE_I = re.compile(
    r"(?:^|[,;:]\s*|\b(?:he|she|they|you)\s+|"
    r"(?<![.!?]\s)\b[A-ZÀ-Þ][\w'’-]*\s+)and\s+$"
)


def _plural_subject(before: str) -> bool:
    return bool(_AND_BEFORE_I.search(before))


def third_person(text: str, owner: str, you: str | None = None) -> str:
    """Rewrite a speaker's sentence about themselves in the third person.

    ``owner`` (the speaker: the owner, or whoever wrote the message) replaces I/me/my; ``you`` (the other person of a direct chat, or the people
    addressed in a group) replaces "you" when known, else "you" is left alone. "We" becomes
    "<owner> and others": who else is meant cannot be told from one sentence, and a wrong guess
    would put words in someone's mouth. Weak prose by design; the rules backend is the floor.
    """
    apostrophe = r"['’]"
    rules: list[tuple[str, str]] = [
        (rf"\bI{apostrophe}m\b|\bI am\b|\b[Ii]m\b(?=\s+\w)", f"{owner} is"),  # "im" is chat for "I'm"
        (rf"\bI{apostrophe}ve\b", f"{owner} has"),
        (rf"\bI{apostrophe}ll\b", f"{owner} will"),
        (rf"\bI{apostrophe}d\b", f"{owner} would"),
        (rf"\bwe{apostrophe}re\b|\bwe are\b", f"{owner} and others are"),
        (rf"\bwe{apostrophe}ve\b", f"{owner} and others have"),
        (rf"\bwe{apostrophe}ll\b", f"{owner} and others will"),
        (rf"\bwe{apostrophe}d\b", f"{owner} and others would"),
        (rf"\blet{apostrophe}s\b", "let us"),
        (r"\bmyself\b", owner),
        (r"\bmine\b", f"{owner}'s"),
        (r"\bmy\b", f"{owner}'s"),
        (r"\bme\b", owner),
        (r"\bours\b", f"{owner}'s"),
        (r"\bour\b", f"{owner}'s"),
        (r"\bus\b", f"{owner} and others"),
        (r"\bwe\b", f"{owner} and others"),
    ]
    if you:
        # "what you need" -> "what Noor needs": "you" as the subject of a clause takes the verb's -s
        if " and " not in you:
            text = re.sub(
                r"(?i)(^|\b(?:what|whatever|that|if|when|whenever|because|as|and|but|so|where|how|why|"
                r"unless|until|once|since|while)\s+)you\s+(?!(?:are|were|have|had|will|would|can|could|should|"
                r"must|might|may|shall|did|didn['’]t|do|don['’]t|also|just|really|still|never|always|only|two|both|all|"
                r"guys|know)\b)"
                r"([a-z]+)\b(?!['’])",
                lambda m: f"{m.group(1)}you {_third_singular(m.group(2))}",
                text,
            )
        rules += [
            (rf"\byou{apostrophe}re\b|\byou are\b", f"{you} are" if " and " in you else f"{you} is"),
            (rf"\byou{apostrophe}ll\b", f"{you} will"),
            (rf"\byou{apostrophe}ve\b", f"{you} have" if " and " in you else f"{you} has"),
            (rf"\byou{apostrophe}d\b", f"{you} would"),
            (r"\byou two\b|\byou both\b|\byou all\b|\byou guys\b", you),
            (r"\byours\b", f"{you}'s"),
            (r"\byour\b", f"{you}'s"),
            (r"\byou\b", you),
        ]
    for pattern, repl in rules:
        text = re.sub(pattern, _replacer(repl), text, flags=re.IGNORECASE)
    # "I <verb>" -> "<owner> <verb>s" for present-tense verbs, past any adverbs ("I really want")
    adverbs = "|".join(sorted(_ADVERBS))
    text = re.sub(
        rf"\bI((?:\s+(?:{adverbs}|\w+ly))*)\s+(\w+(?:['’]\w+)?)",
        lambda m: (
            f"{owner}{m.group(1)} "
            f"{m.group(2) if _plural_subject(m.string[: m.start()]) else _third_singular(m.group(2))}"
        ),
        text,
    )
    return re.sub(r"\bI\b", owner, text)


def _replacer(replacement: str) -> Callable[[re.Match[str]], str]:
    return lambda m: _keep_case(m.group(0), replacement)


def _keep_case(found: str, replacement: str) -> str:
    """Acronyms ("US") are not pronouns; "let us" keeps the case of the original word."""
    if len(found) > 1 and found.isupper() and " " not in found:
        return found
    if replacement == "let us" and found[:1].isupper():
        return "Let us"
    return replacement


def sentence(text: str) -> str:
    """Capitalized, with a final period (a Chinese one, 。, after Chinese)."""
    text = text.strip().strip(",;:-— ")
    if not text:
        return text
    if has_cjk(text):
        text = re.sub(r"(?:\.\.\.|…)+$", "", text).rstrip(" ,.;:~")
        return text if text.endswith(("。", "!", "?")) else text + "。"
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."
