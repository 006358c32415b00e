"""Secrets a text holds: a password-shaped token, or a code, PIN or password named and given."""

from __future__ import annotations

import re


#: a password-like token (letters, digits and a symbol) or "user / secret" written out.
_CREDENTIAL = re.compile(
    r"(?<!\S)(?![A-Z]{0,3}[$€£¥]\d)(?=[^\s]*[A-Za-z])(?=[^\s]*\d)(?=[^\s]*[!@#$%^&*?~+=|])[^\s,;]{7,}(?=[,;.!?)]*(?:\s|$))"
    r"|\b[\w.-]{3,}\s*/\s*(?=[^\s]*\d)[^\s]{6,}",
)


def credential_shaped(text: str) -> bool:
    """Whether the text holds something shaped like a password or a login pair."""
    return bool(_CREDENTIAL.search(text)) and not re.search(r"https?://", text)


#: a word that names a secret, then (within a few words) a token with a digit in it: "the
#: portone code at the new flat is 2718B", "alarm code changed, it's 5836", "PIN 4471".
_SECRET_NAMED = re.compile(
    r"(?<![\w])(?:pass(?:word|code|phrase|wd)|pin|code|combination|login|wifi|wi-fi|key)s?\b"
    r"[^.!?\n]{0,40}?(?<![\w])(?!\d+(?:st|nd|rd|th)\b)(?=[\w-]*\d)[\w-]{3,}(?![\w])",
    re.IGNORECASE,
)
_SECRET_NAMED_ZH = re.compile(
    r"(?:密码|口令|验证码|门禁码|密碼|驗證碼|门禁|開門碼|开门码)[^。！？\n]{0,12}?[A-Za-z0-9]{3,}"
)


def holds_secret(text: str) -> bool:
    """Whether the text holds a secret someone could use: a password-shaped token, or a code,
    PIN or password named and given ("the door code is 2718B"). Such words are never told back
    to the people who heard them (heard it from you), whatever category the policy gives them:
    a leaked code opens a door, and the policy's credential keywords cannot list every word for
    one."""
    return credential_shaped(text) or bool(_SECRET_NAMED.search(text)) or bool(_SECRET_NAMED_ZH.search(text))
