"""The console connector: stdin lines in, replies out. The embedded default's only platform.

It speaks as one identity for the whole session (``console:<contact id>``), so the agent
resolves it exactly like a Telegram or Slack sender. A session as a contact is that contact's
chat: a note meant for the owner ("Heads-up: tom drew 5 deflections ... /audit tom") goes to
``owner_notes`` (the owner's other channels, or kept for them), never into it.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import TextIO

from connectors.base import Action, Handler, Inbound
from epmem.identity import LOCAL

#: the owner's chat on the console (the operator's terminal), as ``epmem run`` attaches it.
OWNER_CHAT = "owner"
#: where a note for the owner goes when the console speaks as somebody else.
OwnerNotes = Callable[[str, tuple[Action, ...]], Awaitable[object]]


class ConsoleConnector:
    #: the library's own local scheme (epmem.identity.LOCAL): the console is not a plugin platform.
    platform = LOCAL.platform

    def __init__(
        self,
        identity: str,
        handler: Handler,
        *,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
        max_chars: int = 4000,
        prompt: str = "",
        owner_notes: OwnerNotes | None = None,
    ) -> None:
        """``owner_notes``: set when this session is not the owner's; without it the console
        is the operator's own terminal and the owner's notes show on stderr."""
        self.identity = identity
        self.owner_notes = owner_notes
        self.handler = handler
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr
        self.max_chars = max_chars
        self.prompt = prompt
        self.rejected = 0
        self._stopped = False

    async def start(self) -> None:
        """Run until end of input (the console has no background mode)."""
        lineno = 0
        while not self._stopped:
            if self.prompt:
                self.stdout.write(self.prompt)
                self.stdout.flush()
            line = await asyncio.to_thread(self.stdin.readline)
            if not line:
                return
            lineno += 1
            await self.handle_line(line.rstrip("\n"), lineno)

    async def handle_line(self, text: str, lineno: int = 0) -> None:
        where = f" (line {lineno})" if lineno else ""
        if not text.strip():
            self.rejected += 1
            self.stderr.write(f"error: empty message{where}: nothing sent\n")
            return
        non_text = None
        if len(text) > self.max_chars:
            self.rejected += 1
            self.stderr.write(
                f"error: message of {len(text)} characters{where} is over the {self.max_chars}-character limit\n"
            )
            text, non_text = text[: self.max_chars], "too_long"
        inbound = Inbound(
            platform=self.platform,
            chat_id=self.identity,
            chat_kind="direct",
            sender=self.identity,
            text=text,
            audience=(self.identity,),
            non_text=non_text,
        )
        out = await self.handler(inbound)
        # buttons belong to the owner's note when there is one (as on Telegram and Slack).
        reply_actions = () if out.to_owner else out.actions
        if out.text is not None:
            self.stdout.write(out.text + "\n")
            for action in reply_actions:
                self.stdout.write(f"  [{action.label}] type: {action.command}\n")
            self.stdout.flush()
        out.delivered()
        if out.to_owner and self.owner_notes is not None:
            await self.owner_notes(out.to_owner, out.actions)
        elif out.to_owner:
            # the console is the operator's own terminal: the owner's notes show on stderr.
            self.stderr.write(f"[to the owner] {out.to_owner}\n")
            for action in out.actions:
                self.stderr.write(f"  [{action.label}] type: {action.command}\n")
            self.stderr.flush()

    async def stop(self) -> None:
        self._stopped = True

    async def send(self, chat_id: str, text: str, actions: tuple[Action, ...] = ()) -> None:
        """To this session's own chat, or the owner's notes (``owner``) on the operator's terminal.
        Another console contact's chat is not open here: ``LookupError``, so a follow-up to them
        is owed until their own session opens (bot/console_followups.py), not shown to whoever
        sits at this terminal."""
        if chat_id not in (self.identity, OWNER_CHAT):
            raise LookupError(f"{chat_id} has no console session open here")
        self.stdout.write(f"[to {chat_id}] {text}\n")
        self.stdout.flush()
