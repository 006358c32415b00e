"""Appends from concurrent handlers (Slack runs listeners concurrently) share one connection."""

from __future__ import annotations

import asyncio
from pathlib import Path

from epmem.audit.log import AuditLog


async def test_concurrent_appends_all_land_and_the_chain_verifies(database_target: Path | str) -> None:
    async with AuditLog(database_target) as log:
        records = await asyncio.gather(
            *(
                log.append("reply", {"n": n}, contact=f"c{n % 3}", disclosed=[(f"f{n}", "e")], recipients=[f"c{n % 3}"])
                for n in range(40)
            )
        )
        assert len({r.id for r in records}) == 40
        assert (await log.verify()) == (40, None)
        assert len(await log.who_knows("e")) == 40
