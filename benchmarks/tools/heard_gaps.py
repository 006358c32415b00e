"""Where a pipeline run with no owner loses what an asker heard said (heard it from you).

For every (question, asker) pair and every gold fact the asker may know and heard said (each
reader a participant of the gold fact's session: benchmarks/heard.py), the first reply's state
falls in one class:

- ``told``: the reply tells a carrier (an extracted fact with the gold fact's canary);
- ``no-carrier``: nothing extracted carries it;
- ``not-heard``: carriers exist, none is open to the readers as heard (a cover, a carrier from
  another chat, a never-share category, a blacklist or a cue);
- ``not-recalled``: a heard carrier exists, recall does not bring it to the question;
- ``held-back``: a heard carrier was chosen and the composite rule held it back;
- ``not-chosen``: a heard carrier was recalled and open, and the relevance step chose others.

It also counts, over the scenario's gold facts, how many an extracted fact carries (its canary
appears in one) and how many a turn of the chats says at all (no extractor that keeps the chat's
words can carry the others): the share of facts worth retelling.

``bounds`` says how far each step could take pipeline completeness with no owner, over every
may fact of every pair (heard or not): ``told`` as it is; ``choice`` if the relevance step and
the composite rule told every heard carrier that recall brings (``not-chosen`` and
``held-back`` told too); ``recall_and_choice`` if recall also brought every heard carrier
(``not-recalled`` too); ``heard_ceiling``, every heard may fact. Why: a completeness bound above
``recall_and_choice`` cannot be met by choosing better, only by recall, by what is counted as
heard, or by what the extractor keeps.

Usage::

    python -m benchmarks.tools.heard_gaps ../shared/bench/storylines-v1 [--pairs]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from epmem.embedding import Embedder
from epmem.memory.facts import Fact
from epmem.scenario import Scenario, asker_members, load_scenario, scenario_files

from benchmarks import pipeline
from benchmarks.consult_oracle import asker_inbound
from bot.config import Settings
from bot.runtime import Runtime, embedder_from_settings

CLASSES = ("told", "no-carrier", "not-heard", "not-recalled", "held-back", "not-chosen")


def classify(carriers: Sequence[Fact], readers: Sequence[str], body: dict[str, Any]) -> str:
    if not carriers:
        return "no-carrier"
    ids = {f.id for f in carriers}
    if ids & set(body.get("disclosed", [])):
        return "told"
    heard = [f for f in carriers if all(r in f.heard_by for r in readers) and f.undecided]
    if not heard:
        return "not-heard"
    candidates = {c["fact"]: c for c in body.get("candidates", [])}
    here = [f for f in heard if f.id in candidates]
    if not here:
        return "not-recalled"
    held = {str(h.get("fact")) for h in body.get("held_back", [])}
    if any(f.id in held for f in here):
        return "held-back"
    return "not-chosen"


async def run(scenario: Scenario, embedder: Embedder, source: str, pairs: list[dict[str, Any]]) -> Counter[str]:
    counts: Counter[str] = Counter()
    present = {s.id: set(s.participants) for s in scenario.sessions}
    with tempfile.TemporaryDirectory(prefix="epmem-heard-") as tmp:
        settings = Settings(data_dir=Path(tmp), llm_backend="rules", model_chooses=False)
        runtime = await Runtime.open(settings, policy=scenario.effective_policy(), embedder=embedder)
        try:
            await pipeline.ingest(runtime, scenario, source)
            stored = await runtime.memory.all()
            said = " \n ".join(t.text for s in scenario.sessions for t in s.turns).casefold()
            for g in scenario.facts:
                counts["gold"] += 1
                counts["carried"] += bool(pipeline.carriers(g, stored))
                counts["said"] += g.canary.casefold() in said
            agent = runtime.agent
            for qi, item in enumerate(scenario.tasks.answer):
                for asker, gold in item.askers.items():
                    members = asker_members(asker)
                    out = await agent.handle(asker_inbound(agent, f"heard-{qi}-{asker}", asker, item.question))
                    record = await runtime.audit.get(out.audit_id or "")
                    body = record.body if record is not None else {}
                    classes = {}
                    told = set(body.get("disclosed", []))
                    for fid in gold.may:
                        g = scenario.fact(fid)
                        carriers = pipeline.carriers(g, stored)
                        counts["may"] += 1
                        counts["may-told"] += any(f.id in told for f in carriers)
                        if not all(m in present.get(g.session or "", set()) for m in members):
                            continue
                        classes[fid] = classify(carriers, members, body)
                        counts[classes[fid]] += 1
                    if classes:
                        pairs.append(
                            {
                                "scenario": scenario.name,
                                "q": qi,
                                "question": item.question,
                                "asker": asker,
                                "reply": out.text,
                                "heard": classes,
                            }
                        )
        finally:
            await runtime.close()
    return counts


async def main(paths: Sequence[Path], embedder: Embedder | None = None) -> dict[str, Any]:
    embedder = embedder or embedder_from_settings()
    total: Counter[str] = Counter()
    pairs: list[dict[str, Any]] = []
    for path in scenario_files(list(paths)):
        total += await run(load_scenario(path), embedder, str(path), pairs)
    facts = {k: total.pop(k) for k in ("gold", "carried", "said", "may", "may-told")}
    return {
        "heard_may": sum(total.values()),
        "classes": {c: total[c] for c in CLASSES if total[c]},
        "gold_facts": facts["gold"],
        "carried": facts["carried"],
        "said": facts["said"],
        "may": facts["may"],
        "bounds": bounds(facts["may"], facts["may-told"], total),
        "pairs": pairs,
    }


def bounds(may: int, told: int, classes: Counter[str]) -> dict[str, float]:
    """Completeness as it is and as it would be with a perfect relevance step, then with perfect
    recall too, and every heard may fact told (the module docstring says why)."""
    if not may:
        return {}
    choice = told + classes["not-chosen"] + classes["held-back"]
    return {
        "told": round(told / may, 4),
        "choice": round(choice / may, 4),
        "recall_and_choice": round((choice + classes["not-recalled"]) / may, 4),
        "heard_ceiling": round(sum(classes[c] for c in CLASSES) / may, 4),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--pairs", action="store_true", help="also each pair's reply and the class of each heard fact")
    args = parser.parse_args()
    result = asyncio.run(main(args.paths))
    if not args.pairs:
        result.pop("pairs")
    print(json.dumps(result, ensure_ascii=False))
