"""Where ``bench scenarios --mode pipeline --consult`` loses what an asker may know.

For every (question, asker) pair and every gold fact the asker may know, the state at the first
reply to that pair (before the consultation it leads to is answered) falls in one class:

- ``told``: the reply tells a carrier (an extracted fact with the gold fact's canary);
- ``heard``: the reply tells a carrier because every reader heard it said (heard it from you);
- ``no-carrier``: nothing extracted carries it (no consultation can help);
- ``not-recalled``: carriers exist, recall does not bring any of them to the question;
- ``held-back``: a carrier is open to the asker and chosen, and the composite rule held it back;
- ``open-not-chosen``: a carrier is open to the asker, and the relevance step chose other facts;
- ``consulted``: a closed carrier is among the facts the consultation would ask about;
- ``other-consulted``: carriers are closed, the consultation would ask about other facts;
- ``not-consulted``: carriers are closed and nothing is asked (the relevance step found no closed
  fact answering, or the pair is one the delegate does not consult for: a group, a stranger);
- ``kept``: carriers are decided and the asker may not know them (an earlier answer was stricter
  than this gold fact, a carrier telling two gold facts takes the stricter).

Counted apart for pairs of one contact, groups and strangers. ``--aim`` measures how far better
aim could take the consultations: the delegate asks first about a recalled closed carrier of a
gold fact the asker may know, when there is one, and about nothing otherwise (the gold chooses
what to ask; an instrument, not the product). Its completeness is a ceiling for any way of
choosing what to ask with this extractor, recall and relevance step (the follow-up still
answers the question through the relevance step).

The tool watches the product's own components through ``unittest.mock.patch.object`` wrappers:
each calls the real method and records what it returned (``--aim`` alone reorders what
``PrivacyEngine`` offers to consult about). Usage::

    python -m benchmarks.tools.consult_gaps ../shared/bench/storylines-v1 [--aim] [--pairs]

``--pairs`` adds every pair's first reply to the JSON (``pairs``: the scenario, question and
asker, the texts told, the texts the consultation would ask about, first the one asked, and
each gold fact's class): where to look when a class is large.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

from epmem.embedding import Embedder
from epmem.memory.facts import Fact
from epmem.memory.recall import RecalledEvent
from epmem.reply.engine import Answer, PrivacyEngine
from epmem.scenario import Scenario, scenario_files

import bot.agent
from benchmarks import consult_oracle, pipeline, scenario_bench
from benchmarks.heard import HEARD_REASON
from bot.runtime import embedder_from_settings

CLASSES = (
    "told",
    "heard",
    "no-carrier",
    "not-recalled",
    "held-back",
    "open-not-chosen",
    "consulted",
    "other-consulted",
    "not-consulted",
    "kept",
)


def pair_kind(asker: str) -> str:
    """``one`` contact, a ``group`` (``a+b``) or the ``stranger``, as scenario files name askers."""
    if "+" in asker:
        return "group"
    return "stranger" if asker == "stranger" else "one"


def classify(carriers: Sequence[Fact], recalled: set[str], answer: Answer) -> str:
    """The class (see the module) of one gold fact the asker may know, from its ``carriers``,
    the fact ids recall brought to the question and the reply's :class:`Answer`."""
    if not carriers:
        return "no-carrier"
    ids = {f.id for f in carriers}
    told = [d for d in answer.used if d.fact.id in ids]
    if told:
        return "heard" if any(HEARD_REASON in v.explain() for d in told for _, v in d.verdicts) else "told"
    here = [f for f in carriers if f.id in recalled]
    if not here:
        return "not-recalled"
    if {f.id for f in here} & {d.fact.id for d in answer.projection.decisions if d.allowed}:
        return "held-back" if {f.id for f in here} & {h.fact_id for h in answer.held} else "open-not-chosen"
    if not any(f.undecided for f in here):
        return "kept"
    if {f.id for f in here} & set(answer.consult):
        return "consulted"
    return "other-consulted" if answer.consult else "not-consulted"


@dataclasses.dataclass
class Watch:
    """What the wrappers saw: the scenario being run, the chat of the reply being answered, and
    the class of every (scenario, question, asker, gold fact) at its first reply."""

    aim: bool = False
    scenario: Scenario | None = None
    chat: str | None = None
    #: whether the reply being answered may consult the owner (``may_consult``), and the chat
    #: of the latest reply (the closed facts are looked at after it: bot/consult_later.py).
    may: bool = False
    looked_for: str | None = None
    seen: dict[tuple[str, int, str, str], str] = dataclasses.field(default_factory=dict)
    #: every pair's first reply as read (``--pairs``): what it told, what the consultation would
    #: ask about, and the class of each gold fact the asker may know.
    pairs: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    def counts(self) -> dict[str, Any]:
        by_kind: dict[str, Counter[str]] = {}
        for (_, _, asker, _), cls in self.seen.items():
            by_kind.setdefault(pair_kind(asker), Counter())[cls] += 1
        total: Counter[str] = sum(by_kind.values(), Counter())
        return {"may": sum(total.values()), "classes": _ordered(total), **{k: _ordered(v) for k, v in by_kind.items()}}

    def _may(self, chat: str) -> tuple[Scenario, int, str, Sequence[str]] | None:
        if self.scenario is None or not chat.startswith("bench-"):
            return None
        qi, asker = consult_oracle.question_in(chat)
        return self.scenario, qi, asker, self.scenario.tasks.answer[qi].askers[asker].may

    async def record(self, engine: PrivacyEngine, question: str, answer: Answer) -> None:
        asked = self._may(self.chat or "")
        if asked is None:
            return
        scenario, qi, asker, may = asked
        if any(key[:3] == (scenario.name, qi, asker) for key in self.seen):
            return  # the first reply only: later ones (a follow-up) come after an answer
        stored = await engine.memory.all()
        recalled = {r.fact.id for ev in await engine.memory.recall(question) for r in ev.facts}
        classes: dict[str, str] = {}
        for gid in may:
            gold = next(g for g in scenario.facts if g.id == gid)
            classes[gid] = classify(pipeline.carriers(gold, stored), recalled, answer)
            self.seen[(scenario.name, qi, asker, gid)] = classes[gid]
        texts = {f.id: f.text for f in stored}
        self.pairs.append(
            {
                "scenario": scenario.name,
                "question": question,
                "asker": asker,
                "told": [d.fact.text for d in answer.used],
                "consult": [texts.get(f, f) for f in answer.consult],
                "may": classes,
            }
        )

    def aimed(self, events: Sequence[RecalledEvent], offered: tuple[str, ...]) -> tuple[str, ...]:
        asked = self._may(self.looked_for or "")
        if asked is None:
            return offered
        scenario, _, _, may = asked
        golds = [g for g in scenario.facts if g.id in may]
        return tuple(
            r.fact.id
            for ev in events
            for r in ev.facts
            if r.fact.undecided and any(g.canary.casefold() in r.fact.text.casefold() for g in golds)
        )


@contextlib.contextmanager
def watching(watch: Watch) -> Iterator[None]:
    """Wrap the components whose results the classes read (each wrapper calls the real one)."""
    real_init = consult_oracle.ConsultOracle.__init__
    real_may_consult = bot.agent.may_consult  # type: ignore[attr-defined]  # the name the agent calls (patched below)
    real_answer = PrivacyEngine.answer
    real_closed = PrivacyEngine._closed_would_answer

    def init(oracle: consult_oracle.ConsultOracle, runtime: Any, scenario: Scenario) -> None:
        watch.scenario = scenario
        real_init(oracle, runtime, scenario)

    def may_consult(owner: Any, inbound: Any, *rest: Any) -> bool:
        watch.chat = watch.looked_for = inbound.chat_id
        watch.may = real_may_consult(owner, inbound, *rest)
        return watch.may

    async def answer(engine: PrivacyEngine, question: str, *args: Any, **kwargs: Any) -> Answer:
        result = await real_answer(engine, question, *args, **kwargs)
        if kwargs.get("only_events") is None and watch.chat is not None:
            # the reply no longer waits for the closed facts (bot/consult_later.py): what the
            # look after it finds, read here as the reply's own
            seen = result
            if watch.may and not result.consult and args:
                told = {d.fact.id for d in result.projection.used}
                seen = dataclasses.replace(result, consult=await engine.closed_would_answer(question, args[0], told))
            await watch.record(engine, question, seen)
            watch.chat = None  # a follow-up's answer is not a first reply
        return result

    def closed(engine: PrivacyEngine, question: str, events: Sequence[RecalledEvent], *args: Any) -> tuple[str, ...]:
        return watch.aimed(events, real_closed(engine, question, events, *args))

    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.object(consult_oracle.ConsultOracle, "__init__", init))
        stack.enter_context(mock.patch.object(bot.agent, "may_consult", may_consult))
        stack.enter_context(mock.patch.object(PrivacyEngine, "answer", answer))
        if watch.aim:
            stack.enter_context(mock.patch.object(PrivacyEngine, "_closed_would_answer", closed))
        yield


def _ordered(counts: Counter[str]) -> dict[str, int]:
    return {c: counts[c] for c in CLASSES if counts[c]}


async def main(
    paths: Sequence[Path], aim: bool, embedder: Embedder | None = None, pairs: bool = False
) -> dict[str, Any]:
    watch = Watch(aim=aim)
    embedder = embedder or embedder_from_settings()
    with watching(watch):
        metrics, _ = await scenario_bench.run_scenarios(
            scenario_files(list(paths)), embedder, mode="pipeline", consult=True
        )
    out = {"aim": aim, **watch.counts(), "answer": metrics["answer"], "consult": metrics["consult"]}
    return {**out, "pairs": watch.pairs} if pairs else out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--aim", action="store_true", help="consult about what the gold says the asker may know")
    parser.add_argument(
        "--pairs", action="store_true", help="also each pair's first reply: told, consulted, the class of each fact"
    )
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.paths, args.aim, pairs=args.pairs)), ensure_ascii=False))
