"""Message text as Telegram counts it: UTF-16 lengths, mention removal, splitting, attachments.

Telegram measures texts and entity offsets in UTF-16 code units, so a Python ``len`` or slice
misplaces every offset after an emoji; everything here works on UTF-16 where it matters.
"""

from __future__ import annotations

from collections.abc import Iterable

from telegram import Message
from telegram.constants import MessageAttachmentType

#: Telegram refuses message texts longer than this (counted in UTF-16 code units).
MESSAGE_MAX_UTF16 = 4096

#: attachment kinds in the order they are checked (an animation also carries a document,
#: a venue also carries a location), reported to the agent as ``Inbound.non_text``.
_ATTACHMENT_KINDS: tuple[str, ...] = (
    MessageAttachmentType.STICKER,
    MessageAttachmentType.ANIMATION,
    MessageAttachmentType.PHOTO,
    MessageAttachmentType.VOICE,
    MessageAttachmentType.VIDEO_NOTE,
    MessageAttachmentType.VIDEO,
    MessageAttachmentType.AUDIO,
    MessageAttachmentType.DOCUMENT,
    MessageAttachmentType.CONTACT,
    MessageAttachmentType.VENUE,
    MessageAttachmentType.LOCATION,
    MessageAttachmentType.POLL,
    MessageAttachmentType.DICE,
    MessageAttachmentType.GAME,
    MessageAttachmentType.STORY,
    MessageAttachmentType.INVOICE,
    MessageAttachmentType.PAID_MEDIA,
    MessageAttachmentType.SUCCESSFUL_PAYMENT,
    MessageAttachmentType.PASSPORT_DATA,
)


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def remove_utf16_spans(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """Cut (offset, length) spans out of ``text``; offsets count UTF-16 code units."""
    encoded = text.encode("utf-16-le")
    for offset, length in sorted(spans, reverse=True):
        encoded = encoded[: offset * 2] + encoded[(offset + length) * 2 :]
    return encoded.decode("utf-16-le")


def tidy(text: str) -> str:
    """Collapse the double spaces a removed mention leaves behind; keep line breaks."""
    lines = [" ".join(line.split()) for line in text.splitlines()]
    return "\n".join(lines).strip()


def chunk_text(text: str, limit: int = MESSAGE_MAX_UTF16) -> list[str]:
    """Split ``text`` into pieces Telegram accepts, preferring line breaks and spaces."""
    chunks: list[str] = []
    rest = text
    while utf16_len(rest) > limit:
        cut = 0
        used = 0
        for i, ch in enumerate(rest):
            used += 2 if ord(ch) > 0xFFFF else 1
            if used > limit:
                break
            cut = i + 1
        window = rest[:cut]
        split = max(window.rfind("\n"), window.rfind(" "))
        if split > cut // 2:
            cut = split + 1
        chunks.append(rest[:cut])
        rest = rest[cut:]
    if rest:
        chunks.append(rest)
    return chunks


def attachment_kind(message: Message) -> str:
    """What a text-less message carries (``sticker``, ``photo``...), for ``non_text``."""
    for kind in _ATTACHMENT_KINDS:
        if getattr(message, str(kind), None):
            return str(kind)
    return "unsupported"
