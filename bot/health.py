"""The running bot's health: which platforms are connected and whether the stores answer.

``epmem run`` probes its own parts every ``EVERY_S`` seconds and writes the result to
``DATA/health.json`` (atomically); ``epmem health`` reads it and exits 0 only when the report is
fresh and everything in it answered. A file rather than a port: the embedded vector store is
locked to the bot's process, so only the bot can ask it; Docker's ``HEALTHCHECK`` runs a command
inside the container anyway; and nothing new listens on the network.

A report older than ``STALE_S`` means the bot stopped probing (stopped, hung or killed): not
healthy, whatever the report said then.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import structlog

log = structlog.get_logger(__name__)

FILE = "health.json"
EVERY_S = 30.0
STALE_S = 3 * EVERY_S
PROBE_TIMEOUT_S = 10.0


async def _answers(probe: Callable[[], Awaitable[object]]) -> str:
    """ "ok", or what went wrong, in a few words (an exception's type and message, no traceback)."""
    try:
        await asyncio.wait_for(probe(), PROBE_TIMEOUT_S)
    except TimeoutError:
        return f"no answer in {PROBE_TIMEOUT_S:.0f} s"
    except Exception as exc:  # a probe must report, never raise
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    return "ok"


@dataclass(slots=True)
class Probes:
    """What the service checks: its connectors (started, by platform) and its stores."""

    platforms: Callable[[], dict[str, bool]]
    stores: dict[str, Callable[[], Awaitable[object]]]

    async def report(self) -> dict[str, Any]:
        platforms = {name: "connected" if up else "not connected" for name, up in self.platforms().items()}
        stores = {name: await _answers(probe) for name, probe in self.stores.items()}
        ok = (
            bool(platforms)
            and all(v == "connected" for v in platforms.values())
            and all(v == "ok" for v in stores.values())
        )
        return {
            "ok": ok,
            "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "epoch": time.time(),
            "pid": os.getpid(),
            "platforms": platforms,
            "stores": stores,
        }


def write(path: Path, report: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(report, indent=2) + "\n")
    os.replace(tmp, path)


async def keep_reporting(probes: Probes, path: Path, every_s: float = EVERY_S) -> None:
    """Until cancelled: probe, write, sleep."""
    while True:
        try:
            report = await probes.report()
            await asyncio.to_thread(write, path, report)
            if not report["ok"]:
                log.warning("health.not_ok", platforms=report["platforms"], stores=report["stores"])
        except Exception as exc:  # the bot goes on answering even if its report cannot be written
            log.warning("health.write_failed", error=type(exc).__name__)
        await asyncio.sleep(every_s)


def mark_stopped(path: Path) -> None:
    """On a clean stop: the report says so (``epmem health`` then fails, as it should)."""
    try:
        report = json.loads(path.read_text())
        report.update(ok=False, stopped=True, epoch=time.time())
        write(path, report)
    except (OSError, ValueError):
        pass


def read(path: Path, now: float | None = None, stale_s: float = STALE_S) -> tuple[bool, list[str]]:
    """(healthy, one line per part) from the report at ``path``."""
    try:
        report = json.loads(path.read_text())
    except FileNotFoundError:
        return False, [f"no health report at {path}: is `epmem run` running on this data folder?"]
    except (OSError, ValueError) as exc:
        return False, [f"cannot read the health report {path}: {exc}"]
    age = (now if now is not None else time.time()) - float(report.get("epoch") or 0)
    lines = [f"{name}: {state}" for name, state in sorted((report.get("platforms") or {}).items())]
    lines += [f"{name} store: {state}" for name, state in sorted((report.get("stores") or {}).items())]
    fresh = age <= stale_s
    if report.get("stopped"):
        lines.append(f"the bot stopped ({report.get('time')})")
    elif not fresh:
        lines.append(f"the report is {age:.0f} s old (the bot writes one every {EVERY_S:.0f} s): it stopped reporting")
    return bool(report.get("ok")) and fresh and not report.get("stopped"), lines


def problems(lines: Sequence[str]) -> list[str]:
    """The lines that say something is wrong."""
    return [line for line in lines if not line.endswith((": ok", ": connected"))]
