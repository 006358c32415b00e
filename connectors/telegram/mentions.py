"""Whether a group message addresses the bot, and its text without the bot's name in it.

A person addresses the bot in a group by ``@bot`` (or a text mention), by ``/cmd@bot``, or by
replying to one of its messages; the agent reads the text with those references taken out
(``/cmd@bot`` becomes ``/cmd``), offsets counted in UTF-16 as Telegram counts them.
"""

from __future__ import annotations

from telegram import Bot, Message, MessageEntity

from connectors.telegram.text import remove_utf16_spans, tidy, utf16_len


def addressed_to(message: Message, bot: Bot) -> bool:
    """Mentioned by username (or text mention), ``/cmd@bot``, or a reply to the bot."""
    entities = message.parse_entities() if message.text is not None else message.parse_caption_entities()
    if any(refers_to(entity, part, bot) for entity, part in entities.items()):
        return True
    replied = message.reply_to_message
    author = replied.from_user if replied is not None else None
    return author is not None and author.id == bot.id


def refers_to(entity: MessageEntity, part: str, bot: Bot) -> bool:
    """Whether an entity names this bot: ``@bot``, a text mention, or ``/cmd@bot``."""
    handle = f"@{bot.username}".lower()
    if entity.type == MessageEntity.MENTION:
        return part.lower() == handle
    if entity.type == MessageEntity.TEXT_MENTION:
        return entity.user is not None and entity.user.id == bot.id
    if entity.type == MessageEntity.BOT_COMMAND:
        return part.lower().endswith(handle)
    return False


def strip_self_references(message: Message, bot: Bot) -> str:
    """The text without mentions of the bot and with ``/cmd@bot`` shortened to ``/cmd``."""
    text = message.text or ""
    handle_size = utf16_len(f"@{bot.username}")
    spans: list[tuple[int, int]] = []
    for entity, part in message.parse_entities().items():
        if not refers_to(entity, part, bot):
            continue
        if entity.type == MessageEntity.BOT_COMMAND:  # keep the command, drop "@bot"
            spans.append((entity.offset + entity.length - handle_size, handle_size))
        else:
            spans.append((entity.offset, entity.length))
    if not spans:
        return text
    return tidy(remove_utf16_spans(text, spans))
