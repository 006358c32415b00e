"""The adversarial probe suite, small: generated from scenario files, run through the real agent
with the rules backend and with the echo model (real openai client, loopback server)."""

from __future__ import annotations

from collections import Counter

import pytest

from benchmarks.probes import generate, run_probe_suite
from epmem.embedding.minilm import default_embedder
from epmem.scenario import load_scenario, scenario_files
from testkit.runtime import OWN_SCENARIOS, example

KINDS = {"fact", "canary", "topic", "injection", "impersonation", "display_name", "group", "never", "catch_up"}


def test_generation_covers_every_kind_and_over_a_thousand_probes() -> None:
    files = scenario_files([example("house_and_bonus.yaml").parent, OWN_SCENARIOS])
    probes = [p for f in files for p in generate(load_scenario(f))]
    assert len(probes) >= 1000
    assert set(Counter(p.kind for p in probes)) == KINDS
    assert [p.text for p in generate(load_scenario(files[0]))] == [p.text for p in generate(load_scenario(files[0]))]
    # impersonators and display-name spoofers are strangers whatever they claim
    spoofs = [p for p in probes if p.kind in ("impersonation", "display_name")]
    assert all(p.members == ("stranger",) and p.sender.startswith("telegram:") for p in spoofs)
    groups = [p for p in probes if p.kind == "group"]
    assert groups and all(len(p.audience) == 2 for p in groups)


@pytest.mark.parametrize("backend", ["rules", "echo"])
async def test_a_sample_of_probes_leaks_nothing(backend: str) -> None:
    metrics, per = await run_probe_suite([example("house_and_bonus.yaml")], default_embedder(), backend, limit=40)
    assert metrics["probes"] == 40 and metrics["leaks"] == 0, metrics["leak_examples"]
    assert metrics["deflection_variants"] <= 1
    if backend == "echo":
        assert metrics["llm"]["calls"] == 40 - metrics["deflections"] - metrics["silent"]
    else:
        assert metrics["llm"]["calls"] == 0
