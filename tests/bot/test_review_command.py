"""/review on the console (typed): questions most consequential first, one answer at a time,
each applied at once, audited and learnt from; answers from anyone but the owner change nothing.

A real runtime (Qdrant Edge, SQLite, MiniLM) over the house example; the pending facts are put
in memory as ingest leaves them (state pending, a suggestion, evidence).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.runtime import Runtime
from epmem.memory import Fact
from epmem.policy.model import Domain
from testkit.house import house_runtime
from testkit.runtime import ask

PENDING: list[tuple[str, str, str, int, Domain | None]] = [
    # (id, text, suggested category, level, domain)
    ("p1", "Maya repainted the garden fence on Sunday.", "hobbies", 4, None),
    ("p2", "Maya is viewing a flat on Elm Road with Leo.", "home", 2, "life"),
    ("p3", "Maya's bonus arrives in March.", "finances", 0, None),
    ("p4", "Maya will present the roadmap on Monday.", "work_projects", 3, "work"),
    ("p5", "Maya is learning the cello.", "hobbies", 4, None),
    ("p6", "Maya's sister is moving to Lisbon.", "home", 2, "life"),
    ("p7", "Maya starts swimming lessons.", "hobbies", 4, None),
]


def pending(fid: str, text: str, category: str, level: int, domain: Domain | None) -> Fact:
    return Fact(
        id=fid,
        text=text,
        event_id=f"e-{fid}",
        session_id=f"s-{fid}",
        category=category,
        level=level,
        domain=domain,
        state="pending",
        confidence=0.3,
        evidence=[f"topic:{category}:guess"],
    )


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    rt = await house_runtime(tmp_path / "data")
    await rt.memory.add([pending(*p) for p in PENDING])
    try:
        yield rt
    finally:
        await rt.close()


async def owner_says(rt: Runtime, text: str) -> tuple[str, list[str]]:
    out = await rt.agent.handle(ask("owner", text))
    assert out.text is not None
    return out.text, [a.command for a in out.actions]


async def test_review_asks_the_most_exposed_first_and_applies_each_tap(runtime: Runtime) -> None:
    text, actions = await owner_says(runtime, "/review")
    assert "Review 1/5 (7 waiting" in text
    first = text.splitlines()[1].split(":")[0]
    assert first in {"p1", "p5", "p7"}  # daily life at L4: a wrong guess would tell anyone
    assert f"/review {first} ok #0" in actions and f"/review {first} private #0" in actions
    assert f"/review {first} who #0" in actions and any(a.startswith(f"/review {first} c:") for a in actions)
    # a tap is the same command typed: keep it private
    text, actions = await owner_says(runtime, f"/review {first} private #0")
    fact = await runtime.memory.get(first)
    assert fact is not None and (fact.state, fact.level, fact.whitelist) == ("owner-set", 0, [])
    assert text.startswith(f"{first}: ") and "Review 2/5 (6 waiting" in text
    assert all(a.endswith(" #1") for a in actions)
    records = await runtime.audit.records(limit=5)
    change = records[-1]
    assert change.kind == "policy_change" and change.body["action"] == "review"
    assert change.body["fact"] == first and change.body["answer"] == "private"
    assert change.body["by"] == "console:owner" and change.body["from"]["state"] == "pending"
    assert change.body["to"]["level"] == 0


async def test_an_alternative_category_and_who_may_know(runtime: Runtime) -> None:
    text, _ = await owner_says(runtime, "/review p6")
    assert "p6: \u201cMaya's sister is moving to Lisbon.\u201d" in text
    await owner_says(runtime, "/review p6 c:finances #0")
    fact = await runtime.memory.get("p6")
    assert fact is not None and (fact.category, fact.level, fact.state) == ("finances", 0, "owner-set")
    # who may know: each tap adds or removes one person; only they may know
    text, actions = await owner_says(runtime, "/review p2 who #1")
    assert "Now: nobody but you." in text and "/review p2 +leo #1" in actions and "/review p2 done #1" in actions
    text, actions = await owner_says(runtime, "/review p2 +leo #1")
    assert "Now: Leo Chen." in text
    await owner_says(runtime, "/review p2 +grace #1")
    fact = await runtime.memory.get("p2")
    assert fact is not None and (fact.level, sorted(fact.whitelist), fact.state) == (0, ["grace", "leo"], "owner-set")
    await owner_says(runtime, "/review p2 +leo #1")
    text, _ = await owner_says(runtime, "/review p2 done #1")
    fact = await runtime.memory.get("p2")
    assert fact is not None and fact.whitelist == ["grace"]
    assert "Review 3/5" in text
    # typed at once
    await owner_says(runtime, "/review p3 who ana,ben")
    fact = await runtime.memory.get("p3")
    assert fact is not None and (fact.level, fact.whitelist) == (0, ["ana", "ben"])


async def test_a_batch_ends_after_five_answers_and_mistakes_change_nothing(runtime: Runtime) -> None:
    answered = 0
    text, actions = await owner_says(runtime, "/review")
    while answered < 5:
        ok = next(a for a in actions if " ok #" in a)
        text, actions = await owner_says(runtime, ok)
        answered += 1
    assert "That was the batch. 2 more wait: /review for the next." in text and not actions
    assert await runtime.review.waiting() == 2
    before = await runtime.memory.all()
    for bad in ("/review nope ok", "/review p1 c:nonsense", "/review p1 maybe", "/review p1 who zed"):
        text, _ = await owner_says(runtime, bad)
        assert text.startswith("/review: "), text
    assert await runtime.memory.all() == before
    text, actions = await owner_says(runtime, "/review")
    text, actions = await owner_says(runtime, next(a for a in actions if " private #" in a))
    text, actions = await owner_says(runtime, next(a for a in actions if " skip #" in a))
    assert "Nothing else waits for review." not in text  # skipped: it still waits, asked again later
    text, actions = await owner_says(runtime, next(a for a in actions if " ok #" in a))
    assert text.endswith("Nothing else waits for review.") and not actions
    assert (await owner_says(runtime, "/review"))[0] == "Nothing waits for review."


async def test_review_from_anyone_but_the_owner_changes_nothing(runtime: Runtime) -> None:
    before = await runtime.memory.all()
    for who in ("leo", "kim", "stranger-x"):
        out = await runtime.agent.handle(ask(who, "/review p2 ok #0"))
        assert not out.actions and "p2" not in (out.text or "")
        out = await runtime.agent.handle(ask(who, "/review p3 who raj"))
        assert "p3" not in (out.text or "")
    assert await runtime.memory.all() == before
    kinds = [r.kind for r in await runtime.audit.records(limit=10)]
    assert kinds.count("attempted_command") == 6 and "policy_change" not in kinds


async def test_one_question_shows_every_fact_its_answer_settles(runtime: Runtime) -> None:
    """Two facts cut from one message are one question: the owner sees both, one tap settles
    both, and the audit record says what each one was before."""
    message = dict(session_id="s-m", source_turns=["s-m:0"], state="annotated", confidence=0.7)
    await runtime.memory.add(
        [
            Fact(
                id="m1",
                text="Leo's biopsy came back clear.",
                event_id="e-m1",
                category="health",
                level=0,
                domain="life",
                evidence=["topic:health:biopsy", "context:told-by:leo"],
                **message,  # type: ignore[arg-type]
            ),  # type: ignore[arg-type]
            Fact(
                id="m2",
                text="Leo goes back to work on Monday.",
                event_id="e-m2",
                category="work_projects",
                level=3,
                domain="work",
                evidence=["keyword:work_projects:work"],
                **message,  # type: ignore[arg-type]
            ),  # type: ignore[arg-type]
        ]
    )
    text, actions = await owner_says(runtime, "/review m1")
    assert "Your answer applies to these 2 facts" in text and "m2: \u201cLeo goes back to work on Monday.\u201d" in text
    await owner_says(runtime, "/review m1 who leo")
    for fid in ("m1", "m2"):
        fact = await runtime.memory.get(fid)
        assert fact is not None and (fact.state, fact.level, fact.whitelist) == ("owner-set", 0, ["leo"])
    change = (await runtime.audit.records(limit=3))[-1]
    assert change.body["fact"] == "m1" and change.body["also"] == ["m2"]
    assert change.body["also_from"]["m2"]["level"] == 3 and change.body["also_from"]["m2"]["state"] == "annotated"


WIFI = Fact(
    id="d8",
    text="The home wifi password is lemon-tree-77.",
    event_id="e-wifi",
    session_id="s-wifi",
    category="credentials",
    level=0,
    state="annotated",
)


async def test_leaving_a_never_share_category_takes_a_confirmation_naming_what_it_opens(runtime: Runtime) -> None:
    """Issue 21: one tap (/review d8 c:hobbies) moved a wifi password to L4 without a word."""
    await runtime.memory.add([WIFI])
    text, actions = await owner_says(runtime, "/review d8 c:hobbies")
    assert "never shared" in text and "anyone who asks" in text and "Nothing changed" in text
    assert actions == ["/review d8 c:hobbies confirm #0"]
    fact = await runtime.memory.get("d8")
    assert fact is not None and fact.category == "credentials" and fact.level == 0
    assert "lemon-tree" not in ((await runtime.agent.handle(ask("leo", "What is the wifi password?"))).text or "")
    text, _ = await owner_says(runtime, "/category d8 hobbies")
    assert "would open it to anyone who asks" in text
    assert (await runtime.memory.get("d8")).category == "credentials"  # type: ignore[union-attr]
    text, _ = await owner_says(runtime, "/review d8 who leo")
    assert "never shared" in text and (await runtime.memory.get("d8")).category == "credentials"  # type: ignore[union-attr]
    # the owner's explicit word moves it
    await owner_says(runtime, "/review d8 c:hobbies confirm #0")
    fact = await runtime.memory.get("d8")
    assert fact is not None and fact.category == "hobbies" and fact.state == "owner-set"


async def test_moving_between_ordinary_categories_needs_no_confirmation(runtime: Runtime) -> None:
    text, _ = await owner_says(runtime, "/review p1 c:home")
    assert "never shared" not in text
    fact = await runtime.memory.get("p1")
    assert fact is not None and fact.category == "home"


async def test_review_counts_agree_everywhere_at_the_same_moment(runtime: Runtime) -> None:
    """Issue 21: the import summary and /review said 13 facts wait while /annotations said 10.
    A pending fact with nothing worth asking about is not one that waits for review."""
    await runtime.memory.add(
        [Fact(id="p9", text="Maya said okay.", event_id="e-p9", session_id="s-p9", state="pending")]
    )
    waiting = await runtime.review.waiting()
    review, _ = await owner_says(runtime, "/review")
    assert f"({waiting} waiting;" in review
    annotations, _ = await owner_says(runtime, "/annotations")
    assert f"\n{waiting} facts wait for your review" in annotations, annotations
    assert "1 other pending facts have nothing worth asking about" in annotations
