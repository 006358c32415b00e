"""The invariants of docs/DESIGN.md sec. 3, each checked on generated cases (200 each by default,
2,000 each with ``HYPOTHESIS_PROFILE=full``; see tests/conftest.py).

Gates are built through the real Rulebook from generated policies and facts, so group
expansion and exception folding are under test too, not only the verdict function.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from epmem.policy.calculus import (
    HEARD_OFF,
    STRANGER,
    HeardIt,
    Recipient,
    Rulebook,
    allowed_set,
    audience_allows,
    judge,
    judge_composite,
)
from epmem.memory.facts import Fact
from epmem.policy.model import Category, Contact, Domain, Policy, PolicyException

#: how many cases each property gets comes from the hypothesis profile (tests/conftest.py):
#: 200 in the default run and CI, 2,000 with HYPOTHESIS_PROFILE=full.
EXAMPLES = settings(deadline=None)

CONTACT_IDS = [f"c{i}" for i in range(8)]
GROUP_IDS = ["g0", "g1", "g2"]
domains: st.SearchStrategy[Domain | None] = st.sampled_from(["work", "life", None])


@st.composite
def policies(draw: st.DrawFn) -> Policy:
    contacts = {cid: Contact(name=cid, level=draw(st.integers(1, 4)), domain=draw(domains)) for cid in CONTACT_IDS}
    groups = {
        gid: draw(st.lists(st.sampled_from(CONTACT_IDS), min_size=1, max_size=4, unique=True)) for gid in GROUP_IDS
    }
    categories = {
        "open": Category(level=draw(st.integers(0, 4)), domain=draw(domains)),
        "secret": Category(level=0, never_share=True),
    }
    return Policy(contacts=contacts, groups=groups, categories=categories, default_category="open")


entries = st.sampled_from(CONTACT_IDS + GROUP_IDS)


@st.composite
def facts(draw: st.DrawFn, fid: str = "f0") -> Fact:
    return Fact(
        id=fid,
        text="x",
        event_id=draw(st.sampled_from(["e0", "e1"])),
        category=draw(st.sampled_from(["open", "open", "open", "secret"])),
        level=draw(st.integers(0, 4)),
        domain=draw(domains),
        whitelist=draw(st.lists(entries, max_size=3, unique=True)),
        blacklist=draw(st.lists(entries, max_size=2, unique=True)),
        state=draw(st.sampled_from(["annotated", "annotated", "owner-set", "pending"])),
        closed=draw(st.booleans()),
        heard_by=draw(st.lists(st.sampled_from(CONTACT_IDS), max_size=3, unique=True)),
        heard_in="the chat of 2026-03-01",
    )


def recipients(policy: Policy) -> list[Recipient]:
    book = Rulebook(policy)
    return [book.recipient(c) for c in CONTACT_IDS] + [STRANGER]


@EXAMPLES
@given(policies(), facts())
def test_blacklisted_recipient_is_never_allowed(policy: Policy, fact: Fact) -> None:
    book = Rulebook(policy)
    gate = book.gate(fact)
    for entry in fact.blacklist:
        for cid in book.members(entry):
            assert not judge(gate, book.recipient(cid)).allowed
            assert not judge_composite([gate], book.recipient(cid)).allowed


@EXAMPLES
@given(policies(), facts(), entries)
def test_adding_a_whitelist_entry_never_removes_a_permission(policy: Policy, fact: Fact, entry: str) -> None:
    book = Rulebook(policy)
    before = book.gate(fact)
    after = book.gate(fact.model_copy(update={"whitelist": [*fact.whitelist, entry]}))
    for r in recipients(policy):
        if judge(before, r).allowed:
            assert judge(after, r).allowed


@EXAMPLES
@given(policies(), facts(), entries, st.sampled_from(["fact", "event", "category"]))
def test_adding_a_blacklist_entry_never_adds_a_permission(policy: Policy, fact: Fact, entry: str, kind: str) -> None:
    book = Rulebook(policy)
    before = book.gate(fact)
    listed = book.gate(fact.model_copy(update={"blacklist": [*fact.blacklist, entry]}))
    target = {"fact": fact.id, "event": fact.event_id, "category": fact.category}[kind]
    exception = PolicyException.model_validate({"effect": "deny", "who": [entry], kind: target})
    by_exception = Rulebook(policy, [exception]).gate(fact)
    for r in recipients(policy):
        if not judge(before, r).allowed:
            assert not judge(listed, r).allowed
            assert not judge(by_exception, r).allowed
    for cid in book.members(entry):
        assert not judge(listed, book.recipient(cid)).allowed


@EXAMPLES
@given(policies(), st.lists(facts(), min_size=2, max_size=4))
def test_composite_is_never_more_permissive_than_its_parts(policy: Policy, fs: list[Fact]) -> None:
    book = Rulebook(policy)
    gates = [book.gate(f.model_copy(update={"id": f"f{i}"})) for i, f in enumerate(fs)]
    people = recipients(policy)
    together = allowed_set(gates, people)
    for gate in gates:
        assert together <= allowed_set([gate], people)


@EXAMPLES
@given(policies(), facts(), st.sampled_from(GROUP_IDS))
def test_group_stands_for_its_members_and_audience_is_the_intersection(policy: Policy, fact: Fact, group: str) -> None:
    book = Rulebook(policy)
    members = sorted(book.members(group))
    # a group in a list is exactly its members in that list
    by_group = book.gate(fact.model_copy(update={"whitelist": [group]}))
    by_members = book.gate(fact.model_copy(update={"whitelist": members}))
    for r in recipients(policy):
        assert judge(by_group, r).allowed == judge(by_members, r).allowed
    # a group chat's allowed set is the intersection of its members'
    gate = book.gate(fact)
    audience = [book.recipient(m) for m in members]
    allowed_individually = allowed_set([gate], recipients(policy))
    assert audience_allows(gate, audience) == ({r.id for r in audience} <= allowed_individually)


@EXAMPLES
@given(policies(), facts())
def test_level_zero_without_whitelist_is_never_allowed(policy: Policy, fact: Fact) -> None:
    book = Rulebook(policy)
    zero = fact.model_copy(update={"level": 0, "whitelist": [], "heard_by": []})
    gate = book.gate(zero)
    for r in recipients(policy):
        assert not judge(gate, r).allowed
    pending = book.gate(fact.model_copy(update={"state": "pending", "whitelist": [], "heard_by": []}))
    for r in recipients(policy):
        assert not judge(pending, r).allowed


@EXAMPLES
@given(policies(), st.lists(facts(), min_size=1, max_size=4), st.randoms(use_true_random=False))
def test_verdict_does_not_depend_on_order(policy: Policy, fs: list[Fact], rnd: object) -> None:
    import random

    assert isinstance(rnd, random.Random)
    book = Rulebook(policy)
    gates = [book.gate(f.model_copy(update={"id": f"f{i}"})) for i, f in enumerate(fs)]
    people = recipients(policy)
    shuffled_gates, shuffled_people = gates[:], people[:]
    rnd.shuffle(shuffled_gates)
    rnd.shuffle(shuffled_people)
    assert allowed_set(gates, people) == allowed_set(shuffled_gates, shuffled_people)


@EXAMPLES
@given(policies(), facts())
def test_never_share_is_closed_to_everyone_whatever_the_exceptions(policy: Policy, fact: Fact) -> None:
    secret = fact.model_copy(update={"category": "secret", "whitelist": CONTACT_IDS + GROUP_IDS})
    book = Rulebook(policy, [PolicyException(effect="allow", who=CONTACT_IDS, fact=fact.id)])
    gate = book.gate(secret)
    for r in recipients(policy):
        verdict = judge(gate, r)
        assert not verdict.allowed and verdict.rule == 0


@EXAMPLES
@given(policies(), facts(), st.lists(entries, min_size=1, max_size=4, unique=True))
def test_a_closed_or_pending_fact_opens_only_by_a_decision_about_it(policy: Policy, fact: Fact, who: list[str]) -> None:
    """Closed until the owner says: whatever the category says and whatever category-wide
    exceptions the owner made, a closed (or pending) fact reaches exactly the people its own
    whitelist and the exceptions about this fact or its event name, and, while undecided, the
    people who heard it said; nobody else."""
    closed = fact.model_copy(update={"closed": True})
    wide = Rulebook(policy, [PolicyException(effect="allow", who=who, category=fact.category or "open")])
    plain = Rulebook(policy)
    for r in recipients(policy):
        assert judge(wide.gate(closed), r).allowed == judge(plain.gate(closed), r).allowed
        heard = closed.undecided and r.id in closed.heard_by
        named = any(r.id in plain.members(e) for e in [*closed.whitelist, *([r.id] if heard else [])]) and not any(
            r.id in plain.members(e) for e in closed.blacklist
        )
        assert judge(plain.gate(closed), r).allowed == (named and not plain.is_never_share(closed.category))
    pending = fact.model_copy(update={"state": "pending"})
    for r in recipients(policy):
        assert judge(wide.gate(pending), r).allowed == judge(plain.gate(pending), r).allowed


@EXAMPLES
@given(policies(), facts())
def test_having_heard_it_only_adds_and_only_what_was_heard(policy: Policy, fact: Fact) -> None:
    """Heard it from you never removes a permission; it opens a fact only to someone in its
    ``heard_by``, while the owner has not decided, never a never-share fact or a denied reader."""
    on, off = Rulebook(policy), Rulebook(policy, heard=HEARD_OFF)
    for r in recipients(policy):
        with_heard, without = judge(on.gate(fact), r).allowed, judge(off.gate(fact), r).allowed
        assert without <= with_heard
        if with_heard and not without:
            assert fact.undecided and r.id in fact.heard_by
            assert not on.is_never_share(fact.category)
            assert not any(r.id in on.members(e) for e in fact.blacklist)


@EXAMPLES
@given(policies(), st.lists(facts(), min_size=2, max_size=4))
def test_having_heard_the_parts_never_opens_a_composite(policy: Policy, fs: list[Fact]) -> None:
    """Hearing two things said does not make their combination the owner's to tell: a
    composite is judged as if nobody had heard anything."""
    fs = [f.model_copy(update={"id": f"f{i}"}) for i, f in enumerate(fs)]
    on, off = Rulebook(policy), Rulebook(policy, heard=HEARD_OFF)
    people = recipients(policy)
    assert allowed_set([on.gate(f) for f in fs], people) == allowed_set([off.gate(f) for f in fs], people)


@EXAMPLES
@given(policies(), facts(), st.sampled_from(CONTACT_IDS))
def test_the_owner_turns_heard_it_off_per_fact_per_contact_or_entirely(policy: Policy, fact: Fact, who: str) -> None:
    off = Rulebook(policy, heard=HEARD_OFF)
    by_fact = Rulebook(policy, heard=HeardIt(off_facts=frozenset({fact.id})))
    by_event = Rulebook(policy, heard=HeardIt(off_facts=frozenset({fact.event_id})))
    by_contact = Rulebook(policy, heard=HeardIt(off_contacts=frozenset({who})))
    for r in recipients(policy):
        expected = judge(off.gate(fact), r).allowed
        assert judge(by_fact.gate(fact), r).allowed == expected
        assert judge(by_event.gate(fact), r).allowed == expected
        if r.id == who:
            assert judge(by_contact.gate(fact), r).allowed == expected
