"""The review queue on a real fact memory (Qdrant Edge in a temp folder, MiniLM)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from epmem.embedding.minilm import default_embedder
from epmem.ingest.annotate import CategoryClassifier
from epmem.ingest.examples import ExampleBank
from epmem.ingest.review import ReviewAnswer, ReviewError, ReviewQueue
from epmem.memory.facts import Fact
from epmem.memory.recall import FactMemory, SubjectNormalizer
from epmem.policy.calculus import STRANGER, Rulebook, judge
from epmem.policy.model import Domain, category_profiles
from epmem.store.edge import EdgeStore
from tests.epmem.test_extract_rules import POLICY


def pending(
    fid: str,
    text: str,
    category: str,
    level: int,
    domain: Domain | None = None,
    proposed: list[str] | None = None,
    blacklist: list[str] | None = None,
    session: str = "s1",
) -> Fact:
    return Fact(
        id=fid,
        text=text,
        event_id=f"e-{fid}",
        session_id=session,
        category=category,
        level=level,
        domain=domain,
        state="pending",
        confidence=0.3,
        evidence=[f"topic:{category}:x"],
        proposed_whitelist=proposed or [],
        blacklist=blacklist or [],
    )


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[FactMemory]:
    store = EdgeStore(tmp_path / "qdrant", "tenant")
    mem = await FactMemory(
        store,
        default_embedder(),
        SubjectNormalizer([POLICY.owner.name]),
        None,
        category_profiles(dict(POLICY.categories)),
    ).open()
    try:
        yield mem
    finally:
        await store.close()


def queue(memory: FactMemory) -> ReviewQueue:
    examples = ExampleBank(memory.embedder)
    classifier = CategoryClassifier(POLICY, memory.embedder, examples=examples)
    return ReviewQueue(POLICY, memory, examples, classifier=classifier)


def allowed(fact: Fact, who: str) -> bool:
    rb = Rulebook(POLICY)
    return judge(rb.gate(fact), STRANGER if who == "stranger" else rb.recipient(who)).allowed


async def test_the_guess_that_would_expose_most_people_is_asked_first(memory: FactMemory) -> None:
    await memory.add(
        [
            pending("a", "Sam's debt is paid off.", "money", 0),
            pending("b", "Sam hurt a knee at the gym.", "health", 1, "life"),
            pending("c", "Sam is repainting the fence.", "misc", 4),
        ]
    )
    q = queue(memory)
    assert await q.waiting() == 3
    batch = await q.next_batch(2)
    assert [x.fact_id for x in batch] == ["c", "b"]
    assert batch[0].exposure > batch[1].exposure > 0
    keys = [o.key for o in batch[1].options]
    assert keys[0] == "ok" and "private" in keys and "who" in keys and "skip" in keys
    assert all(k.startswith("c:") for k in keys[1:-3]) and "c:health" not in keys


async def test_an_answer_applies_at_once_and_is_audited(memory: FactMemory) -> None:
    await memory.add([pending("b", "Sam hurt a knee at the gym.", "health", 1, "life", proposed=["owen"])])
    q = queue(memory)
    applied = await q.apply(ReviewAnswer.from_key("b", "ok"))
    fact = await memory.get("b")
    assert fact is not None and fact.state == "owner-set" and fact.whitelist == ["owen"] and fact.level == 1
    assert allowed(fact, "owen") and allowed(fact, "joan") and not allowed(fact, "tom")
    assert applied.audit["action"] == "review" and applied.audit["from"]["state"] == "pending"
    assert applied.audit["to"] == {
        "category": "health",
        "level": 1,
        "domain": "life",
        "whitelist": ["owen"],
        "blacklist": [],
        "state": "owner-set",
    }
    assert await q.waiting() == 0


async def test_keep_private_and_who_may_know(memory: FactMemory) -> None:
    await memory.add(
        [
            pending("c", "Sam is repainting the fence.", "misc", 4, proposed=["kira"], blacklist=["vic"]),
            pending("d", "Sam's brother is moving to Leeds.", "misc", 4, session="s2"),
        ]
    )
    q = queue(memory)
    await q.apply(ReviewAnswer.private("c"))
    fact = await memory.get("c")
    assert fact is not None and (fact.level, fact.whitelist, fact.blacklist) == (0, [], ["vic"])
    assert not allowed(fact, "stranger") and not allowed(fact, "kira")
    await q.apply(ReviewAnswer.set("d", "health", level=0, whitelist=["family"], blacklist=["joan"]))
    fact = await memory.get("d")
    assert fact is not None and allowed(fact, "kira") and not allowed(fact, "joan") and not allowed(fact, "owen")


async def test_a_bad_answer_changes_nothing(memory: FactMemory) -> None:
    await memory.add([pending("c", "Sam is repainting the fence.", "misc", 4)])
    q = queue(memory)
    for answer in (
        ReviewAnswer.set("c", "misc", whitelist=["nobody"]),
        ReviewAnswer.choose("c", "gossip"),
        ReviewAnswer.set("c", "secrets", whitelist=["kira"]),
        ReviewAnswer.set("zz", "misc"),
    ):
        with pytest.raises(ReviewError):
            await q.apply(answer)
    with pytest.raises(ReviewError):
        ReviewAnswer.from_key("c", "whatever")
    fact = await memory.get("c")
    assert fact is not None and fact.state == "pending"
    # a never-share category drops whitelists the suggestion carried
    await memory.add([pending("p", "Sam's PIN is 4411.", "misc", 4, proposed=["kira"])])
    await q.apply(ReviewAnswer.choose("p", "secrets"))
    fact = await memory.get("p")
    assert fact is not None and (fact.level, fact.whitelist) == (0, [])


async def test_the_same_information_elsewhere_is_settled_too(memory: FactMemory) -> None:
    await memory.add(
        [
            pending("b", "Sam was diagnosed with diabetes last week.", "misc", 4),
            pending("b2", "Sam was diagnosed with diabetes last week!", "misc", 4, session="s2"),
            pending("x", "Sam is repainting the fence.", "misc", 4, session="s3"),
        ]
    )
    q = queue(memory)
    batch = await q.next_batch()
    first = next(x for x in batch if x.fact_id in ("b", "b2"))
    assert set(first.also) == {"b", "b2"} - {first.fact_id}
    assert len(batch) == 2  # the twin is not asked separately
    applied = await q.apply(ReviewAnswer.choose(first.fact_id, "health"))
    assert applied.audit["also"] == list(first.also)
    for fid in ("b", "b2"):
        fact = await memory.get(fid)
        assert fact is not None and (fact.category, fact.level, fact.state) == ("health", 1, "owner-set")


async def test_answers_teach_the_classifier(memory: FactMemory) -> None:
    await memory.add(
        [
            pending("a", "Sam started physiotherapy for the shoulder.", "misc", 4),
            pending("b", "Sam started physiotherapy for the shoulder this week.", "misc", 4, session="s2"),
            pending("c", "Sam is repainting the fence.", "misc", 4, session="s3"),
        ]
    )
    q = queue(memory)
    q.config = type(q.config)(same_information=0.999)  # no propagation: learning alone must do it
    await q.apply(ReviewAnswer.choose("a", "health"))
    assert q.examples is not None and len(q.examples) == 1
    settled = await q.relearn()
    assert [f.id for f in settled] == ["b"]
    fact = await memory.get("b")
    assert fact is not None and (fact.category, fact.level, fact.state) == ("health", 1, "annotated")
    assert any(e.startswith("example:health:a:") for e in fact.evidence)
    assert [f.id for f in await memory.all() if f.state == "pending"] == ["c"]


async def test_skipped_facts_come_last(memory: FactMemory) -> None:
    await memory.add(
        [
            pending("c", "Sam is repainting the fence.", "misc", 4),
            pending("b", "Sam hurt a knee at the gym.", "health", 1, "life"),
        ]
    )
    q = queue(memory)
    await q.apply(ReviewAnswer.skip("c"))
    assert [x.fact_id for x in await q.next_batch()] == ["b", "c"]
    assert (await memory.get("c")).state == "pending"  # type: ignore[union-attr]


def test_every_fail_closed_rule_is_written_down_in_the_design() -> None:
    from epmem.ingest.failclosed import RULES
    from tests.conftest import REPO_ROOT

    design = (REPO_ROOT / "docs" / "DESIGN.md").read_text()
    section = design[design.index("### 6.3 The fail-closed rules") : design.index("### 6.4")]
    for rule in RULES:
        assert f"| `{rule.id}` | {rule.rule} | {rule.reason} |" in section, rule.id


async def test_an_audience_read_from_words_is_confirmed_within_a_budget(memory: FactMemory) -> None:
    def annotated(fid: str, text: str, evidence: list[str], whitelist: list[str] | None = None) -> Fact:
        return Fact(
            id=fid,
            text=text,
            event_id=f"e-{fid}",
            session_id=fid,
            category="health",
            level=0,
            domain="life",
            state="annotated",
            confidence=0.7,
            evidence=evidence,
            whitelist=whitelist or [],
        )

    await memory.add(
        [
            pending("p", "Sam hurt a knee at the gym.", "health", 1, "life"),
            annotated("k", "Kira's doctor found a lump.", ["keyword:health:doctor", "context:told-by:kira"]),
            annotated(
                "s", "Sam's surgery is on Friday.", ["cue:secret:between us", "keyword:health:surgery"], ["kira"]
            ),
            annotated("d", "Sam saw the doctor about the flu.", ["keyword:health:doctor"]),
            *[annotated(f"m{i}", f"Sam repainted fence number {i}.", ["mundane:misc"]) for i in range(6)],
        ]
    )
    q = queue(memory)
    batch = await q.next_batch()
    # the pending fact first, then the annotated facts whose audience came from a cue or a teller;
    # a fact filed on its keyword alone is not asked about
    assert batch[0].fact_id == "p" and {x.fact_id for x in batch[1:]} == {"k", "s"}
    # unprompted, the delegate asks a share of the events in memory: 16% of 10 is two questions,
    # and never more than there are events worth asking about
    assert await q.budget() == 2
    q.config = type(q.config)(share=0.5)
    assert await q.budget() == 3
    for x in batch:
        await q.apply(ReviewAnswer.accept(x.fact_id))
    assert await q.next_batch() == []
    fact = await memory.get("s")
    assert fact is not None and fact.state == "owner-set" and fact.whitelist == ["kira"]


def told(
    fid: str,
    text: str,
    turn: str,
    event: str | None = None,
    version: str = "truth",
    evidence: list[str] | None = None,
    state: str = "annotated",
) -> Fact:
    return Fact(
        id=fid,
        text=text,
        event_id=event or f"e-{fid}",
        session_id=turn.split(":")[0],
        category="health",
        level=0,
        domain="life",
        state=state,  # type: ignore[arg-type]
        confidence=0.7,
        source_turns=[turn],  # type: ignore[arg-type]
        version=version,  # type: ignore[arg-type]
        evidence=evidence or ["topic:health:x", "context:told-by:kira"],
    )  # type: ignore[arg-type]


async def test_one_question_per_event_and_the_answer_applies_to_all_of_it(memory: FactMemory) -> None:
    """The rules cut one message into fragments and find the same news again in another chat:
    the owner is asked once, sees every fact the answer settles, and each change is audited."""
    await memory.add(
        [
            told("a1", "Kira's cardiologist says it is atrial fibrillation.", "s1:0"),
            told("a2", "Ablation on 2 June.", "s1:0"),
            told("a3", "It's atrial fibrillation.", "s7:0", event="e-a1"),
            told("o", "Kira has atrial fibrillation, she said.", "s9:0", event="e-a1", state="owner-set"),
            told(
                "c",
                "Kira is on leave for a sinus operation.",
                "s3:0",
                event="e-a1",
                version="cover",
                evidence=["cue:cover:if anyone asks"],
            ),
        ]
    )
    q = queue(memory)
    batch = await q.next_batch()
    truth = next(x for x in batch if x.fact_id in ("a1", "a2", "a3"))
    assert truth.applies_to == 3 and {truth.fact_id, *truth.also} == {"a1", "a2", "a3"}
    assert set(truth.also_text) == {f.text for f in await memory.all() if f.id in truth.also}
    # the cover is asked on its own: it must never get the truth's audience
    assert sorted(x.fact_id for x in batch) == sorted([truth.fact_id, "c"])
    assert await q.waiting() == 4  # facts, in two questions
    applied = await q.apply(ReviewAnswer.set(truth.fact_id, "health", 0, "life", whitelist=["kira"]))
    assert set(applied.audit["also"]) == {"a1", "a2", "a3"} - {truth.fact_id}
    assert all(v["state"] == "annotated" for v in applied.audit["also_from"].values())
    for fid in ("a1", "a2", "a3"):
        fact = await memory.get(fid)
        assert fact is not None and (fact.state, fact.whitelist) == ("owner-set", ["kira"])
    cover, earlier = await memory.get("c"), await memory.get("o")
    assert cover is not None and cover.state == "annotated" and cover.whitelist == []
    assert earlier is not None and earlier.whitelist == []  # the owner's earlier answer stands
    assert [x.fact_id for x in await q.next_batch()] == ["c"]


async def test_a_chat_cut_into_many_facts_does_not_buy_more_questions(memory: FactMemory) -> None:
    """The budget is a share of the events and at most ReviewConfig.per_conversation per
    conversation: fifteen small facts from three conversations (one of them a group chat cut
    into sub-sessions per person) are worth one question, not two."""
    sessions = ["s1", "s2", "grp~ana", "grp~ben", "grp~cy"]
    await memory.add(
        [
            pending(
                f"f{i}",
                f"Sam's knee story, part {i}: the physio visit number {i}.",
                "health",
                1,
                "life",
                session=sessions[i % 5],
            )
            for i in range(15)
        ]
    )
    q = queue(memory)
    assert len(q._askable(await memory.all())) == 15
    assert await q.budget() == 1  # 16% of 15 events would be 2; 0.4 for each of 3 conversations is 1
    q.config = type(q.config)(per_conversation=1.0)
    assert await q.budget() == 2


async def test_what_is_at_stake_orders_the_questions_and_bounds_them(memory: FactMemory) -> None:
    """Someone else's private matter whose audience the rules guessed comes before a pending
    fact with only a keyword; a fact filed on its keyword alone, a mundane one and a fragment
    with nothing to confirm are not asked about at all."""

    def fact(fid: str, state: str, evidence: list[str], category: str = "health") -> Fact:
        return Fact(
            id=fid,
            text=f"Sam fact {fid} about the knee.",
            event_id=f"e-{fid}",
            session_id=fid,
            category=category,
            level=0 if state == "pending" else 1,
            domain="life",
            state=state,  # type: ignore[arg-type]
            confidence=0.5,
            evidence=evidence,
        )  # type: ignore[arg-type]

    await memory.add(
        [
            fact("kw", "pending", ["keyword:health:knee"]),
            fact("told", "annotated", ["topic:health:x", "context:told-by:kira", "keyword:health:knee"]),
            fact("cue", "annotated", ["cue:secret:between us", "keyword:health:knee"]),
            fact("filed", "annotated", ["keyword:health:knee"]),
            fact("plain", "annotated", ["mundane:misc"], "misc"),
            fact("frag", "pending", ["unclear"]),
            fact("pin", "annotated", ["credential-shape", "topic:identity:x"], "secrets"),
        ]
    )
    q = queue(memory)
    assert [x.fact_id for x in await q.next_batch()] == ["told", "kw", "cue"]
    assert await q.waiting() == 3
    assert await q.budget() == 1  # 16% of 7 events


async def test_a_cover_story_named_by_the_owner_joins_its_truth(memory: FactMemory) -> None:
    """The owner said the story in a chat of its own, with no cue: it was stored as a fact of
    its own. Naming it the cover of the truth puts it in the truth's event, as its cover."""
    await memory.add(
        [
            pending("t", "Sam owes 14,000 in back taxes.", "money", 0),
            pending("c", "Sam is saving up for a new kitchen.", "misc", 4),
            pending("x", "Sam is repainting the fence.", "misc", 4),
        ]
    )
    q = queue(memory)
    applied = await q.apply(ReviewAnswer.set("c", "misc", level=4).covering("t"))
    cover, truth = await memory.get("c"), await memory.get("t")
    assert cover is not None and truth is not None
    assert (cover.version, cover.covers, cover.event_id) == ("cover", "t", truth.event_id)
    assert (cover.state, cover.level) == ("owner-set", 4)
    assert truth.version == "truth" and truth.closed is False and truth.state == "pending"
    assert applied.audit["covers"] == "t" and applied.audit["cover_facts"] == ["c"]
    assert "now your cover story for t" in applied.message
    # the rest of memory is untouched
    other = await memory.get("x")
    assert other is not None and other.version == "truth" and other.event_id == "e-x"


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (ReviewAnswer.private("c").covering("t"), "keep private and cover"),
        (ReviewAnswer.set("c", "misc").covering("nope"), "no fact 'nope'"),
        (ReviewAnswer.set("c", "misc").covering("c"), "not a truth"),
    ],
)
async def test_a_cover_story_needs_a_truth_to_stand_for_and_changes_nothing_else(
    memory: FactMemory, answer: ReviewAnswer, why: str
) -> None:
    await memory.add(
        [pending("t", "Sam owes 14,000 in back taxes.", "money", 0), pending("c", "Sam is saving up.", "misc", 4)]
    )
    with pytest.raises(ReviewError, match=why):
        await queue(memory).apply(answer)
    cover = await memory.get("c")
    assert cover is not None and (cover.version, cover.state, cover.event_id) == ("truth", "pending", "e-c")


async def test_the_owner_moves_a_cover_story_to_the_truth_it_stands_for(memory: FactMemory) -> None:
    """An extractor attaches "if anyone asks, say ..." to the message before; the owner, reading
    which truth the story stands for, names the right one: the story moves, and says so."""
    await memory.add(
        [
            pending("t", "Sam owes 14,000 in back taxes.", "money", 0),
            pending("u", "Sam is selling the car to pay a loan.", "money", 0),
            pending("c", "Sam is saving up for a new kitchen.", "misc", 4),
        ]
    )
    q = queue(memory)
    await q.apply(ReviewAnswer.set("c", "misc", level=4).covering("t"))
    truth = await memory.get("t")
    assert truth is not None
    moved = await q.apply(ReviewAnswer.set("c", "misc", level=4).covering("u"))
    assert "now your cover story for u" in moved.message and "No longer the story for t." in moved.message
    assert (moved.audit["covers"], moved.audit["covered"], moved.audit["cover_left"]) == ("u", "t", [truth.event_id])
    cover, u = await memory.get("c"), await memory.get("u")
    assert cover is not None and u is not None
    assert (cover.covers, cover.version, cover.event_id) == ("u", "cover", u.event_id)
    # naming the same truth again is the same answer, not an error
    again = await q.apply(ReviewAnswer.set("c", "misc", level=3).covering("u"))
    assert "covered" not in again.audit and "No longer" not in again.message
    after = await memory.get("c")
    assert after is not None and (after.covers, after.level) == ("u", 3)
