"""The updates a test enqueues on :class:`~testkit.fake_telegram.FakeTelegram`, as Telegram sends them.

Private texts, group messages (with a mention or a reply), joins and leaves, stickers and
photos, edits, Business connections and messages, and inline-button presses: each builds the
Bot API ``Update`` JSON and queues it for the bot's next ``getUpdates``.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Sequence
from typing import Any

JSONDict = dict[str, Any]


class TelegramUpdates:
    """Mixed into the fake server, whose state (queue, ids, members) these methods fill."""

    bot_username: str
    updates: list[JSONDict]
    chats: dict[int, JSONDict]
    business_connections: dict[str, JSONDict]
    _members: dict[int, dict[int, JSONDict]]
    _update_ids: itertools.count[int]
    _message_ids: itertools.count[int]
    _callback_ids: itertools.count[int]
    _new_update: asyncio.Event

    @staticmethod
    def user(
        user_id: int,
        first_name: str = "User",
        *,
        is_bot: bool = False,
        username: str | None = None,
    ) -> JSONDict:
        """A ``User`` object."""
        out: JSONDict = {"id": user_id, "is_bot": is_bot, "first_name": first_name}
        if username:
            out["username"] = username
        return out

    def enqueue(self, **fields: Any) -> JSONDict:
        """Queue a raw update (``message=...``, ``callback_query=...``); wakes long polls."""
        update: JSONDict = {"update_id": next(self._update_ids), **fields}
        self.updates.append(update)
        self._new_update.set()
        return update

    def _message(self, chat: JSONDict, sender: JSONDict | None, **fields: Any) -> JSONDict:
        self.chats[chat["id"]] = chat
        message: JSONDict = {
            "message_id": next(self._message_ids),
            "date": int(time.time()),
            "chat": chat,
            **fields,
        }
        if sender is not None:
            message["from"] = sender
        return message

    @staticmethod
    def private_chat(user: JSONDict) -> JSONDict:
        return {"id": user["id"], "type": "private", "first_name": user["first_name"]}

    @staticmethod
    def group_chat(chat_id: int, title: str = "Group", chat_type: str = "supergroup") -> JSONDict:
        return {"id": chat_id, "type": chat_type, "title": title}

    def add_member(self, chat_id: int, user: JSONDict) -> None:
        """``user`` is in the chat (for getChatMember / the member count), without any update."""
        self._see_member(chat_id, user)

    def _see_member(self, chat_id: int, user: JSONDict) -> None:
        self._members.setdefault(chat_id, {})[user["id"]] = user

    def private_text(self, user: JSONDict, text: str, **fields: Any) -> JSONDict:
        """A text message in the user's private chat with the bot."""
        chat = self.private_chat(user)
        return self.enqueue(message=self._message(chat, user, text=text, **fields))

    def group_message(
        self,
        chat_id: int,
        user: JSONDict,
        text: str,
        *,
        mention: bool = False,
        reply_to: JSONDict | None = None,
        entities: Sequence[JSONDict] = (),
        chat_type: str = "supergroup",
        title: str = "Group",
    ) -> JSONDict:
        """A group message; ``mention`` prefixes ``@<bot>`` with a mention entity,
        ``reply_to`` makes it a reply to that (e.g. a recorded bot) message."""
        all_entities = list(entities)
        if mention:
            handle = f"@{self.bot_username}"
            text = f"{handle} {text}"
            all_entities = [{"type": "mention", "offset": 0, "length": len(handle)}] + [
                {**e, "offset": e["offset"] + len(handle) + 1} for e in all_entities
            ]
        fields: JSONDict = {"text": text}
        if all_entities:
            fields["entities"] = all_entities
        if reply_to is not None:
            fields["reply_to_message"] = reply_to
        self._see_member(chat_id, user)
        chat = self.group_chat(chat_id, title, chat_type)
        return self.enqueue(message=self._message(chat, user, **fields))

    def new_chat_members(self, chat_id: int, users: Sequence[JSONDict], *, by: JSONDict | None = None) -> JSONDict:
        """The service message Telegram sends when users join (or are added)."""
        for user in users:
            self._see_member(chat_id, user)
        sender = by or users[0]
        return self.enqueue(message=self._message(self.group_chat(chat_id), sender, new_chat_members=list(users)))

    def left_chat_member(self, chat_id: int, user: JSONDict) -> JSONDict:
        """The service message Telegram sends when a user leaves or is removed."""
        self._members.get(chat_id, {}).pop(user["id"], None)
        return self.enqueue(message=self._message(self.group_chat(chat_id), user, left_chat_member=user))

    def sticker(self, user: JSONDict) -> JSONDict:
        """A sticker in the user's private chat."""
        sticker = {
            "file_id": "CAAC-sticker",
            "file_unique_id": "u-sticker",
            "type": "regular",
            "width": 512,
            "height": 512,
            "is_animated": False,
            "is_video": False,
            "emoji": "\N{THUMBS UP SIGN}",
        }
        return self.enqueue(message=self._message(self.private_chat(user), user, sticker=sticker))

    def photo(self, user: JSONDict, caption: str | None = None) -> JSONDict:
        """A photo in the user's private chat."""
        sizes = [
            {"file_id": f"photo-{w}", "file_unique_id": f"u-photo-{w}", "width": w, "height": w} for w in (90, 320)
        ]
        fields: JSONDict = {"photo": sizes}
        if caption is not None:
            fields["caption"] = caption
        return self.enqueue(message=self._message(self.private_chat(user), user, **fields))

    def edited_message(self, user: JSONDict, text: str, message_id: int | None = None) -> JSONDict:
        """An ``edited_message`` update in the user's private chat."""
        message = self._message(self.private_chat(user), user, text=text, edit_date=int(time.time()))
        if message_id is not None:
            message["message_id"] = message_id
        return self.enqueue(edited_message=message)

    def business_connection(
        self,
        connection_id: str,
        owner: JSONDict,
        *,
        is_enabled: bool = True,
        can_reply: bool = True,
    ) -> JSONDict:
        """The owner connected (or disconnected) the bot to their Business account."""
        connection: JSONDict = {
            "id": connection_id,
            "user": owner,
            "user_chat_id": owner["id"],
            "date": int(time.time()),
            "is_enabled": is_enabled,
            "rights": {"can_reply": can_reply, "can_read_messages": True},
        }
        self.business_connections[connection_id] = connection
        return self.enqueue(business_connection=connection)

    def business_message(
        self,
        connection_id: str,
        customer: JSONDict,
        text: str,
        *,
        sender: JSONDict | None = None,
        edited: bool = False,
    ) -> JSONDict:
        """A message in the business chat between the owner and ``customer``; ``sender``
        defaults to the customer (pass the owner for the owner's own message)."""
        message = self._message(
            self.private_chat(customer),
            sender or customer,
            text=text,
            business_connection_id=connection_id,
        )
        if edited:
            message["edit_date"] = int(time.time())
            return self.enqueue(edited_business_message=message)
        return self.enqueue(business_message=message)

    def callback_query(self, presser: JSONDict, message: JSONDict, data: str) -> JSONDict:
        """A press on an inline button of ``message`` (one the bot sent)."""
        query: JSONDict = {
            "id": str(next(self._callback_ids)),
            "from": presser,
            "chat_instance": "ci-1",
            "data": data,
            "message": message,
        }
        return self.enqueue(callback_query=query)
