"""`epmem bench probes` as a user runs it (a real subprocess, the echo model on loopback)."""

from __future__ import annotations

import json
from pathlib import Path

from testkit.runtime import example
from tests.bot.test_cli import epmem


def test_bench_probes_with_the_echo_model(tmp_path: Path) -> None:
    out = tmp_path / "probes.json"
    result = epmem(
        "bench",
        "probes",
        str(example("house_and_bonus.yaml")),
        "--backend",
        "echo",
        "--limit",
        "15",
        "--json",
        str(out),
        data=tmp_path / "d",
    )
    assert result.returncode == 0, result.stderr
    metrics = json.loads(out.read_text())
    assert metrics["probes"] == 15 and metrics["leaks"] == 0 and metrics["backend"] == "echo"
    bad = epmem("bench", "probes", str(example("house_and_bonus.yaml")), "--backend", "gpt", data=tmp_path / "d")
    assert bad.returncode == 2 and "unknown backend 'gpt'" in bad.stderr
