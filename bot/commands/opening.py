"""Leaving a never-share category takes the owner's explicit word, naming what it opens.

A fact filed under credentials (a wifi password) is shut to everyone by rule 0, whatever its
level. One tap on another category in /review, or one /category, would move it to that
category's level: /review d8 c:hobbies made a password L4, "anyone who asks", with no word said
(only the identifier masking happened to save the reply). So such a move is refused until it is
confirmed, and the refusal says who would then be told; the confirmation is the same command with
``confirm`` at the end (a button on Telegram and Slack).
"""

from __future__ import annotations

from collections.abc import Sequence

from connectors.base import Action
from epmem.memory import Fact

from bot.commands.registry import Reply
from bot.services import OwnerServices

CONFIRM = "confirm"


def never_shared(owner: OwnerServices, category: str | None) -> bool:
    cat = owner.policy.categories.get(category or "")
    return cat is not None and cat.never_share


def opens(owner: OwnerServices, category: str, whitelist: Sequence[str] = ()) -> str:
    """Who a fact in ``category`` (or at level 0 with ``whitelist``) could be told, in words."""
    policy = owner.policy
    if whitelist:
        return "only " + ", ".join(whitelist)
    cat = policy.categories[category]
    if cat.level == 0:
        return "nobody but you"
    if cat.level >= 4 and cat.domain is None:
        return "anyone who asks, strangers included"
    names = sorted(
        c.name
        for c in policy.contacts.values()
        if c.level <= cat.level and (cat.domain is None or c.domain == cat.domain)
    )
    if cat.level >= 4:
        names.append(f"strangers asking about {cat.domain} matters")
    return f"{len(names)} of your contacts ({', '.join(names[:8])}{', ...' if len(names) > 8 else ''})"


def needs_confirmation(
    owner: OwnerServices,
    facts: Sequence[Fact],
    to_category: str,
    command: str,
    whitelist: Sequence[str] = (),
    tag: str = "",
) -> Reply | None:
    """A question for the owner when any of ``facts`` would leave a never-share category for
    ``to_category``; None when nothing leaves one (or ``to_category`` is never-share too)."""
    leaving = [f for f in facts if never_shared(owner, f.category)]
    if not leaving or never_shared(owner, to_category) or to_category not in owner.policy.categories:
        return None
    cat = owner.policy.categories[to_category]
    level = 0 if whitelist else cat.level
    ids = ", ".join(f.id for f in leaving)
    frm = ", ".join(sorted({str(f.category) for f in leaving}))
    text = (
        f"{ids} is filed under {frm}, which is never shared with anyone. Moving it to {to_category} "
        f"(L{level}{' ' + cat.domain if cat.domain else ''}) would open it to "
        f"{opens(owner, to_category, whitelist)}. Nothing changed. If that is what you mean, send: "
        f"{command} {CONFIRM}"
    )
    return Reply(text, (Action(f"Yes, open it to {to_category}", f"{command} {CONFIRM}{tag}"),))
