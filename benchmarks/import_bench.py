"""Import throughput and memory on a large Telegram Desktop export, through the real CLI.

Generates a single-chat export of about ``size_mb`` megabytes (benchmarks/telegram_export.py:
one busy chat with no silence long enough to cut a session, the case that used to become one
session and hold everything in memory), runs ``epmem ingest`` on it as a subprocess on a fresh
data folder, and reports:

- ``turns_per_s``: turns written per second of the whole import (process start and the check
  pass included);
- ``check_s``: the first pass, which reads and checks the whole export before anything is
  written; ``write_s``: the second pass (opening the stores, sessions, turns, facts);
- ``peak_rss_mb``: the import process's peak resident memory (ru_maxrss of the child);
- ``sessions``, ``max_session_turns``: how the chat was cut;
- with ``interrupt``: Ctrl-C at that fraction of the facts stage, how long the import took to
  stop, and the re-run that finishes it (its time and what it reported).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.telegram_export import policy_yaml, write_single_chat
from bot.cli.common import write_json

REPO = Path(__file__).resolve().parents[1]
#: bytes a generated message takes in the export, measured on a sample (to hit a size).
_SAMPLE = 2000


def messages_for(size_mb: float, folder: Path) -> int:
    sample = write_single_chat(folder / "sample.json", _SAMPLE)
    per_message = sample.stat().st_size / _SAMPLE
    sample.unlink()
    return max(1, int(size_mb * 1e6 / per_message))


def _ingest(export: Path, env: dict[str, str], interrupt: float | None) -> dict[str, Any]:
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "ingest", str(export)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )
    assert proc.stderr is not None and proc.stdout is not None
    marks: dict[str, float] = {}
    signalled: float | None = None
    for line in proc.stderr:
        now = time.perf_counter() - started
        if line.startswith("checking "):
            marks.setdefault("check_start", now)
        if line.startswith("checked "):
            marks.setdefault("check_end", now)
        if line.startswith("extracting facts:"):
            done, total = map(int, line.split()[2].split("/"))
            if interrupt is not None and signalled is None and done >= interrupt * total:
                proc.send_signal(signal.SIGINT)
                signalled = now
    out = proc.stdout.read()
    code = proc.wait()
    took = time.perf_counter() - started
    result = {"exit": code, "seconds": round(took, 2), "stdout": out.strip().splitlines()}
    if "check_end" in marks:
        result["startup_s"] = round(marks["check_start"], 2)
        result["check_s"] = round(marks["check_end"] - marks["check_start"], 2)
        result["write_s"] = round(took - marks["check_end"], 2)
    if signalled is not None:
        result["stopped_after_ctrl_c_s"] = round(took - signalled, 2)
    return result


def _sessions(env: dict[str, str]) -> tuple[int, int, int, int]:
    """(sessions, longest session in turns, facts, turns), read back from the data folder."""
    code = (
        "import asyncio, json\n"
        "from bot.config import Settings\nfrom bot.runtime import Runtime\n"
        "from epmem.memory.conversations import SESSIONS\n"
        "async def main():\n"
        "    rt = await Runtime.open(Settings())\n"
        "    try:\n"
        "        heads = await rt.store.scroll(SESSIONS)\n"
        "        print(json.dumps([len(heads), max((int(h.payload['turns']) for h in heads), default=0),\n"
        "                          await rt.memory.count(), sum(int(h.payload['turns']) for h in heads)]))\n"
        "    finally:\n"
        "        await rt.close()\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, check=True)
    sessions, longest, facts, turns = json.loads(done.stdout.strip().splitlines()[-1])
    return int(sessions), int(longest), int(facts), int(turns)


def run_import_bench(
    size_mb: float = 50.0, embedder: str = "minilm", interrupt: float | None = None, keep: Path | None = None
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="epmem-import-bench-") as tmp:
        folder = keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        n = messages_for(size_mb, folder)
        export = write_single_chat(folder / "result.json", n, busy=True, confided_every=97)
        policy = folder / "policy.yaml"
        policy.write_text(policy_yaml(contacts=1))
        data = folder / "data"
        env = {
            **os.environ,
            "EPMEM_DATA_DIR": str(data),
            "EPMEM_POLICY": str(policy),
            "EPMEM_LOG_LEVEL": "WARNING",
            "EPMEM_EMBEDDER": embedder,
        }
        first = _ingest(export, env, interrupt)
        out: dict[str, Any] = {
            "export_mb": round(export.stat().st_size / 1e6, 2),
            "messages": n,
            "embedder": embedder,
            "import": first,
        }
        if interrupt is not None:
            out["rerun"] = _ingest(export, env, None)
        peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # the largest import process
        sessions, longest, facts, turns = _sessions(env)
        total_s = first["seconds"] + (out["rerun"]["seconds"] if interrupt is not None else 0.0)
        out.update(
            {
                "sessions": sessions,
                "turns": turns,
                "max_session_turns": longest,
                "facts": facts,
                "turns_per_s": round(turns / total_s, 1),
                "peak_rss_mb": round(peak_kb / 1024, 1),
                "cpus": os.cpu_count(),
            }
        )
        return out


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=50.0)
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--interrupt", type=float, default=None, help="Ctrl-C at this fraction of the facts")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    result = run_import_bench(args.size_mb, args.embedder, args.interrupt)
    write_json(result, args.json)


if __name__ == "__main__":
    main()
