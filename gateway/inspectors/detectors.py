"""The built-in detectors: credentials (the event redaction's patterns), the common PII shapes
(emails, phone numbers, card numbers passing Luhn, IBANs passing mod-97, US social security
numbers) and prompt-injection markers (the pattern tool descriptions are flagged with).

Each detector yields `Span`s of one kind; every pattern is bounded, so a 256 KiB text is scanned
in linear time.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

from gateway.events.redact import CREDENTIAL_PATTERNS
from toolsets.upstream.flags import INJECTION_MARKERS

__all__ = ["DETECTORS", "Detector", "Span", "iban_valid", "luhn_valid"]


@dataclass(frozen=True, slots=True)
class Span:
    """A flagged stretch of one string: ``text[start:end]`` is of ``kind``."""

    kind: str
    start: int
    end: int
    score: float | None = None


Detector = Callable[[str], Iterator[Span]]

_EMAIL: Final = re.compile(
    r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}"
    r"\.[A-Za-z]{2,24}\b"
)
_PHONE: Final = re.compile(
    r"(?<![\w+-])(?:\+\d{1,3}[ .-]?\(?\d{1,4}\)?(?:[ .-]?\d{2,4}){2,4}"
    r"|\(\d{3}\)[ .-]?\d{3}[ .-]\d{4}|\d{3}[.-]\d{3}[.-]\d{4})(?![\w-])"
)
_CARD: Final = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
_IBAN: Final = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")
_SSN: Final = re.compile(r"(?<![\d-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d-])")


def luhn_valid(digits: str) -> bool:
    """Whether ``digits`` (13 to 19 of them) pass the Luhn check card numbers carry."""
    if not 13 <= len(digits) <= 19:
        return False
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def iban_valid(compact: str) -> bool:
    """Whether ``compact`` (an IBAN without spaces) passes the ISO 13616 mod-97 check."""
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(char, 36)) for char in moved)) % 97 == 1


def credentials(text: str) -> Iterator[Span]:
    """Keys and tokens: PEM private keys, bearer tokens, sk-, GitHub, AWS, Slack, Google, JWT."""
    for pattern in CREDENTIAL_PATTERNS:
        for match in pattern.finditer(text):
            yield Span("credential", match.start(), match.end())


def emails(text: str) -> Iterator[Span]:
    if "@" in text:
        for match in _EMAIL.finditer(text):
            yield Span("email", match.start(), match.end())


def phones(text: str) -> Iterator[Span]:
    for match in _PHONE.finditer(text):
        if 7 <= sum(char.isdigit() for char in match[0]) <= 15:
            yield Span("phone", match.start(), match.end())


def cards(text: str) -> Iterator[Span]:
    for match in _CARD.finditer(text):
        if luhn_valid(re.sub(r"[ -]", "", match[0])):
            yield Span("card", match.start(), match.end())


def ibans(text: str) -> Iterator[Span]:
    """IBANs; a match running into following capitals is cut back to its longest valid start."""
    for match in _IBAN.finditer(text):
        raw = match[0]
        ends = [i + 1 for i, char in enumerate(raw) if char != " "]
        compact = raw.replace(" ", "")
        for size in range(len(compact), 14, -1):
            if iban_valid(compact[:size]):
                yield Span("iban", match.start(), match.start() + ends[size - 1])
                break


def national_ids(text: str) -> Iterator[Span]:
    """National id numbers by pattern: US social security numbers (``123-45-6789``)."""
    for match in _SSN.finditer(text):
        yield Span("national-id", match.start(), match.end())


def injections(text: str) -> Iterator[Span]:
    """Prompt-injection markers (``<IMPORTANT>``, "ignore previous instructions", ...)."""
    for match in INJECTION_MARKERS.finditer(text):
        yield Span("prompt-injection", match.start(), match.end())


DETECTORS: Final[dict[str, Detector]] = {
    "credential": credentials,
    "card": cards,
    "iban": ibans,
    "national-id": national_ids,
    "email": emails,
    "phone": phones,
    "prompt-injection": injections,
}
"""Each built-in detector by name, in precedence order: a span overlapping one found by an
earlier detector is dropped (a card number is not also a phone number)."""
