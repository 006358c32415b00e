"""The independent composite check over a --replies file must be able to fail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.tools.check_replies import main
from testkit.runtime import example

HOUSE = str(example("house_and_bonus.yaml"))


def line(disclosed: list[str], askers: list[str], deflected: bool = False) -> dict[str, object]:
    return {
        "scenario": "house-and-bonus",
        "question": "Catch me up on Maya's news",
        "askers": askers,
        "reply": "...",
        "disclosed": disclosed,
        "deflected": deflected,
        "composer": "rules",
    }


@pytest.mark.parametrize(
    ("lines", "code"),
    [
        ([line(["f1"], ["leo"]), line(["f3"], ["leo"]), line([], ["kim"], deflected=True)], 0),
        ([line(["f5", "f6"], ["ben"])], 0),
        ([line(["f1", "f3"], ["leo"])], 1),  # the shared example's composite: never together
        ([line(["f2"], ["ana", "raj"]), line(["f1"], ["ana", "raj"])], 1),  # raj may not know f1
        ([line(["f9"], ["leo"])], 1),  # a fact the scenario does not have
        ([{"scenario": "house-and-bonus"}], 1),  # keys missing
    ],
)
def test_composite_violations_are_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lines: list[dict[str, object]], code: int
) -> None:
    path = tmp_path / "replies.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert main([str(path), HOUSE]) == code
    summary = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert summary["replies"] == len(lines) and summary["violations"] == (0 if code == 0 else summary["violations"])
    assert (summary["violations"] > 0) == (code == 1)
