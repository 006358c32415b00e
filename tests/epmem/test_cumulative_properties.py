"""The composite rule across replies, on generated policies, links and reply sequences.

The invariant (issue 23): no reader ever ends up told, across replies, a set of facts of one
matter (one event, or linked events) that one reply could not tell them. Each generated reply is
judged the way the engine judges it (epmem/reply/engine.py): facts allowed one by one for every
reader, then :func:`limit_to_composite` with what each reader was told before of the same
matters (the ledger here is the sequence's own: every kept fact reaches every reader).
200 cases per property by default, 2,000 with ``HYPOTHESIS_PROFILE=full`` (tests/conftest.py).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from epmem.memory.facts import Fact
from epmem.memory.links import Matters
from epmem.policy.calculus import Composite, Gate, Recipient, Rulebook, audience_allows
from epmem.policy.model import Policy
from epmem.reply.composite import limit_to_composite
from epmem.reply.cumulative import Earlier, Known, Prior
from tests.epmem.test_calculus_properties import CONTACT_IDS, GROUP_IDS, domains, facts, policies

EXAMPLES = settings(deadline=None)
EVENTS = ["e0", "e1", "e2", "e3"]


@st.composite
def open_facts(draw: st.DrawFn, fid: str) -> Fact:
    entries = st.sampled_from(CONTACT_IDS + GROUP_IDS)
    return Fact(
        id=fid,
        text="x",
        event_id="e0",
        category="open",
        level=draw(st.integers(0, 4)),
        domain=draw(domains),
        whitelist=draw(st.lists(entries, max_size=4, unique=True)),
        blacklist=draw(st.lists(entries, max_size=1, unique=True)),
        state="owner-set",
    )


@st.composite
def worlds(draw: st.DrawFn) -> tuple[Policy, list[Fact], Matters]:
    policy = draw(policies())
    # mostly open facts, so that readers are told enough for the composites to matter; some
    # drawn like the calculus properties' (closed, pending, never-share) too
    made = [
        draw(st.one_of(open_facts(f"f{i}"), facts(f"f{i}"))).model_copy(
            update={"event_id": draw(st.sampled_from(EVENTS))}
        )
        for i in range(draw(st.integers(2, 7)))
    ]
    links = draw(st.lists(st.tuples(st.sampled_from(EVENTS), st.sampled_from(EVENTS)), max_size=3))
    return policy, made, Matters.of(links)


replies = st.lists(
    st.tuples(st.lists(st.sampled_from(CONTACT_IDS), min_size=1, max_size=2, unique=True), st.permutations(range(7))),
    min_size=1,
    max_size=6,
)


def run(
    policy: Policy, made: list[Fact], matters: Matters, sequence: list[tuple[list[str], list[int]]], per_matter: bool
) -> tuple[Rulebook, dict[str, Gate], dict[str, list[str]]]:
    """Every reply of ``sequence`` judged as the engine does; returns who was told what."""
    book = Rulebook(policy)
    gates = {f.id: book.gate(f) for f in made}
    matter_of = {f.id: matters.matter(f.event_id) for f in made}
    told: dict[str, list[str]] = {}
    for n, (readers, order) in enumerate(sequence):
        audience = [book.recipient(c) for c in readers]
        chosen = [made[i] for i in order if i < len(made) and audience_allows(gates[made[i].id], audience)]
        known = {
            r: [Prior(gates[f], matter_of[f], Known(f, "", f"r{n}", "", "told")) for f in told.get(r, [])]
            for r in readers
        }
        kept, _ = limit_to_composite(
            [gates[f.id] for f in chosen], audience, Earlier(matters, known), matter_of, per_matter
        )
        for r in readers:
            told.setdefault(r, []).extend(f for f in kept if f not in told[r])
    return book, gates, told


def by_matter(facts_told: list[str], made: list[Fact], matters: Matters) -> list[list[str]]:
    event = {f.id: f.event_id for f in made}
    groups: dict[str, list[str]] = {}
    for f in facts_told:
        groups.setdefault(matters.matter(event[f]), []).append(f)
    return list(groups.values())


@EXAMPLES
@given(worlds(), replies, st.booleans())
def test_nobody_is_told_across_replies_what_one_reply_could_not_tell_them(
    world: tuple[Policy, list[Fact], Matters], sequence: list[tuple[list[str], list[int]]], per_matter: bool
) -> None:
    policy, made, matters = world
    book, gates, told = run(policy, made, matters, sequence, per_matter)
    for reader, facts_told in told.items():
        r: Recipient = book.recipient(reader)
        for group in by_matter(facts_told, made, matters):
            assert Composite.of([gates[f] for f in group]).allows(r), (reader, group)


@EXAMPLES
@given(worlds(), st.sampled_from(CONTACT_IDS))
def test_unrelated_facts_never_hold_each_other_back_across_replies(
    world: tuple[Policy, list[Fact], Matters], reader: str
) -> None:
    """One fact per reply, to one reader: a fact is held back exactly when what the reader was
    told of ITS matter fails with it (a colleague told about a wedding still hears a date)."""
    policy, made, matters = world
    _, gates, told = run(policy, made, matters, [([reader], [i]) for i in range(len(made))], True)
    r = Rulebook(policy).recipient(reader)
    expected: list[str] = []
    for f in made:
        if not audience_allows(gates[f.id], [r]):
            continue
        same = [
            t
            for t in expected
            if matters.matter(next(x.event_id for x in made if x.id == t)) == matters.matter(f.event_id)
        ]
        if Composite.of([gates[x] for x in [*same, f.id]]).allows(r):
            expected.append(f.id)
    assert told.get(reader, []) == expected
