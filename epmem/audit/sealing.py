"""Erasable text in a hash-chained record: the chain covers a salted digest, not the words.

A record's body is stored as a *skeleton*: every string that can carry a fact's words (the
question, the reply, a held draft, the post-check's evidence, a scheduled command...) is
replaced by a marker ``{"$text": SLOT, "sha256": DIGEST}`` and the string itself goes to the
``audit_text`` table with a random salt. The record's hash covers the skeleton, so erasing the
text (and its salt) later changes nothing the chain covers: ``verify`` still walks every
record, and checks each text that is still there against its digest.

Why a salted digest rather than a plain one: a plain SHA-256 of a short sentence is a
confirmation oracle (anyone who guesses "Sam is pregnant" could check the guess against the
erased record). With a 128-bit salt that is erased together with the text, what is left is a
commitment that says nothing about the words. Why not per-fact encryption keys instead: one
reply can carry the words of several facts, and a question can carry words of facts never
disclosed, so the unit of erasure is the record's text, not a fact; a separate table is that
unit with no key management, and nothing else to lose.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

#: body keys whose string values (or lists of strings) can carry somebody's words.
ERASABLE_KEYS = frozenset({"question", "reply", "draft", "command", "text", "evidence", "notes", "error"})
MARKER = "$text"
SALT_BYTES = 16


@dataclass(frozen=True, slots=True)
class Text:
    """One erasable string of a record: where it sits in the body, its salt and its words."""

    slot: str
    salt: bytes
    text: str

    @property
    def digest(self) -> str:
        return digest(self.salt, self.text)


@dataclass(frozen=True, slots=True)
class Erased:
    """A text that /forget removed: which one, when, by whom, and the chained erasure record."""

    slot: str
    at: str
    by: str
    erasure: str


def digest(salt: bytes, text: str) -> str:
    return hashlib.sha256(salt + text.encode()).hexdigest()


def seal(body: dict[str, Any]) -> tuple[dict[str, Any], list[Text]]:
    """Split a body into its skeleton (what the chain covers) and its erasable texts."""
    texts: list[Text] = []

    def cut(value: Any, path: str, erasable: bool) -> Any:
        if isinstance(value, str) and erasable:
            t = Text(path, os.urandom(SALT_BYTES), value)
            texts.append(t)
            return {MARKER: path, "sha256": t.digest}
        if isinstance(value, dict):
            return {k: cut(v, f"{path}.{k}" if path else k, k in ERASABLE_KEYS) for k, v in value.items()}
        if isinstance(value, list):
            return [cut(v, f"{path}.{i}", erasable) for i, v in enumerate(value)]
        return value

    return cut(body, "", False), texts


def markers(skeleton: Any) -> Iterator[tuple[str, str]]:
    """Every (slot, digest) the skeleton refers to, in body order."""
    if isinstance(skeleton, dict):
        if MARKER in skeleton and set(skeleton) == {MARKER, "sha256"}:
            yield skeleton[MARKER], skeleton["sha256"]
            return
        for v in skeleton.values():
            yield from markers(v)
    elif isinstance(skeleton, list):
        for v in skeleton:
            yield from markers(v)


def unseal(skeleton: Any, texts: dict[str, str | None]) -> Any:
    """The body with each marker replaced by its text; an erased (or missing) text is None."""
    if isinstance(skeleton, dict):
        if MARKER in skeleton and set(skeleton) == {MARKER, "sha256"}:
            return texts.get(skeleton[MARKER])
        return {k: unseal(v, texts) for k, v in skeleton.items()}
    if isinstance(skeleton, list):
        return [unseal(v, texts) for v in skeleton]
    return skeleton


def canonical(record_id: str, time: str, kind: str, contact: str | None, body: Any) -> str:
    """The exact text a record's hash covers (unchanged since the first audit format)."""
    return json.dumps(
        {"id": record_id, "time": time, "kind": kind, "contact": contact, "body": body},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )


def chain_hash(prev_hash: str, canonical_text: str) -> str:
    return hashlib.sha256((prev_hash + canonical_text).encode()).hexdigest()
