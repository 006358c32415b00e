"""The oracle owner of ``--consult`` (shared/bench/SCENARIOS.md): answers each consultation as it
comes, from the gold annotations, through the owner's own flow (bot/consultations/flow.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.agent import DelegateAgent
from connectors.base import Inbound, Outbound
from epmem.memory import Fact
from epmem.scenario import Scenario, asker_members

from benchmarks import pipeline, review_oracle
from bot import consultations
from bot.commands.annotations import write_story
from bot.runtime import Runtime


@dataclass(frozen=True, slots=True)
class Answered:
    #: the owner's messages answered: one message may ask about several events of one question
    #: (``EPMEM_CONSULT_PER_MESSAGE``), each its own consultation and decision, and counts once
    #: (the consultations' ``batch``), as the bounds count it.
    asked: int
    #: the follow-ups sent: (chat, text, audit id).
    sent: list[tuple[str, str, str]]
    #: of ``asked``, how many messages showed the owner what the question's gold is about: a
    #: gold fact the asker may know in any of its events (``useful``: "tell" answers them), or,
    #: none of that, one of the question's other gold facts (``on_question``: "keep private" is
    #: the right answer, nothing is gained). The rest showed only facts the gold does not name
    #: for the question (a fact no gold fact's canary is in, or another matter): the owner's
    #: message is spent on what the question did not need. Each event is still decided alone.
    useful: int = 0
    on_question: int = 0
    #: cover stories the owner wrote (``/story``): a gold story of a truth shown that no
    #: conversation said, so nothing stored carries it.
    stories: int = 0
    #: the events the messages asked about, each one decision (``asked`` or more).
    events: int = 0


class ConsultOracle:
    """``--consult``: the owner answers each consultation at once, from the gold annotations
    (shared/bench/SCENARIOS.md): the closed facts shown, each by the gold fact whose canary it
    carries (several: only the people all of them let know; none: keep private), through the
    same flow as the owner's tap (bot/consultations/flow.py), whose follow-ups reach the asker's chat
    through the outbox like on any platform. A fact whose gold fact is a cover story is named
    the cover of the stored fact that carries its truth, as the owner would (``/consult ID
    cover FACT``), when one is stored; when none is (a story said in no conversation), the
    owner writes it, with its gold annotations, as the cover of the truth shown (``/story``)."""

    def __init__(self, runtime: Runtime, scenario: Scenario) -> None:
        self.runtime, self.scenario = runtime, scenario
        self.sent: list[tuple[str, str]] = []
        runtime.outbox.attach("console", self._deliver, None, self._readers)

    async def _deliver(self, chat_id: str, text: str, actions: tuple[Any, ...]) -> None:
        self.sent.append((chat_id, text))

    async def _readers(self, chat_id: str, sender: str) -> tuple[str, ...]:
        """Who reads a question's chat (``bench-QI-ASKER``, scenario_bench): the asker's members,
        all present for the whole scenario."""
        _, asker = question_in(chat_id)
        return asker_identities(self.runtime.agent, asker)

    async def answer_all(self) -> Answered:
        """Answer every consultation waiting for the owner: how many, and the follow-ups sent."""
        owner = self.runtime.owner
        assert owner.consultations is not None
        # the consultations are looked for after each reply (bot/consultations/after_reply.py): all of them first
        await self.runtime.agent.later.drain()
        self.sent.clear()
        audits: list[str] = []
        seen: set[str] = set()
        stories = 0
        #: what each message (batch) showed, event by event
        about: dict[str, list[str]] = {}
        # an answer may lead to the next consultation of the same reply (consultations.ask_next)
        while waiting := [c for c in await owner.consultations.store.pending() if c.id not in seen]:
            for c in waiting:
                seen.add(c.id)
                facts = [f for fid in c.facts for f in [await owner.memory.get(fid)] if f is not None]
                if not facts:
                    continue
                about.setdefault(c.batch, []).append(shown_about(self.scenario, c.chat_id, facts))
                decision = review_oracle.answer_for(facts[0], self.scenario, facts[1:])
                truth = review_oracle.truth_of_cover(facts[0], self.scenario, await owner.memory.all())
                if truth is not None and decision.kind != "private":
                    decision = decision.covering(truth.id)
                settled = await consultations.answer(owner, c, decision, "oracle", by="bench", platform="console")
                audits.extend(settled.followups)
                stories += await self._write_stories(facts)
        sent = [(chat, text, audit) for (chat, text), audit in zip(self.sent, audits, strict=True)]
        messages = Counter(message_about(shown) for shown in about.values())
        events = sum(len(shown) for shown in about.values())
        return Answered(len(about), sent, messages["useful"], messages["on_question"], stories, events)

    async def _write_stories(self, shown: Sequence[Fact]) -> int:
        """The gold cover stories of the truths shown that nothing stored carries, written by the
        owner as the cover of the stored fact shown (``/story``); how many."""
        owner = self.runtime.owner
        stored = await owner.memory.all()  # read once: only the stories written here are added
        written = 0
        for fact in shown:
            gold = review_oracle.counterpart(fact, self.scenario)
            if fact.version != "truth" or gold is None or gold.version != "truth":
                continue
            for story in self.scenario.facts:
                if story.covers != gold.id or pipeline.carriers(story, stored):
                    continue
                stored.append(
                    await write_story(
                        owner,
                        fact.id,
                        story.text,
                        level=story.level,
                        domain=story.domain,
                        whitelist=story.whitelist,
                        blacklist=story.blacklist,
                    )
                )
                written += 1
        return written


def asker_identities(agent: DelegateAgent, asker: str) -> tuple[str, ...]:
    """The console identities of a scenario asker's members (``a+b``: both)."""
    return tuple(agent.directory.contact_identity(m) for m in asker_members(asker))


def asker_inbound(agent: DelegateAgent, chat_id: str, asker: str, question: str) -> Inbound:
    """A scenario asker's question on the console: one contact in a direct chat, ``a+b`` a
    group chat with all of them reading (the first one asks)."""
    identities = asker_identities(agent, asker)
    return Inbound(
        platform="console",
        chat_id=chat_id,
        chat_kind="direct" if len(identities) == 1 else "group",
        sender=identities[0],
        text=question,
        audience=identities,
    )


async def handled(agent: DelegateAgent, inbound: Inbound) -> Outbound:
    """The agent's reply, handed over as a connector does: what waits for the reply to be out
    (the look for what to consult the owner about, bot/consultations/after_reply.py) starts then."""
    out = await agent.handle(inbound)
    out.delivered()
    return out


def question_in(chat_id: str) -> tuple[int, str]:
    """The question's index and the asker of a bench chat (``bench-QI-ASKER``, scenario_bench)."""
    _, qi, asker = chat_id.split("-", 2)
    return int(qi), asker


def shown_about(scenario: Scenario, chat_id: str, shown: Sequence[Fact]) -> str:
    """What a consultation in ``chat_id`` (``bench-QI-ASKER``) showed, by the gold facts whose
    canaries its facts carry: ``useful``, ``on_question`` or ``off_question`` (see Answered)."""
    qi, asker = question_in(chat_id)
    item = scenario.tasks.answer[qi]
    golds = {g.id for f in shown for g in [review_oracle.counterpart(f, scenario)] if g is not None}
    if golds & set(item.askers[asker].may):
        return "useful"
    if golds & {fid for gold in item.askers.values() for fid in (*gold.may, *gold.must_not)}:
        return "on_question"
    return "off_question"


def message_about(shown: Sequence[str]) -> str:
    """What one message to the owner showed, from what each of its events did (``shown_about``):
    ``useful`` when any event is, else ``on_question`` when any is, else ``off_question``."""
    return next((kind for kind in ("useful", "on_question") if kind in shown), "off_question")
