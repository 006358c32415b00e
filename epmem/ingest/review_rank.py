"""Which facts the owner is asked about, together with which, and in what order.

The owner's patience is the scarce thing, so one answer should settle as much as it honestly
can, and the questions asked should be the ones where the delegate's own guess is most likely
wrong about something that matters.

- **One question per event.** The rules cut one message into several facts ("It's atrial
  fibrillation." / "Ablation on 2 June.") and the same news told in another chat becomes
  another fact (the distiller links it to the same event). The owner is shown them together and
  one answer applies to all of them: :func:`events` groups the facts of one message, and the facts
  of one event, truth and cover apart (a cover never gets its truth's audience).
- **Stakes, not only state.** :func:`stakes` estimates how likely the annotation a fact carries
  now is wrong in a way that matters: a private topic (health, money, work moves...) whose
  audience the rules guessed, someone else's matter kept to the teller's context, an audience
  read from a cue; a pending fact with a policy keyword to confirm. A fact filed on its keyword
  alone, a fact positively judged mundane and a never-shared secret are not worth a question.
  Measured on the development scenarios (benchmarks/tools/review_gaps.py): annotations with a
  sensitive topic or a teller are wrong about half the time; keyword-only ones rarely.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from epmem.memory.facts import Fact
from epmem.policy.model import Policy

#: evidence of someone else's passing remark, kept so nothing said is lost (epmem/ingest/extract_rules.py).
PASSING = "said-in-passing"
#: evidence that gives the owner something concrete to confirm on a pending fact.
CONCRETE = ("keyword:", "topic:", "example:", "cue:", "context:")
#: evidence that the audience or category of an annotated fact was guessed from words.
GUESSED = ("topic:", "context:", "cue:")


def _has(fact: Fact, prefixes: tuple[str, ...]) -> bool:
    return any(e.startswith(prefixes) for e in fact.evidence)


def stakes(fact: Fact, policy: Policy) -> float:
    """How much an owner's answer about this fact is likely to change, 0..1 (0: not worth asking).

    A sum of independent reasons, each worth what it was measured to cost on the development
    scenarios (how often the rules' annotation was wrong when the reason was present):
    a private topic the classifier saw (0.4), someone else's matter kept to the context it was
    told in (0.25), a secrecy or audience cue (0.1), a pending fact with a policy keyword (0.2);
    0.1 for having anything concrete at all."""
    if fact.state == "owner-set":
        return 0.0
    cat = policy.categories.get(fact.category or "")
    if cat is not None and cat.never_share or _has(fact, ("mundane:",)):
        return 0.0  # never shared whatever the owner says / positively judged mundane
    if fact.state == "pending" and not _has(fact, CONCRETE):
        return 0.0  # a fragment with nothing to confirm: it stays private without a question
    if fact.state == "annotated" and not _has(fact, GUESSED):
        return 0.0  # filed on a policy keyword alone: the policy already says who may know
    score = 0.1
    if _has(fact, ("topic:",)):
        score += 0.4
    if _has(fact, ("context:",)):
        score += 0.25
    if _has(fact, ("cue:",)):
        score += 0.1
    if fact.state == "pending" and _has(fact, ("keyword:",)):
        score += 0.2
    return min(score, 0.9)


def conversations(facts: Iterable[Fact]) -> int:
    """How many conversations the facts came from: a group chat's sub-sessions (``<chat>~<person>``,
    epmem/memory/sessions.py) are one conversation; a fact with no session (``/remember``, an
    import of hand-written facts) is one of its own."""
    return len({f.session_id.split("~", 1)[0] if f.session_id else f"fact:{f.id}" for f in facts})


def _turn(fact: Fact) -> str | None:
    return fact.source_turns[0] if fact.source_turns else None


def events(facts: Sequence[Fact]) -> list[list[Fact]]:
    """The facts grouped by what one answer should settle: the facts of one message and the
    facts of one event (the same news found again in other chats), each group one version
    (truth or cover). Groups keep the order of ``facts``; so do the facts inside them."""
    parent = list(range(len(facts)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first: dict[tuple[str, str, str], int] = {}
    for i, f in enumerate(facts):
        keys = [("event", f.event_id, f.version)]
        turn = _turn(f)
        if turn is not None:
            keys.append(("turn", turn, f.version))
        for key in keys:
            j = first.setdefault(key, i)
            a, b = find(i), find(j)
            if a != b:
                parent[max(a, b)] = min(a, b)
    groups: dict[int, list[Fact]] = {}
    for i, f in enumerate(facts):
        groups.setdefault(find(i), []).append(f)
    return list(groups.values())


def counted(groups: Sequence[list[Fact]]) -> list[list[Fact]]:
    """The events that count towards how many questions the owner should be asked: other
    people's passing remarks (kept so nothing said is lost) may be asked about, but they do
    not make the owner's patience any longer."""
    return [g for g in groups if not all(PASSING in f.evidence for f in g)]


def open_members(group: Iterable[Fact]) -> list[Fact]:
    """What an answer may still change: the owner's earlier answers stand."""
    return [f for f in group if f.state != "owner-set"]
