"""Answering as the owner: whether the delegate answers at once, holds the reply, or stays silent.

Some messages are answered from the owner's own account: a customer writing to the owner's
Telegram Business account, a colleague's DM to the owner on Slack (with the owner's user token),
a mention of the owner in a Slack channel. Those words go out *as the owner*, so the owner
chooses, globally and per contact, how the delegate behaves there:

* ``answer``: at once, under the same policy and approval mode as any other reply;
* ``hold``: every reply waits for the owner's ``/approve`` (even one that tells nothing);
* ``silent``: nothing is sent; the message is audited.

Mentions of the owner in channels are answered only once the owner turns them on
(``/delegate mentions on``): a name in a channel is not a message to the owner. The settings
live in the overlay (state database), like approval mode, and every change is audited.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal, cast, get_args

from epmem.policy import Overlay

#: overlay flag holding the settings (a JSON object).
DELEGATE_FLAG = "delegate"

Mode = Literal["answer", "hold", "silent"]
MODES: tuple[Mode, ...] = get_args(Mode)


@dataclass(frozen=True, slots=True)
class DelegateSettings:
    """The owner's choices for replies sent as the owner (see the module doc)."""

    mode: Mode = "answer"
    mentions: bool = False
    #: contact id -> mode, overriding ``mode`` for that contact.
    contacts: dict[str, Mode] = field(default_factory=dict)

    def mode_for(self, contact_id: str) -> Mode:
        return self.contacts.get(contact_id, self.mode)

    def with_contact(self, contact_id: str, mode: Mode | None) -> DelegateSettings:
        contacts = {k: v for k, v in self.contacts.items() if k != contact_id}
        if mode is not None:
            contacts[contact_id] = mode
        return replace(self, contacts=contacts)

    def describe(self) -> str:
        lines = [
            f"Replies sent as you: {self.mode} by default; mentions of you in channels "
            f"{'answered' if self.mentions else 'left alone'}."
        ]
        lines += [f"  {cid}: {mode}" for cid, mode in sorted(self.contacts.items())]
        return "\n".join(lines)

    def as_flag(self) -> dict[str, object]:
        return {"mode": self.mode, "mentions": self.mentions, "contacts": dict(sorted(self.contacts.items()))}

    @classmethod
    def from_flag(cls, value: object) -> DelegateSettings:
        """Settings from the stored flag; anything unreadable falls back to holding for the
        owner (fail closed: nothing goes out as the owner unasked)."""
        if value is None:
            return cls()
        if not isinstance(value, dict):
            return cls(mode="hold")
        mode = value.get("mode", "answer")
        contacts = value.get("contacts") or {}
        if mode not in MODES or not isinstance(contacts, dict) or any(m not in MODES for m in contacts.values()):
            return cls(mode="hold")
        return cls(
            cast(Mode, mode), bool(value.get("mentions", False)), {str(k): cast(Mode, v) for k, v in contacts.items()}
        )


async def load(overlay: Overlay) -> DelegateSettings:
    return DelegateSettings.from_flag(await overlay.get_flag(DELEGATE_FLAG))


async def save(overlay: Overlay, settings: DelegateSettings) -> None:
    await overlay.set_flag(DELEGATE_FLAG, settings.as_flag())
