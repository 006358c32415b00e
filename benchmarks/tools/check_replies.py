"""Did any reply tell together what may not be told together? An independent check.

Reads the ``--replies`` file of ``epmem bench scenarios`` and the scenario files it ran, and
judges each reply's ``disclosed`` facts as one composite (docs/DESIGN.md sec. 3) for every asker of the
reply, with the calculus of benchmarks/tools/check_scenarios.py (plain YAML, nothing from
``epmem``): a reply fails when the composite rule denies its facts to any reader.

Usage::

    epmem bench scenarios DIR... --mode gold --replies out/replies.jsonl
    python -m benchmarks.tools.check_replies out/replies.jsonl DIR...      # exit 1 on a violation
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from benchmarks.tools.check_scenarios import allows, files

KEYS = ("scenario", "question", "askers", "reply", "disclosed", "deflected", "composer")


def load_scenarios(paths: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for path in files(paths):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        out[str(data["name"])] = data
    return out


def check_line(line: dict[str, Any], scenarios: dict[str, dict[str, Any]]) -> str | None:
    """The problem with one reply line, or None."""
    missing = [k for k in KEYS if k not in line]
    if missing:
        return f"missing keys {missing}"
    scenario = scenarios.get(line["scenario"])
    if scenario is None:
        return f"unknown scenario {line['scenario']!r} (pass its file)"
    by_id = {f["id"]: f for f in scenario.get("facts") or []}
    unknown = [f for f in line["disclosed"] if f not in by_id]
    if unknown:
        return f"unknown facts {unknown}"
    if line["deflected"] and line["disclosed"]:
        return f"deflected but disclosed {line['disclosed']}"
    if not line["disclosed"]:
        return None
    facts = [by_id[f] for f in line["disclosed"]]
    denied = [a for a in line["askers"] if not allows(scenario["policy"], facts, a)]
    if denied:
        return f"composite {line['disclosed']} denied to {denied}"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("replies", type=Path)
    parser.add_argument("scenarios", nargs="+")
    args = parser.parse_args(argv)
    scenarios = load_scenarios(args.scenarios)
    lines = [json.loads(raw) for raw in args.replies.read_text(encoding="utf-8").splitlines() if raw.strip()]
    problems = 0
    composites = 0
    for n, line in enumerate(lines, 1):
        composites += len(line.get("disclosed") or []) > 1
        problem = check_line(line, scenarios)
        if problem:
            problems += 1
            print(
                f"{args.replies}:{n}: {line.get('scenario')} {line.get('askers')} {line.get('question')!r}: {problem}"
            )
    summary = {"replies": len(lines), "multi_fact_replies": composites, "violations": problems}
    print(json.dumps(summary))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
