"""Issue 24's acceptance on our own Chinese storylines (benchmarks/scenarios/zh-own), gold mode,
rules composer, in process: nothing leaks, the replies answer the question (completeness,
precision, differentiation at the issue's bars), every reply to a Chinese question is Chinese
without the delegate's English frame, and the replies pass the independent composite checker."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.scenario_bench import run_scenarios
from benchmarks.tools.check_replies import main as check_replies
from epmem.embedding.minilm import default_embedder
from epmem.scenario import scenario_files

ZH_OWN = Path(__file__).resolve().parents[2] / "benchmarks" / "scenarios" / "zh-own"


async def test_our_chinese_storylines_meet_the_acceptance_bars(tmp_path: Path) -> None:
    files = scenario_files([ZH_OWN])
    assert len(files) >= 6
    lines: list[dict[str, Any]] = []
    metrics, _ = await run_scenarios(files, default_embedder(), "gold", replies=lines)
    answer = metrics["answer"]
    assert answer["leak_rate"] == 0.0 and answer["any_fact_leaks"] == 0
    assert metrics["permit"]["exact"] == 1.0
    assert answer["completeness"] >= 0.75 and answer["precision"] >= 0.7 and answer["differentiation"] >= 0.8, answer
    assert metrics["language"] == {"zh_replies": answer["n"], "not_chinese": 0, "english_frames": 0}
    replies = tmp_path / "replies.jsonl"
    replies.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    assert check_replies([str(replies), str(ZH_OWN)]) == 0
