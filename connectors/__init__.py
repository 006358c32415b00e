"""Platform adapters: translate platform events into :class:`Inbound` and send :class:`Outbound`."""

from connectors.base import Action, ChatKind, Connector, Handler, Inbound, KnowsReaders, Outbound, SeenEvents

__all__ = ["Action", "ChatKind", "Connector", "Handler", "Inbound", "KnowsReaders", "Outbound", "SeenEvents"]
