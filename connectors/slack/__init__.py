"""The Slack connector: Bolt events in, the agent's :class:`~connectors.base.Inbound` out, and
back. Modules: ``app`` (lifecycle, Bolt wiring, sending), ``events`` (which events are
questions), ``audience`` (who reads a channel reply: privacy-critical), ``delivery`` (paced,
retried posts), ``delegate`` (answering as the owner, never over the owner; followed threads),
``ids``, ``blocks`` and ``config``."""

from connectors.slack.app import SlackConnector, SlackStartError
from connectors.slack.audience import MemberSource, SlackAudience
from connectors.slack.blocks import ACTION_ID_PATTERN, ACTION_ID_PREFIX, build_blocks
from connectors.slack.config import SlackConfig, SlackPacing
from connectors.slack.ids import PLATFORM, UNKNOWN_MEMBERS, ChatRef, identity

__all__ = [
    "ACTION_ID_PATTERN",
    "ACTION_ID_PREFIX",
    "PLATFORM",
    "UNKNOWN_MEMBERS",
    "ChatRef",
    "MemberSource",
    "SlackAudience",
    "SlackConfig",
    "SlackConnector",
    "SlackPacing",
    "SlackStartError",
    "build_blocks",
    "identity",
]
