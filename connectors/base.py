"""The one shape every platform is translated into, and the reply that comes back.

Connectors never import ``bot/``: they receive the agent's handler as a plain callable, so a
platform adapter can be tested against any handler and the agent never learns which platform
a message came from beyond the identity strings.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

import structlog

ChatKind = Literal["direct", "group"]
#: a message answered *as the owner* (from the owner's own account), and how it reached the owner:
#: ``dm`` someone wrote to the owner directly (Telegram Business, Slack with the owner's user
#: token); ``mention`` someone named the owner in a channel.
Delegation = Literal["dm", "mention"]
#: what a delivery was: the answer to an inbound message, a note for the owner, or a message
#: sent outside a reply (an approved reply, a digest).
DeliveryKind = Literal["reply", "owner_note", "message"]


@dataclass(frozen=True, slots=True)
class Inbound:
    """One message for the agent.

    ``sender`` and ``audience`` are platform identities such as ``telegram:123456789``,
    ``slack:T0123/U0456`` or ``console:alice``; never display names, which anyone can set.
    ``audience`` lists everyone who will read the reply (the sender included); in a direct
    chat it is just the sender.
    """

    platform: str
    chat_id: str
    chat_kind: ChatKind
    sender: str
    text: str
    audience: tuple[str, ...] = ()
    message_id: str | None = None
    sender_display_name: str | None = None
    time: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    #: why this message has no usable text (``sticker``, ``photo``, ``too_long``...), or None.
    non_text: str | None = None
    #: set when the reply will be sent as the owner (see :data:`Delegation`).
    delegation: Delegation | None = None
    #: who the platform confirmed was in the chat when this message was sent (heard it from
    #: you): never a placeholder, never someone merely seen before. None: the platform could
    #: not say, and only the sender counts. ``audience`` errs the other way (never shorter
    #: than the truth), so it must not stand in for this.
    present: tuple[str, ...] | None = None

    def readers(self) -> tuple[str, ...]:
        """Everyone who will see the reply; the sender is always among them."""
        if self.sender in self.audience:
            return self.audience
        return (self.sender, *self.audience)


@dataclass(frozen=True, slots=True)
class Action:
    """A button offered with a reply (approve / edit / reject on a held reply)."""

    label: str
    command: str
    #: the buttons of one thing among several in a message (a note about several events: one
    #: group per event) share a group, and a connector keeps each group together, apart from
    #: the others (a row on Telegram, an actions block on Slack); None: no groups.
    group: int | None = None


_T = TypeVar("_T")


def grouped_runs(items: Sequence[_T], groups: Sequence[int | None], most: int) -> list[list[_T]]:
    """``items`` (one per action, ``groups`` their :attr:`Action.group`) cut into runs for
    display, a row of buttons or an actions block: a new run where the group changes or the
    run already holds ``most``."""
    runs: list[list[_T]] = []
    for i, item in enumerate(items):
        if runs and groups[i] == groups[i - 1] and len(runs[-1]) < most:
            runs[-1].append(item)
        else:
            runs.append([item])
    return runs


@dataclass(frozen=True, slots=True)
class Outbound:
    """The agent's answer. ``text`` None means: stay silent."""

    text: str | None
    audit_id: str | None = None
    #: replies to the owner about a held message carry buttons; connectors render them natively.
    actions: tuple[Action, ...] = ()
    #: a message the agent wants delivered to the owner as well (approval requests, abuse notes).
    to_owner: str | None = None
    #: what the agent does only once the reply is out (it looks for what to consult the owner
    #: about: nothing the asker may not know may delay the reply). A connector calls
    #: :meth:`delivered` once it has handed the reply to the platform (or failed to); one that
    #: never does gets no consultations, which fails closed.
    after: Callable[[], None] | None = field(default=None, compare=False, repr=False)

    def delivered(self) -> None:
        """The reply has been handed to the platform (or could not be): run ``after``."""
        if self.after is not None:
            self.after()


Handler = Callable[[Inbound], Awaitable[Outbound]]
#: what a connector calls with a person's platform identity when that person installed the app
#: for themselves (``on_install``) or took it away again, revoking what they granted
#: (``on_uninstall``: the host erases what it keeps for that owner, as ``/forget`` does, and
#: audits it). Called once per person; an exception is logged by the connector, never retried.
PersonHook = Callable[[str], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class DeliveryReport:
    """What became of one message a connector tried to send.

    ``text`` is carried only when the message was not delivered, so the host can keep it
    (nothing is dropped silently); ``error`` is a short code, never a message body.
    ``unknown`` (with ``delivered`` False): the platform may have received it all the same (a
    timeout after sending, a long message cut half way); its reader may have read it.
    """

    platform: str
    chat_id: str
    kind: DeliveryKind
    delivered: bool
    attempts: int
    audit_id: str | None = None
    error: str | None = None
    text: str | None = None
    unknown: bool = False


class SeenEvents(Protocol):
    """Which platform events were already handled, kept across restarts and shared by workers.

    A platform that redelivers events (Slack retries a slow acknowledgement) asks this before
    answering. ``bot/`` provides it, in the state database it owns; a connector never opens a
    database of its own.
    """

    async def first_time(self, platform: str, event_id: str) -> bool:
        """Claim ``event_id``: True the first time anyone asks, False for a redelivery."""
        ...


class PlatformState(SeenEvents, Protocol):
    """Everything a connector keeps, provided by whoever runs it (``bot/`` keeps it in the
    state database): connectors open no database of their own.

    * ``first_time`` (:class:`SeenEvents`): event dedup, so a redelivered event is answered once;
    * ``route`` / ``save_route``: small JSON documents a connector must find again after a
      restart (a Business connection, a thread it answered); ``None`` deletes;
    * ``report``: the outcome of a delivery; an undelivered message is kept and the owner told.
    """

    async def route(self, platform: str, key: str) -> dict[str, Any] | None: ...

    async def save_route(self, platform: str, key: str, value: dict[str, Any] | None) -> None: ...

    async def report(self, report: DeliveryReport) -> None: ...


class Connector(Protocol):
    """What ``bot/`` needs from a running platform adapter."""

    platform: str

    async def start(self) -> None:
        """Begin receiving events (polling, webhook or socket); returns once running."""
        ...

    async def stop(self) -> None:
        """Stop receiving and release network resources; safe to call twice."""
        ...

    async def send(self, chat_id: str, text: str, actions: tuple[Action, ...] = ()) -> None:
        """Deliver a message the agent decided on outside a reply (digest, approved reply)."""
        ...


class Front(Protocol):
    """One platform client shared by several owners' connectors (one bot for everyone): it
    receives for all of them and hands each event to its owner's connector, which then runs
    without receiving anything itself. Started after those connectors, stopped before them."""

    platform: str

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


@runtime_checkable
class KnowsWhatItSent(Protocol):
    """A connector that can look up whether one of its messages went out (a platform whose
    history the bot may read): a reply in flight when the process died is then sent once, or
    recorded as delivered, instead of kept as "maybe" (bot/inflight.py)."""

    async def was_sent(self, chat_id: str, text: str, since: datetime) -> bool | None:
        """True: posted there since ``since``; False: not; None: cannot tell."""
        ...


@runtime_checkable
class KnowsReaders(Protocol):
    """A connector that can say who reads one of its group chats now. A consultation's
    follow-up in a group is decided for them when it is sent (bot/consultations/flow.py); without it a
    group question does not consult the owner."""

    async def readers(self, chat_id: str, sender: str) -> tuple[str, ...]:
        """Everyone who would read a message sent to ``chat_id`` now (platform identities,
        ``sender`` first, an unknown member as a stranger); ValueError for a chat it does not
        know how to read."""
        ...


@contextmanager
def request_context(platform: str, **values: object) -> Iterator[str]:
    """A fresh logging context for one platform update, cleared again when it is handled.

    PTB handles updates one after another in one task, so anything bound for one update would
    otherwise stick to the next; the agent keeps the request id bound here, so every line
    about one message, connector's and agent's alike, carries the same id.
    """
    request_id = uuid.uuid4().hex[:12]
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(request_id=request_id, platform=platform, **values)
    try:
        yield request_id
    finally:
        structlog.contextvars.clear_contextvars()
