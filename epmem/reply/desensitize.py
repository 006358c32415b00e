"""Masking personal identifiers inside allowed facts before a non-owner's reply is composed.

A fact can be fine to tell ("Ana moved to a flat near the station") while an identifier in it is
not ("... at 14 Mill Lane, call her on +44 20 7946 0958"). docs/DESIGN.md sec. 4: identifiers of third
parties that the recipient may not know are masked even inside allowed facts.

Whose identifier a string is cannot be read reliably from one sentence, so every identifier is
masked (the owner's own too: the fail-closed side), except those the recipient demonstrably
knows because they wrote them in this chat. Phone numbers are found with ``phonenumbers`` (the
libphonenumber port), the rest with patterns; card numbers must pass the Luhn check.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import phonenumbers

DEFAULT_REGIONS = ("US", "GB", "DE", "FR", "ES", "IT", "NL", "SE", "CN", "IN", "BR", "NG", "AU", "CA")

_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,4})?\b")
#: 12-19 digits in groups of 3+ (cards, long account numbers); dates have short groups.
_LONG_NUMBER = re.compile(r"(?<![\w.,])\d{3,}(?:[ -]?\d{3,})+(?![\w]|[.,]\d)|(?<![\w.,])\d{8,}(?![\w]|[.,]\d)")
_ACCOUNT = re.compile(
    r"\b((?:account|acct|a/c|sort code|routing|iban|card|policy|member(?:ship)?|customer|client)"
    r"(?:\s+(?:number|no\.?|num|#|id))?\s*(?:is|was|:|=|#)?\s*)([A-Z0-9][A-Z0-9-]{3,})\b",
    re.IGNORECASE,
)
_CREDENTIAL = re.compile(
    r"\b((?:password|passcode|passphrase|passwd|pin(?:\s+code)?|api[\s_-]?key|access\s+key|secret(?:\s+key)?|"
    r"token|login|2fa\s+code|recovery\s+code)(?:\s+(?:is|was|=|:)|\s*[:=])\s*)(\S+?)(?=[.,;!?)]*(?:\s|$))",
    re.IGNORECASE,
)
_STREET_TYPES = (
    r"Street|St\.?|Road|Rd\.?|Avenue|Ave\.?|Lane|Ln\.?|Drive|Dr\.?|Boulevard|Blvd\.?|Way|Court|Ct\.?|"
    r"Place|Pl\.?|Terrace|Close|Crescent|Square|Sq\.?|Highway|Hwy\.?|Parkway|Pkwy\.?|Row|Mews|Gardens|Hill"
)
_STREET_NUMBER_FIRST = re.compile(
    rf"\b\d{{1,5}}[A-Za-z]?,?\s+(?:[A-Z][\w'’.-]*\s+){{1,4}}(?:{_STREET_TYPES})\b"
    r"(?:,?\s+(?:Apt|Apartment|Flat|Unit|Suite)\.?\s*[\w-]+)?"
)
_STREET_NUMBER_LAST = re.compile(
    r"\b(?:[A-ZÀ-Þ][\w'’.-]*\s+){0,3}[A-ZÀ-Þ][\w'’-]*"
    r"(?i:straße|strasse|gasse|weg|platz|allee|gatan|vägen|gränd|straat|laan|gracht|vej|gade|veien)"
    r"\s+\d{1,5}[A-Za-z]?\b"
    r"|\b(?i:rue|calle|via|avenida|rua)\s+(?:[\w'’-]+\s+){0,3}\d{1,5}\b",
)


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


@dataclass(frozen=True, slots=True)
class Masked:
    text: str
    kinds: tuple[str, ...] = field(default=())


class Desensitizer:
    """Masks identifiers in text; ``known`` strings (the recipient's own words) are kept."""

    def __init__(self, regions: Sequence[str] = DEFAULT_REGIONS) -> None:
        self.regions = tuple(regions)

    def mask(self, text: str, known: Iterable[str] = ()) -> Masked:
        known_text = " ".join(known)
        known_digits = {re.sub(r"\D", "", m) for m in re.findall(r"[\d][\d\s().+-]{5,}\d", known_text)}
        kinds: list[str] = []

        def keep(found: str) -> bool:
            if found and found in known_text:
                return True
            digits = re.sub(r"\D", "", found)
            return len(digits) >= 6 and digits in known_digits

        def sub(
            pattern: re.Pattern[str], label: str, text: str, group: int = 0, accept: Callable[[str], bool] | None = None
        ) -> str:
            def repl(m: re.Match[str]) -> str:
                found = m.group(group)
                if keep(found) or (accept is not None and not accept(found)):
                    return m.group(0)
                kinds.append(label)
                if group == 0:
                    return f"[{label} withheld]"
                return m.group(0)[: m.start(group) - m.start(0)] + f"[{label} withheld]"

            return pattern.sub(repl, text)

        text = sub(_CREDENTIAL, "credential", text, group=2)
        text = sub(_EMAIL, "email", text)
        text = self._phones(text, keep, kinds)
        text = sub(_IBAN, "account number", text)
        text = sub(
            _LONG_NUMBER,
            "card number",
            text,
            accept=lambda s: 13 <= len(re.sub(r"\D", "", s)) <= 19 and _luhn(re.sub(r"\D", "", s)),
        )
        text = sub(_LONG_NUMBER, "account number", text)
        text = sub(_ACCOUNT, "account number", text, group=2, accept=lambda s: any(c.isdigit() for c in s))
        text = sub(_STREET_NUMBER_FIRST, "address", text)
        text = sub(_STREET_NUMBER_LAST, "address", text)
        return Masked(text, tuple(kinds))

    def _phones(self, text: str, keep: Callable[[str], bool], kinds: list[str]) -> str:
        spans: list[tuple[int, int]] = []
        for region in (None, *self.regions):
            leniency = phonenumbers.Leniency.POSSIBLE if region is None else phonenumbers.Leniency.VALID
            for match in phonenumbers.PhoneNumberMatcher(text, region, leniency=leniency):
                if region is None and not match.raw_string.lstrip().startswith("+"):
                    continue
                if keep(match.raw_string):
                    continue
                span = (match.start, match.end)
                if not any(s <= span[0] < e or s < span[1] <= e for s, e in spans):
                    spans.append(span)
        for start, end in sorted(spans, reverse=True):
            text = text[:start] + "[phone number withheld]" + text[end:]
            kinds.append("phone number")
        return text


def mask_facts(
    facts: Sequence[str], known: Iterable[str] = (), desensitizer: Desensitizer | None = None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Mask each fact; returns the masked texts and the kinds of identifier masked (for audit)."""
    d = desensitizer or Desensitizer()
    known = list(known)
    out: list[str] = []
    kinds: list[str] = []
    for fact in facts:
        masked = d.mask(fact, known)
        out.append(masked.text)
        kinds.extend(masked.kinds)
    return tuple(out), tuple(kinds)
