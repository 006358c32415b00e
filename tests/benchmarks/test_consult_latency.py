"""The first-reply latency benchmark runs and measures what it says (benchmarks/consult_latency.py);
its figures are the benchmark's to report, not a test's to assert."""

from __future__ import annotations

from benchmarks.consult_latency import CONDITIONS, run


async def test_the_benchmark_interleaves_both_folders_and_only_one_holds_the_closed_fact() -> None:
    result = await run(questions=2, warmup=0, ways=["console"], rounds=1)
    [round_] = result["console"]["rounds"]
    assert round_["questions"] == 2 and set(CONDITIONS) == {"with", "without"}
    for key in ("with_closed_fact", "without"):
        assert round_[key]["median_ms"] > 0 and round_[key]["p95_ms"] >= round_[key]["median_ms"]
    assert {"ratio_median", "ratio_p95", "medians_within_10pct", "p95_within_20pct"} <= set(round_)
    assert result["console"]["pooled"]["questions"] == 2
