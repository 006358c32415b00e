"""The agent's stand-in for connector tests: connectors get the agent's handler as a callable,
so a test hands them this one and reads back what arrived."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from connectors.base import Inbound, Outbound


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
