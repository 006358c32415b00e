"""The agent's stand-in for connector tests: connectors get the agent's handler as a callable,
so a test hands them this one and reads back what arrived."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from connectors.base import Inbound, Outbound
from testkit.state import OpenState


def echo(inbound: Inbound) -> Outbound:
    return Outbound(text=f"echo: {inbound.text}")


@dataclass
class RecordingHandler:
    """Records every Inbound and answers with ``reply`` (echo by default)."""

    inbounds: list[Inbound] = field(default_factory=list)
    reply: Callable[[Inbound], Outbound] = echo

    async def __call__(self, inbound: Inbound) -> Outbound:
        self.inbounds.append(inbound)
        return self.reply(inbound)

    def texts(self) -> list[str]:
        return [i.text for i in self.inbounds]


class AuditedEcho:
    """Answers every message, with an audit record per reply as the agent writes one
    (``disclose``: each reply tells fact f1, in the ledger, to ``recipient`` or else the asker)."""

    def __init__(self, st: OpenState, disclose: bool = False, recipient: str | None = None) -> None:
        self.st = st
        self.disclose = disclose
        self.recipient = recipient
        self.audit_ids: list[str] = []

    async def __call__(self, inbound: Inbound) -> Outbound:
        facts = [("f1", "e1")] if self.disclose else []
        record = await self.st.audit.append(
            "reply",
            {"question": inbound.text, "disclosed": [f for f, _ in facts]},
            contact=inbound.sender,
            disclosed=facts,
            recipients=[self.recipient or inbound.sender],
        )
        self.audit_ids.append(record.id)
        return Outbound(f"answer to {inbound.text}", audit_id=record.id)
