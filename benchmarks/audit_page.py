"""How fast the audit page answers over a large audit: 100k records by default.

The audit is written through the library's own append path (sealed texts, fact references,
ledger lines), in large transactions to save time, from a template of real reply records the
runtime produced over the house-and-bonus example; contacts, platforms, outcomes and days
vary. Then a real ``epmem audit serve`` subprocess answers real HTTP requests over loopback,
and each page is timed end to end (median and p95 of ``--requests`` after warm-up).

    .venv/bin/python -m benchmarks.audit_page --records 100000 --json out/audit_page.json

Run from a checkout: it borrows the test suite's house example.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx

from bot.cli.common import write_json
from bot.log_setup import configure_logging
from epmem.audit.log import AuditLog, AuditRecord
from testkit.house import HOUSE_Q, house_runtime, write_policy
from testkit.runtime import ask

REPO = Path(__file__).resolve().parent.parent
TOKEN = "bench-token"
PLATFORMS = ("telegram", "slack", "console")
CONTACTS = ("leo", "grace", "ana", "ben", "kim", "raj")
QUESTIONS = (HOUSE_Q, "When is the Atlas launch?", "What is Maya training for?", "Did Maya get a bonus?")


async def _templates(folder: Path) -> tuple[dict[str, str], list[tuple[str, dict[str, Any], list[tuple[str, str]]]]]:
    policy = write_policy(folder / "policy.yaml")
    runtime = await house_runtime(folder / "data", policy_file=policy)
    try:
        for who in CONTACTS:
            for q in QUESTIONS:
                await runtime.agent.handle(ask(who, q))
        records = await runtime.audit.records()
        templates = [(r.kind, r.body, [(f, e) for f, e in _disclosed(r)]) for r in records]
    finally:
        await runtime.close()
    env = {"EPMEM_DATA_DIR": str(folder / "data"), "EPMEM_POLICY": str(policy)}
    return env, templates


def _disclosed(r: AuditRecord) -> list[tuple[str, str]]:
    events = {c["fact"]: c["event"] for c in r.body.get("candidates", [])}
    return [(f, events.get(f, f)) for f in r.body.get("disclosed", [])]


async def fill(
    path: Path, templates: list[tuple[str, dict[str, Any], list[tuple[str, str]]]], n: int, seed: int = 7
) -> float:
    """Append ``n`` records through AuditLog.append_in_transaction, 2000 per transaction."""
    rng = random.Random(seed)
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    began = time.perf_counter()
    async with AuditLog(path) as log:
        done = 0
        while done < n:
            async with log.append_lock, log.db.transaction():
                for i in range(done, min(n, done + 2000)):
                    kind, body, disclosed = rng.choice(templates)
                    contact = rng.choice(CONTACTS)
                    b = copy.deepcopy(body)
                    b.update(
                        {
                            "platform": rng.choice(PLATFORMS),
                            "contact": contact,
                            "question": f"{rng.choice(QUESTIONS)} (#{i})",
                        }
                    )
                    moment = start + timedelta(seconds=i * 90)
                    rec = AuditRecord(kind, b, contact=contact, time=moment.isoformat(timespec="milliseconds"))
                    await log.append_in_transaction(rec, disclosed, [contact])
            done = min(n, done + 2000)
    return time.perf_counter() - began


async def more_facts(state_db: Path, n: int, seed: int = 11) -> None:
    """``n`` synthetic facts in the fact register beside the example's (the who-knows page
    reads only its page of them)."""
    from bot.state import StateDB
    from epmem.audit.register import FactRegister
    from epmem.memory.facts import Fact

    rng = random.Random(seed)
    state = await StateDB(state_db).open()
    try:
        register = FactRegister(state.connection)
        facts = await register.all()
        facts += [
            Fact(
                id=f"x{i}",
                text=f"Synthetic fact number {i} about event {i // 3}.",
                event_id=f"ev-x{i // 3}",
                category=rng.choice(("home", "finances", "hobbies", "work_projects")),
                level=rng.randint(0, 4),
                domain=rng.choice((None, "work", "life")),
                state="annotated",
            )
            for i in range(n)
        ]
        await register.sync(facts)
    finally:
        await state.close()


def _serve(env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    full = {**os.environ, **env, "EPMEM_AUDIT_TOKEN": TOKEN, "EPMEM_LOG_LEVEL": "WARNING"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "audit", "serve", "--port", "0"],
        cwd=REPO,
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("audit page: "):
            return proc, line.split(" ", 2)[2].strip()
    raise RuntimeError(proc.stderr.read() if proc.stderr else "audit page did not start")


def _time(client: httpx.Client, url: str, requests: int, headers: dict[str, str]) -> dict[str, float]:
    for _ in range(3):
        client.get(url, headers=headers).raise_for_status()
    ms = []
    for _ in range(requests):
        began = time.perf_counter()
        client.get(url, headers=headers).raise_for_status()
        ms.append((time.perf_counter() - began) * 1000)
    ms.sort()
    return {
        "p50_ms": round(statistics.median(ms), 2),
        "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 2),
        "max_ms": round(ms[-1], 2),
    }


def measure(base: str, requests: int, n: int) -> dict[str, Any]:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    json_h = {**auth, "Accept": "application/json"}
    with httpx.Client(base_url=base, timeout=60) as client:
        began = time.perf_counter()
        while not (first := client.get("/", headers=json_h).json())["chain"]["complete"]:
            time.sleep(0.5)  # the page checks the whole chain once at start, in the background
        chain_s = time.perf_counter() - began
        some_id = first["rows"][0]["id"]
        cases = {
            "timeline": ("/", auth),
            "timeline_json": ("/", json_h),
            "timeline_deep_page": (f"/?before={n // 2}", auth),
            "timeline_contact": ("/?contact=raj", auth),
            "timeline_outcome": ("/?outcome=deflected", auth),
            "timeline_contact_platform_outcome": ("/?contact=ana&platform=slack&outcome=answered", auth),
            "timeline_one_day": ("/?from=2026-02-10&to=2026-02-10", auth),
            "decision": (f"/decision/{some_id}", auth),
            "who_knows": ("/who-knows", auth),
            "who_knows_by_event_page_20": ("/who-knows?by=event&page=20", auth),
            "who_knows_words": ("/who-knows?q=number+77", auth),
        }
        timed: dict[str, Any] = {name: _time(client, url, requests, h) for name, (url, h) in cases.items()}
        return {"chain_check_s": round(chain_s, 1), "chain_ok": first["chain"]["ok"], **timed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--facts", type=int, default=10_000, help="extra facts in the register (who-knows)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    configure_logging("WARNING", "auto")  # the example runtime's lines would bury the result
    with tempfile.TemporaryDirectory() as tmp:
        env, templates = asyncio.run(_templates(Path(tmp)))
        audit_db = Path(env["EPMEM_DATA_DIR"]) / "audit.sqlite"
        fill_s = asyncio.run(fill(audit_db, templates, args.records))
        asyncio.run(more_facts(Path(env["EPMEM_DATA_DIR"]) / "state.sqlite", args.facts))
        proc, base = _serve(env)
        try:
            pages = measure(base, args.requests, args.records)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        size = sum(p.stat().st_size for p in audit_db.parent.glob("audit.sqlite*"))
    chain = {k: pages.pop(k) for k in ("chain_check_s", "chain_ok")}
    result = {
        "benchmark": "audit_page",
        "records": args.records + len(templates),
        "facts": args.facts + 7,
        "requests": args.requests,
        "fill_s": round(fill_s, 1),
        "audit_bytes": size,
        **chain,
        "pages": pages,
        "target_ms": 200,
        "timeline_p50_under_target": pages["timeline"]["p50_ms"] < 200,
        "host": {"python": platform.python_version(), "cpus": os.cpu_count()},
    }
    write_json(result, args.json)


if __name__ == "__main__":
    main()
