"""Annotation: which policy category a statement belongs to, and how strict it may be made.

Three things live here, all deterministic and used by both backends:

* :func:`classify` (keywords only) and :class:`CategoryClassifier` (keywords, then similarity
  of the statement to each category's name, description and keywords with the offline
  embedder). When several categories fit, the deepest one wins: a statement that touches
  finances and hobbies is a finances statement as far as disclosure goes. Fail closed.
* :func:`clamp`: the rule that a model may only make a fact stricter, never looser. It is code,
  not a prompt instruction, so no model output can widen an audience the policy set.
* :class:`ContactNames`: resolving the names people use in chat ("Mamma", "Tara", "the family")
  to contact and group ids, for the exception cues in epmem/ingest/extract_rules.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from epmem.embedding.base import Embedder
from epmem.embedding.bilingual import CJK, has_cjk
from epmem.embedding.once import embed
from epmem.ingest.examples import Example, ExampleBank
from epmem.ingest.topics import TOPICS, VETO_TOPICS, credential_shaped, sensitive_topics
from epmem.policy.holder import PolicyHolder, ReadsPolicy
from epmem.policy.model import Domain, Policy
from epmem.textnorm import chinese_name_forms


@dataclass(frozen=True, slots=True)
class Annotation:
    category: str
    level: int
    domain: Domain | None
    matched: tuple[str, ...]
    #: how the category was chosen: example, keywords, topic, similarity, mundane or default.
    basis: str = "keywords"
    #: how sure the classifier is, 0..1.
    confidence: float = 1.0
    #: clear evidence: the annotation may be applied without asking the owner.
    clear: bool = True
    #: why, as short tokens ("keyword:health:surgery", "example:health:f3:0.91").
    evidence: tuple[str, ...] = ()


#: word boundaries that take a Chinese character for a boundary (Chinese sets no space around an
#: English word: "HR说offer下周发", "跟Tom说"); on text without Chinese they are \b and \w*.
_LATIN_START = f"(?<![^\\W{CJK}])"
_LATIN_END = f"(?![^\\W{CJK}])"
_LATIN_REST = f"[^\\W{CJK}]*"


@lru_cache(maxsize=4096)
def _keyword_pattern(keyword: str) -> re.Pattern[str]:
    if has_cjk(keyword):  # Chinese has no spaces: a keyword is found anywhere in a sentence ("申请转硕")
        return re.compile(re.escape(keyword.casefold()))
    if not re.match(r"\w", keyword):
        return re.compile(r"\b" + re.escape(keyword.casefold()) + r"\w*", re.IGNORECASE)
    # a word starts after a non-letter or a Chinese character ("HR说offer下周发")
    return re.compile(_LATIN_START + re.escape(keyword.casefold()) + _LATIN_REST, re.IGNORECASE)


def _keyword_hits(text: str, policy: Policy) -> list[tuple[int, str, tuple[str, ...]]]:
    folded = text.casefold()
    hits: list[tuple[int, str, tuple[str, ...]]] = []
    for name, cat in policy.categories.items():
        matched = tuple(k for k in cat.keywords if k.strip() and _keyword_pattern(k.strip()).search(folded))
        if matched:
            hits.append((cat.level, name, matched))
    return hits


def classify(text: str, policy: Policy) -> Annotation:
    """Keywords only: the deepest category with a keyword in the text. Without one, the default
    category is returned as a suggestion that is *not* clear (fail closed: see failclosed.py)."""
    hits = _keyword_hits(text, policy)
    if hits:
        level, name, matched = min(hits, key=lambda h: (h[0], -len(h[2]), h[1]))
        return Annotation(
            name,
            level,
            policy.categories[name].domain,
            matched,
            "keywords",
            0.8,
            True,
            tuple(f"keyword:{name}:{k}" for k in matched),
        )
    name = policy.default_category
    cat = policy.categories[name]
    return Annotation(name, cat.level, cat.domain, (), "default", 0.0, False, ())


@dataclass(frozen=True, slots=True)
class ClassifierConfig:
    """Thresholds, picked on the development scenarios (own/, the shared examples, storylines/)
    and reported on held-out ones. MiniLM cosines: 0.2-0.35 between a sentence and a matching
    category profile, under 0.15 for none; 0.8+ between two wordings of one statement."""

    #: an owner-confirmed example this similar files the fact the same way, without asking.
    example_sure: float = 0.85
    #: an example this similar is offered as the suggestion.
    example_hint: float = 0.55
    #: profile similarity below this says nothing.
    floor: float = 0.2
    #: categories within this of the best are plausible readings (the deepest is suggested).
    margin: float = 0.05
    #: a sensitive topic maps to the categories whose profile is this close to its description.
    topic_floor: float = 0.3
    #: positively mundane: the default category's profile beats every other by this much.
    mundane_margin: float = 0.03


class CategoryClassifier(ReadsPolicy):
    """Category evidence for one statement, nearest confirmed examples first.

    In order: the owner's own confirmed examples (epmem/ingest/examples.py), the policy's
    keywords, the built-in sensitive topics (epmem/ingest/topics/) mapped onto the policy's
    categories, and similarity to the categories' profiles. Each reading is a suggestion with a
    confidence; only some are *clear* (see :meth:`classify_many`), and what is not clear stays
    pending for the owner. When several categories fit, the deepest is suggested: a statement
    that touches finances and hobbies is a finances statement as far as disclosure goes.
    """

    def __init__(
        self,
        policy: Policy | PolicyHolder,
        embedder: Embedder | None = None,
        examples: ExampleBank | None = None,
        config: ClassifierConfig | None = None,
    ) -> None:
        self._policy = PolicyHolder.of(policy)
        self.embedder = embedder
        self.examples = examples
        self.config = config or ClassifierConfig()
        self._names = sorted(self.policy.categories)
        self._people = ContactNames(self._policy)
        self._vectors: np.ndarray | None = None
        self._topic_map: dict[str, list[str]] = {}
        if embedder is not None and self._names:
            self._vectors = embedder.embed([self.policy.categories[n].profile(n) for n in self._names])
            topics = embedder.embed([t.description for t in TOPICS])
            sims = topics @ self._vectors.T
            for t, row in zip(TOPICS, sims):
                if not t.maps:
                    continue
                best = float(row.max())
                self._topic_map[t.name] = [
                    self._names[j]
                    for j in np.argsort(-row)
                    if row[j] >= max(self.config.topic_floor, best - self.config.margin)
                ]

    def classify(self, text: str) -> Annotation:
        return self.classify_many([text])[0]

    def classify_many(self, texts: list[str]) -> list[Annotation]:
        """Clear readings, strongest first: a near-identical confirmed example; a policy keyword
        (unless a sensitive topic points to a stricter category, or the keyword is the
        default category's and the statement touches a sensitive topic). Everything else is a
        suggestion that is not clear."""
        if not texts:
            return []
        vectors = embed(self.embedder, texts) if self.embedder is not None else None
        sims = vectors @ self._vectors.T if vectors is not None and self._vectors is not None else None
        near = self.examples.nearest(vectors, 3) if self.examples is not None and vectors is not None else None
        out: list[Annotation] = []
        for i, text in enumerate(texts):
            out.append(self._one(text, sims[i] if sims is not None else None, near[i] if near is not None else []))
        return out

    def _ann(
        self,
        name: str,
        basis: str,
        confidence: float,
        clear: bool,
        evidence: Iterable[str],
        matched: tuple[str, ...] = (),
        level: int | None = None,
    ) -> Annotation:
        cat = self.policy.categories[name]
        return Annotation(
            name, cat.level if level is None else level, cat.domain, matched, basis, confidence, clear, tuple(evidence)
        )

    def _one(self, text: str, sims: np.ndarray | None, near: list[tuple[Example, float]]) -> Annotation:
        cats = self.policy.categories
        cfg = self.config
        if near and near[0][1] >= cfg.example_sure and near[0][0].label.category in cats:
            ex, score = near[0]
            lab = ex.label
            return Annotation(
                lab.category,
                lab.level,
                lab.domain,
                (),
                "example",
                round(score, 3),
                True,
                (f"example:{lab.category}:{ex.fact_id}:{score:.2f}",),
            )
        topics = sensitive_topics(text)
        topic_cats = self._topic_categories(topics, sims)
        topic_ev = [f"topic:{t}:{w}" for t, w in topics]
        if credential_shaped(text):
            never = [c for c in self._names if cats[c].never_share]
            if len(never) == 1:  # a password-shaped token: never shared, whatever the words around it
                return self._ann(never[0], "topic", 0.9, True, ("credential-shape", *topic_ev), level=0)
        kw = classify(text, self.policy)
        if kw.basis == "keywords":
            # a keyword that opens the fact beyond the closest circle must not win over a
            # sensitive topic that a stricter category covers
            stricter = [c for c in topic_cats if cats[c].level < kw.level] if kw.level >= 2 else []
            mundane_veto = kw.category == self.policy.default_category and topics
            # a private topic the keyword's category is not about (a hospital named in a parish
            # chat, a student's grades in a team's "game" news): the keyword does not settle it
            uncovered = kw.level >= 2 and any(
                t in VETO_TOPICS and kw.category not in self._topic_map.get(t, []) for t, _ in topics
            )
            # a keyword that names a person ("mum", "mãe", a contact's name) says who, not what:
            # "it's just the course, mãe" is not family news
            uncovered = uncovered or all(self._people.find(k) for k in kw.matched)
            if not stricter and not mundane_veto and not uncovered:
                return replace(kw, evidence=(*kw.evidence, *topic_ev))
            pool = stricter or ([kw.category, *topic_cats] if uncovered else [kw.category])
            suggestion = min(pool, key=lambda c: (cats[c].level, c))
            return self._ann(suggestion, "keywords", 0.4, False, (*kw.evidence, *topic_ev), kw.matched)
        if near and near[0][1] >= cfg.example_hint and near[0][0].label.category in cats:
            ex, score = near[0]
            lab = ex.label
            return Annotation(
                lab.category,
                lab.level,
                lab.domain,
                (),
                "example",
                round(score, 3),
                False,
                (f"example:{lab.category}:{ex.fact_id}:{score:.2f}", *topic_ev),
            )
        if topic_cats:
            name = min(topic_cats, key=lambda c: (cats[c].level, c))
            return self._ann(name, "topic", 0.4, False, (*topic_ev, f"topic-category:{name}"))
        similar = self._by_similarity(sims) if sims is not None else None
        if topics:
            # sensitive, but no category fits: the strictest reading is the suggestion, but not a
            # never-share one on no evidence (a secret is not a password: the owner must be asked)
            shareable = [c for c in cats if not cats[c].never_share] or list(cats)
            name = similar or min(shareable, key=lambda c: (cats[c].level, c))
            return self._ann(name, "similarity" if similar else "default", 0.2, False, topic_ev)
        if similar is not None and similar != self.policy.default_category:
            score = float(sims[self._names.index(similar)]) if sims is not None else 0.0
            return self._ann(similar, "similarity", round(score, 3), False, (f"similar:{similar}:{score:.2f}",))
        name = self.policy.default_category
        if sims is None or not self._plainly(name, sims):
            # nothing says what it is about: a suggestion, not a verdict (default-is-mundane)
            return self._ann(similar or name, "similarity", 0.2, False, ("unclear",))
        return self._ann(name, "mundane", 0.5, True, (f"mundane:{name}",))

    def _plainly(self, name: str, sims: np.ndarray) -> bool:
        """Positively mundane: the default category's profile is the closest, by a margin."""
        j = self._names.index(name)
        others = [float(sims[k]) for k in range(len(self._names)) if k != j]
        best_other = max(others) if others else -1.0
        return float(sims[j]) >= self.config.floor and float(sims[j]) >= best_other + self.config.mundane_margin

    def _topic_categories(self, topics: Sequence[tuple[str, str]], sims: np.ndarray | None) -> list[str]:
        found: list[str] = []
        for t, _ in topics:
            found += [c for c in self._topic_map.get(t, []) if c not in found]
        return found

    def _by_similarity(self, sims: np.ndarray) -> str | None:
        best = float(sims.max())
        if best < self.config.floor:
            return None
        plausible = [self._names[j] for j in range(len(self._names)) if sims[j] >= best - self.config.margin]
        cats = self.policy.categories
        return min(plausible, key=lambda n: (cats[n].level, -float(sims[self._names.index(n)]), n))


# --------------------------------------------------------------------------- stricter only


@dataclass(frozen=True, slots=True)
class Clamped:
    category: str
    level: int
    domain: Domain | None
    #: what the clamp changed, for logs and the owner's /pending view.
    notes: tuple[str, ...] = ()


def clamp(
    policy: Policy, category: str | None, level: int | None, domain: str | None, fallback: Annotation | None
) -> Clamped:
    """Apply the stricter-only rule to a model's (or a cue's) annotation.

    - an unknown category is replaced by ``fallback`` (the rules classification of the text;
      only read then, so a caller whose category is known may pass None);
    - level = min(proposed level, the category's level); never-share categories are level 0;
    - the category's domain is never dropped or swapped: a model may add a domain to a
      domain-free category (narrower audience), nothing else.
    Only the owner (state ``owner-set``) may loosen an annotation.
    """
    notes: list[str] = []
    cat_name = category if category in policy.categories else None
    if cat_name is None:
        if fallback is None:
            raise ValueError(f"category {category!r} is not in the policy and no fallback reading was given")
        if category is not None:
            notes.append(f"unknown category {category!r} -> {fallback.category}")
        cat_name = fallback.category
    cat = policy.categories[cat_name]
    proposed = cat.level if level is None else level
    final_level = min(proposed, cat.level)
    if proposed > cat.level:
        notes.append(f"level {proposed} looser than category {cat_name} (L{cat.level}) -> L{cat.level}")
    if cat.never_share:
        final_level = 0
    final_domain: Domain | None
    if cat.domain is not None:
        final_domain = cat.domain
        if domain is not None and domain != cat.domain:
            notes.append(f"domain {domain} ignored: category {cat_name} is {cat.domain}")
    else:
        final_domain = domain if domain in ("work", "life") else None  # type: ignore[assignment]
    return Clamped(cat_name, final_level, final_domain, tuple(notes))


# --------------------------------------------------------------------------- names


#: relationship words people use in chat, mapped to words found in relationship labels.
_KIN = {
    "mum": "mother",
    "mom": "mother",
    "mother": "mother",
    "mamma": "mother",
    "mama": "mother",
    "dad": "father",
    "father": "father",
    "papa": "father",
    "wife": "wife",
    "husband": "husband",
    "partner": "partner",
    "fiance": "fianc",
    "fiancé": "fianc",
    "fiancee": "fianc",
    "fiancée": "fianc",
    "boss": "manager",
    "manager": "manager",
    "sister": "sister",
    "brother": "brother",
    "lawyer": "lawyer",
    "neighbour": "neighbour",
    "neighbor": "neighbour",
}


#: Chinese kinship and address words -> characters found in a Chinese relationship label
#: ("母亲", "父亲", "老婆", "博士导师").
_KIN_ZH = {
    "妈妈": ("母", "妈"),
    "老妈": ("母", "妈"),
    "我妈": ("母", "妈"),
    "阿妈": ("母", "妈"),
    "妈": ("母", "妈"),
    "爸爸": ("父", "爸"),
    "老爸": ("父", "爸"),
    "我爸": ("父", "爸"),
    "阿爸": ("父", "爸"),
    "爸": ("父", "爸"),
    "老婆": ("妻", "老婆", "太太"),
    "老公": ("丈夫", "老公", "先生"),
    "女朋友": ("女朋友", "女友"),
    "男朋友": ("男朋友", "男友"),
    "导师": ("导师",),
    "老板": ("老板", "上司", "经理", "导师"),
    "领导": ("领导", "上司", "经理"),
}
#: plural relationship words: everyone either word names ("my parents" -> mother and father).
_PLURAL_KIN = {
    "parents": ("mother", "father"),
    "folks": ("mother", "father"),
    "mum and dad": ("mother", "father"),
    "mom and dad": ("mother", "father"),
    "爸妈": ("妈妈", "爸爸"),
    "父母": ("妈妈", "爸爸"),
    "爸爸妈妈": ("妈妈", "爸爸"),
    "老爸老妈": ("妈妈", "爸爸"),
}


class ContactNames(ReadsPolicy):
    """Names, first names, aliases, ids, group ids and relationship words -> contact/group ids.

    The index is built once: names, aliases and groups come from the policy file, which a
    refresh (contact level, domain, identities) does not change.
    """

    def __init__(self, policy: Policy | PolicyHolder) -> None:
        self._policy = PolicyHolder.of(policy)
        index: dict[str, set[str]] = {}

        def add(key: str, cid: str) -> None:
            key = key.casefold().strip()
            if key:
                index.setdefault(key, set()).add(cid)

        for cid, c in self.policy.contacts.items():
            add(cid, cid)
            add(c.name, cid)
            add(c.name.split()[0], cid)
            for alias in c.aliases:
                add(alias, cid)
            for word in re.findall(r"\w+", c.relationship.casefold()):
                for kin, label in _KIN.items():
                    if label in word:
                        add(kin, cid)
            for kin, marks in _KIN_ZH.items():
                if any(m in c.relationship for m in marks):
                    add(kin, cid)
            for form in chinese_name_forms(c.name.strip()):
                add(form, cid)
        for gid in self.policy.groups:
            add(gid, gid)
            add(gid.replace("_", " "), gid)
        # an ambiguous first name ("Lin" twice) resolves to nobody rather than to a guess
        self._index = {k: next(iter(v)) for k, v in index.items() if len(v) == 1}
        # a plural that names several people at once ("my parents"): all of them, never a guess
        self._plural = {
            k: sorted(index.get(a, set()) | index.get(b, set()))
            for k, (a, b) in _PLURAL_KIN.items()
            if index.get(a) or index.get(b)
        }
        for k in self._plural:
            self._index.setdefault(k, k)
        longest = sorted(self._index, key=len, reverse=True)
        # a Chinese name sits inside a sentence with no space around it ("别让李老师知道"): no word
        # boundary is asked of it; every other name must be a whole word
        cjk = "|".join(re.escape(k) for k in longest if has_cjk(k))
        latin = "|".join(re.escape(k) for k in longest if not has_cjk(k))
        self._pattern = (
            re.compile(
                _LATIN_START
                + r"(?:(?:(?:my|our|the|his|her)\s+)?("
                + (latin or "(?!)")
                + ")"
                + _LATIN_END
                + "|("
                + (cjk or "(?!)")
                + "))",
                re.IGNORECASE,
            )
            if longest
            else None
        )

    def find(self, text: str) -> list[str]:
        """Every contact or group named in ``text``, in order, without repeats."""
        if self._pattern is None:
            return []
        found: list[str] = []
        for m in self._pattern.finditer(text):
            key = (m.group(1) or m.group(2)).casefold()
            for cid in self._plural.get(key, [self._index.get(key)]):
                if cid is not None and cid not in found:
                    found.append(cid)
        return found

    def strip(self, text: str) -> str:
        """``text`` without the names it holds ("Not a word to Tom" -> "Not a word to "): what
        is left says whether a clause holds more than who may know."""
        return self._pattern.sub(" ", text) if self._pattern is not None else text

    def name_of(self, cid: str) -> str:
        contact = self.policy.contacts.get(cid)
        return contact.name.split()[0] if contact else cid
