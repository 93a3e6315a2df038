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
# The patterns below start with a character class, so `re` skips ahead to candidates quickly;
# what must not precede a match is checked in `_alone` (a lookbehind first costs ~50 ms/256 KiB).
_PHONE_RUN: Final = re.compile(r"[+(\d][\d ().+-]{6,24}")
_PHONE: Final = re.compile(
    r"(?:\+\d{1,3}[ .-]?\(?\d{1,4}\)?(?:[ .-]?\d{2,4}){2,4}"
    r"|\(\d{3}\)[ .-]?\d{3}[ .-]\d{4}|\d{3}[.-]\d{3}[.-]\d{4})(?![\w-])"
)
_DIGIT_RUN: Final = re.compile(r"\d(?:[ -]?\d)*+")
_GROUP: Final = re.compile(r"\d+")
_IBAN: Final = re.compile(r"[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")
_SSN: Final = re.compile(r"\d{3}-\d{2}-\d{4}(?![\d-])")
_INJECTION_WORDS: Final = ("important", "system", "instruction", "ignore", "do not", "before using")
"""Every injection marker holds one of these (lower case): texts with none are not scanned."""


_DOUBLED: Final = (0, 2, 4, 6, 8, 1, 3, 5, 7, 9)
"""Each digit doubled, its digits summed (Luhn)."""


def _alone(text: str, start: int, before: str) -> bool:
    """Whether the match at ``start`` is not preceded by a word character or one of ``before``."""
    if start == 0:
        return True
    previous = text[start - 1]
    return not (previous.isalnum() or previous == "_" or previous in before)


def luhn_valid(digits: str) -> bool:
    """Whether ``digits`` (13 to 19 of them) pass the Luhn check card numbers carry."""
    if not 13 <= len(digits) <= 19:
        return False
    backwards = digits[::-1]
    doubled = sum(_DOUBLED[int(char)] for char in backwards[1::2])
    return (sum(map(int, backwards[0::2])) + doubled) % 10 == 0


def iban_valid(compact: str) -> bool:
    """Whether ``compact`` (an IBAN without spaces) passes the ISO 13616 mod-97 check."""
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(char, 36)) for char in moved)) % 97 == 1


_INSPECTED: Final = tuple(p for p in CREDENTIAL_PATTERNS if not p.pattern.startswith("/connect/"))
"""The credential patterns but lockgate's own connect links (``/connect/v1.…``): a held call's
result hands its caller the link to open (bound to them, single-use); records still mask it."""


def credentials(text: str) -> Iterator[Span]:
    """Keys and tokens: PEM private keys, bearer tokens, sk-, GitHub, AWS, Slack, Google, JWT."""
    for pattern in _INSPECTED:
        for match in pattern.finditer(text):
            yield Span("credential", match.start(), match.end())


def emails(text: str) -> Iterator[Span]:
    if "@" in text:
        for match in _EMAIL.finditer(text):
            yield Span("email", match.start(), match.end())


def phones(text: str) -> Iterator[Span]:
    """Phone numbers: international (``+44 20 7946 0958``) or North American shapes, 7 to 15
    digits, looked for only in runs of phone characters."""
    for run in _PHONE_RUN.finditer(text):
        for match in _PHONE.finditer(run[0]):
            start, end = run.start() + match.start(), run.start() + match.end()
            if end < len(text) and (text[end].isalnum() or text[end] in "_-"):
                continue
            if _alone(text, start, "+-") and 7 <= sum(c.isdigit() for c in match[0]) <= 15:
                yield Span("phone", start, end)


def cards(text: str) -> Iterator[Span]:
    """Card numbers: 13 to 19 digits (in groups split by single spaces or dashes) passing Luhn.

    A longer run of digit groups (a table of numbers) is searched group by group, so no digit
    run costs more than a few Luhn checks per group."""
    for run in _DIGIT_RUN.finditer(text):
        if run.end() - run.start() < 13 or not _alone(text, run.start(), "-"):
            continue
        body = run[0]
        groups = [(m.start(), m.end()) for m in _GROUP.finditer(body)]
        index = 0
        while index < len(groups):
            found = _card_at(body, groups, index)
            if found is None:
                index += 1
                continue
            last = found
            yield Span("card", run.start() + groups[index][0], run.start() + groups[last][1])
            index = last + 1


def _card_at(run: str, groups: list[tuple[int, int]], first: int) -> int | None:
    """The last group of a Luhn-valid card number starting at group ``first``, if any."""
    size = 0
    for index in range(first, len(groups)):
        size += groups[index][1] - groups[index][0]
        if size > 19:
            return None
        if size >= 13:
            digits = "".join(run[start:end] for start, end in groups[first : index + 1])
            if luhn_valid(digits):
                return index
    return None


def ibans(text: str) -> Iterator[Span]:
    """IBANs; a match running into following capitals is cut back to its longest valid start."""
    for match in _IBAN.finditer(text):
        if not _alone(text, match.start(), ""):
            continue
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
        area, group, serial = match[0].split("-")
        valid = area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"
        if valid and _alone(text, match.start(), "-"):
            yield Span("national-id", match.start(), match.end())


def injections(text: str) -> Iterator[Span]:
    """Prompt-injection markers (``<IMPORTANT>``, "ignore previous instructions", ...)."""
    lowered = text.lower()
    if not any(word in lowered for word in _INJECTION_WORDS):
        return
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
