"""English: the default language, and the reading every Latin-script word gets.

A message with a Latin word and no kana or hangul is English (the one Latin language spoken;
Chinese, of higher priority, claims a message whose Chinese characters outnumber its Latin
words first). Question kinds come from the patterns below; the cross-encoder reads the
question with the owner named where the asker says "you" (:func:`addressed_to`), part by part
(:func:`question_parts`). Its relevance settings: relevance-en.yaml.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from epmem.english_words import not_plainly_english
from epmem.language.phrases import load_phrases
from epmem.language.settings import load_settings
from epmem.language.spec import LanguageSpec, QuestionKind
from epmem.textnorm import content_words, words

#: Japanese kana and Korean hangul: not Chinese, not English, even beside either.
OTHER_CJK = re.compile(r"[\u3040-\u30ff\uac00-\ud7af]")
LATIN_WORD = re.compile(r"[A-Za-zÀ-ÖØ-öø-ÿ]+(?:['’][A-Za-z]+)?")

#: questions that ask for news in general rather than about a topic, and requests for
#: everything ("Tell me everything you know about Sam", "all you know about her"): no topic.
_CATCH_UP = re.compile(
    r"\b(up to|been up to|what'?s new|what is new|any news|anything new|what'?s going on|what is going on"
    r"|how (?:is|are|'s) (?:\w+ ){0,3}(?:doing|getting on|keeping)|keeping busy|catch me up|latest"
    r"|everything|all (?:that )?you (?:know|can tell|can share)|all about|the whole (?:[\w-]+ ){0,3}(?:story|saga|thing))\b",
    re.IGNORECASE,
)


def is_catch_up(question: str) -> bool:
    """'What is Lin up to these days?' is about everything, not about a topic: no fact will be
    similar to it, so recall ranks all events instead of thresholding them."""
    return _CATCH_UP.search(question) is not None


#: how someone or something is: "How's Tyler's job going?", "Is Aoife okay?" (not "how much").
_STATE = re.compile(
    r"\bhow(?:'s|\u2019s| is| are| was| were| has| have| did| do|'re)\b"
    r"(?!\s+(?:much|many|long|old|far|often|soon|big)\b)"
    r"|\b(?:ok|okay|alright|all right|holding up|getting on)\b",
    re.I,
)

#: a question that opens with a verb asks yes or no ("Is she ...?", "Madam, will you ...?").
_YES_NO = re.compile(
    r"^\s*(?:\w+,\s*)?(is|are|was|were|do|does|did|has|have|had|will|would|can|could|"
    r"should|shall|may|might|must|isn't|aren't|didn't|doesn't|hasn't|won't)\b",
    re.I,
)

_KIND_WORDS: tuple[tuple[QuestionKind, re.Pattern[str]], ...] = (
    ("when", re.compile(r"\b(when|what time|what date|which day|how long|how soon|until when)\b", re.I)),
    ("where", re.compile(r"\b(where|which (?:city|country|place|town))\b", re.I)),
    ("who", re.compile(r"\b(who|whom|whose|with whom)\b", re.I)),
    ("yesno", _YES_NO),
)


def asks_yes_or_no(sentence: str) -> bool:
    """Whether ``sentence`` opens like a yes/no question."""
    return _YES_NO.search(sentence) is not None


def english_kind(question: str) -> QuestionKind:
    """Open (catch-up) first, then how someone is, then the first wh- word, then a yes/no
    opening, else "what"."""
    if is_catch_up(question):
        return "open"
    if _STATE.search(question):
        return "state"
    for kind, pattern in _KIND_WORDS:
        if pattern.search(question):
            return kind
    return "what"


#: the asker speaks to the owner ("Are you cutting down your hours?"); the memory speaks of
#: the owner by name ("Leila is going down to 4 days a week"). Longest forms first.
_SECOND_PERSON: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.I), replacement)
    for pattern, replacement in (
        (r"\byou(?:'re|’re)\b", "{name} is"),
        (r"\byou(?:'ve|’ve)\b", "{name} has"),
        (r"\byou(?:'ll|’ll)\b", "{name} will"),
        (r"\byou(?:'d|’d)\b", "{name} would"),
        (r"\byour(?:self|selves)\b", "{name}"),
        (r"\byours?\b", "{name}'s"),
        (r"\byou(?:\s+(?:two|both|guys|all))?\b", "{name}"),
    )
)


def addressed_to(question: str, name: str) -> str:
    """``question`` with the owner, addressed as "you", named instead: what the cross-encoder
    reads, since it judges "Are you getting a pet?" against "Alex is picking up a cat" as
    unrelated (-7.5) and "Are Alex getting a pet?" as an answer (+1.8)."""
    if not name:
        return question
    for pattern, replacement in _SECOND_PERSON:
        question = pattern.sub(replacement.format(name=name), question)
    return question


_SENTENCE_END = re.compile(r"(?<=[.?!\u3002\uff1f\uff01])\s*")
_CLAUSE = re.compile(
    r",?\s+(?:and|or|but|plus)\s+(?=(?:what|when|where|who|whom|whose|which|how|why|whether|if|is|"
    r"are|was|were|do|does|did|has|have|had|will|would|can|could|should|any)\b)",
    re.I,
)


#: a request names what it asks for after its verb: "send him my Tasy login, the money I lent
#: people and the whole COREN story", "reply with the terminal PIN and the amount of your last
#: big payment", "we need his AIFF login and the exact monthly amount he pays".
_REQUEST = re.compile(
    r"\b(?:send|give|tell|show|forward|share|list|reply\s+with|respond\s+with|(?:we|i)\s+need|(?:we|i)\s+want)"
    r"\s+(?:(?:me|him|her|us|them|over)\s+)?(?P<things>[^.?!;:]{3,})",
    re.I,
)
_ITEMS = re.compile(
    r",?\s+and\s+(?:send|give|tell|show|forward|share|list)\s+(?:(?:me|him|her|us|them)\s+)?"  # a second request
    r"|,\s*(?:and\s+)?|\s+and\s+(?=(?:the|a|an|his|her|their|my|your|our|all|any|what|how)\b)",
    re.I,
)


#: "the thing we talked about", "that plan I mentioned": an earlier chat, named by nothing else.
_THING_WE_TALKED = (
    r"(?:the|that|this)\s+(?:thing|stuff|matter|plan|topic|issue)s?\s+(?:we|you and i|i)\s+(?:were\s+)?"
    r"(?:talked|talking|spoke|speaking|discussed|discussing|chatted|mentioned)"
)
#: words that point back to an earlier chat and name nothing of their own: "re the thing we talked
#: about, when do we get the keys?" asks when the keys come.
_BACK_REFERENCE = re.compile(
    rf"^\s*(?:re:?\s+|about\s+|so\s+|and\s+)?{_THING_WE_TALKED}"
    r"(?:\s+about)?(?:\s+(?:last\s+\w+|earlier|before|the\s+other\s+day|yesterday))?\s*[,:;-]\s*",
    re.I,
)


_REFERS_BACK = re.compile(
    rf"\b{_THING_WE_TALKED}\b"
    r"|\bwhat\s+we\s+(?:talked|spoke|discussed|chatted)\b"
    r"|\b(?:as|like)\s+(?:we|i)\s+(?:said|discussed|agreed)\b"
    r"|\byou\s+(?:told|mentioned\s+to)\s+me\s+(?:about\s+)?(?:before|earlier|last)\b",
    re.I,
)


def refers_back(question: str) -> bool:
    """Whether ``question`` points back to an earlier chat with the asker ("re the thing we talked
    about", "any news on what we discussed?", "like I said")."""
    return _REFERS_BACK.search(question) is not None


def without_back_reference(sentence: str) -> str:
    """``sentence`` without an opening that only points back to an earlier chat."""
    rest = _BACK_REFERENCE.sub("", sentence, count=1)
    return rest if len(rest.split()) >= 2 else sentence


def requested(sentence: str) -> list[str]:
    """What a request asks for, thing by thing ("send him my login, the money I lent people
    and the whole COREN story" -> three things): each is one need, as a question is, and the
    cross-encoder reads "the exact monthly amount he pays for the boy's hostel" as answered by
    the hostel fees (+4.1) where it reads the whole request as unrelated (-7.0)."""
    m = _REQUEST.search(sentence)
    if m is None:
        return []
    return [t.strip() for t in _ITEMS.split(m.group("things")) if len(t.split()) >= 2]


def question_parts(question: str, limit: int = 6) -> list[str]:
    """The whole question, then its sentences and the clauses that ask something of their own,
    at most ``limit`` in all: the cross-encoder judges one need at a time, and scores a fact
    that answers the second half of "Did they sign for the flat, and what is the new pay like?"
    as unrelated to the whole."""
    parts = [question.strip()]
    for sentence in _SENTENCE_END.split(question.strip()):
        clauses = [p.strip() for p in _CLAUSE.split(sentence) if p.strip()]
        own = without_back_reference(sentence)
        parts.extend([*requested(sentence), *(clauses if len(clauses) > 1 else [sentence.strip()])])
        if own != sentence:
            parts.append(own.strip())
    return list(dict.fromkeys(p for p in parts if p))[: max(1, limit)]


#: how a sentence that asks something opens, after an "and"/"so"/"but" that joins it to the last.
_ASKS = re.compile(
    r"^(?:(?:and|so|but|also|plus|oh|ok|okay)[,\s]+)*(?:what|when|where|who|whom|whose|which|how|why|whether|"
    r"is|are|was|were|am|do|does|did|has|have|had|will|would|can|could|should|shall|may|might|r\s+u|any)\b",
    re.I,
)


#: where a sentence ends: after its last mark ("so good!! and you?" is two sentences, not three).
_SENTENCES = re.compile(r"(?<=[.?!])(?![.?!])\s+|(?<=[\u3002\uff1f\uff01])(?![\u3002\uff1f\uff01])\s*")
#: words that ask for news without naming whose or what: "Any news?", "What's the plan?"
_ASKING_FOR_NEWS = frozenset(
    "news new plan plans happening latest update updates story deal thing things stuff everything "
    "anything something else".split()
)


def names_something(question: str) -> bool:
    """Whether ``question`` names someone or something of its own: a word that is neither a
    function word nor one that only asks for news. One that names nothing ("Any news?", "What
    are you doing?", "What's the plan?") goes on with the question before it."""
    return any(w not in _ASKING_FOR_NEWS for w in content_words(words(question)))


_CONNECTIVES = frozenset("and so but also plus oh ok okay".split())
#: capitalised, and no one's name: "what is he preparing for September?" names no one.
_CALENDAR = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec "
    "monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat sun".split()
)
_TO_YOU = frozenset("you your yours yourself u ur ya".split())
#: someone the message named before: "Has he finished at KNUST?" is about whoever "he" is.
_SPOKEN_OF = frozenset("he him his himself she her hers herself they them their theirs themselves".split())


def opens_a_matter(question: str) -> bool:
    """Whether ``question``, following another in one message, asks about a matter of its own:
    it names something (:func:`names_something`) and speaks to the owner ("you"), or names
    someone before any "he" or "her". One that names nobody ("Any health problems?", "When do
    we sign?") or speaks first of someone as "he" or "her" ("And who's looking after her
    team?", "Has he finished at KNUST?") goes on with the question before it, whose subject it
    takes; "is it true Choi goes on it though he never came?" names its own "he". A question in
    another language than English ("e você ainda faz aquele curso aos sábados?") is always one
    of its own: these words read neither its pronouns nor its "you", and a question asked is
    better answered alone than measured against another."""
    if not_plainly_english(question):
        return True
    if not names_something(question):
        return False
    tokens = re.findall(r"[^\W\d_][\w'’-]*", question)
    while tokens and tokens[0].casefold() in _CONNECTIVES:
        tokens = tokens[1:]
    if any(t.casefold() in _TO_YOU for t in tokens):
        return True
    if _has_own_subject(tokens):
        return True
    for i, t in enumerate(tokens):
        if t.casefold() in _SPOKEN_OF:
            return False  # "he" before any name: whoever the message named before
        if i > 0 and _is_name(t):
            return True
    return False


#: a verb that opens a question ("is", "did", "will") and the words before it that ask ("when").
_AUXILIARY = frozenset("is are was were do does did has have had will would can could should shall may might".split())
_WH = frozenset("what when where who whom whose which how why".split())


def _has_own_subject(tokens: Sequence[str]) -> bool:
    """Whether a question's subject is a thing of its own, not a pronoun: "is there water this
    Saturday?", "when is the party?". Its verb comes first (after a word that asks) and "there"
    or "the" right after it: the question says what it is about, as a name does, and needs no
    earlier question to say it ("Is she ok?" and "Any news?" do)."""
    folded = [t.casefold().replace("’", "'") for t in tokens]
    if folded and folded[0].removesuffix("'s") in _WH:  # "when's the party?": when is
        folded = ["is", *folded[1:]] if folded[0].endswith("'s") else folded[1:]
    return len(folded) >= 2 and folded[0] in _AUXILIARY and folded[1] in ("there", "the")


def _is_name(word: str) -> bool:
    """A capitalised word (not the first of a sentence) that is not "I" nor a month or a day."""
    capital = word[0].isupper() or not word[0].isascii() and not word[0].islower()
    return capital and word != "I" and word.casefold().removesuffix("s") not in _CALENDAR


def questions(message: str) -> list[str]:
    """The questions ``message`` asks, each on its own: the sentences that end in a question mark
    or open as a question does, split further where a clause joined by "and" asks again ("Is the
    strike vote still on, and what are we asking for?"), each with the sentences before it that
    ask nothing ("congrats on the paper!! which journal did it end up in?": the "it" is the
    paper), the last with those after it too. A request that lists several things ("send him my
    login, the money I lent people and the whole story": :func:`requested`) asks for each of
    them: each thing is one need, as a question is. A message that asks several things is
    answered as several questions: each is read with its own kind and finds its own answer, so
    that the answer to one is never measured against the answer to the other. A message with one
    question or none gives itself."""
    found: list[str] = []
    context: list[str] = []
    for sentence in _SENTENCES.split(message.strip()):
        things = requested(sentence)
        if len(things) > 1:  # "send him my login, the money I lent people and the whole story"
            found.extend(things)
            context = []
            continue
        clauses = [p.strip() for p in _CLAUSE.split(sentence) if p.strip()]
        for clause in clauses if len(clauses) > 1 else [sentence.strip()]:
            if len(clause.split()) >= 2 and (clause.endswith("?") or _ASKS.search(clause)):
                if found and not opens_a_matter(clause):
                    # "How is Chidi doing? Any news?": the news asked for is Chidi's
                    found[-1] = " ".join([found[-1], *context, clause])
                else:
                    found.append(" ".join([*context, clause]))
                context = []
            elif clause:
                context.append(clause)
    found = list(dict.fromkeys(found))
    if len(found) < 2:
        return [message.strip()]
    return [*found[:-1], " ".join([found[-1], *context])]


def is_english(text: str) -> bool:
    """A Latin word, and no kana or hangul."""
    return LATIN_WORD.search(text) is not None and not OTHER_CJK.search(text)


#: what the delegate says in English, by key (``{owner}``: the owner's name): the one catalogue of
#: every reply and note (epmem/language/phrases-en.yaml; every key is here, other languages may
#: lack some and say them in English).
PHRASES: dict[str, str] = load_phrases("en")

#: English words of the delegate's own frames: none may appear in a reply to a message in
#: another language (the facts themselves may hold English words: "NeurIPS", "offer").
FRAME = re.compile(
    r"Here's what I can share|Sorry, I can't help|I'll let .{1,60} know you asked|can only read text"
    r"|too long for me|faster than I can answer|I'm .{1,60}'s delegate|You're welcome|Bye for now",
    re.I,
)

ENGLISH = LanguageSpec(
    code="en",
    name="English",
    claims=is_english,
    kind=english_kind,
    addressed_to=addressed_to,
    parts=question_parts,
    questions=questions,
    relevance=load_settings("en"),
    phrases=PHRASES,
    refers_back=refers_back,
)
